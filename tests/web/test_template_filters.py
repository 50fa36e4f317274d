"""The formatting filters and tags the templates share (``web.templatetags.arena``)."""

from __future__ import annotations

from types import SimpleNamespace

from django.template import engines


def rendered(source: str, **context: object) -> str:
    return engines["django"].from_string("{% load arena %}" + source).render(context)


def test_it_shows_a_missing_value_as_a_dash_in_every_formatting_filter():
    for name in ("seconds", "score", "ago", "percent", "action"):
        assert rendered(f"{{{{ value|{name} }}}}", value=None) == "—"


def test_it_still_formats_a_value_that_is_there():
    assert rendered("{{ value|seconds }}", value=0.5) == "500 ms"
    assert rendered("{{ value|score }}", value=2.5) == "2.5"
    assert rendered("{{ value|percent }}", value=0.125) == "12.5 %"


TABLE = (
    '{% rows_table rows empty="Nothing yet." kind="leaderboard" %}'
    "<tbody>{% for row in rows %}<tr><td>{{ row }}</td></tr>{% endfor %}</tbody>"
    "{% endrows_table %}"
)


def test_it_wraps_a_table_of_rows_to_scroll_sideways():
    assert rendered(TABLE, rows=["<a>", "b"]) == (
        '<div class="table-wrap"><table class="table leaderboard">'
        "<tbody><tr><td>&lt;a&gt;</td></tr><tr><td>b</td></tr></tbody></table></div>"
    )


def test_it_says_the_empty_sentence_in_place_of_a_table_without_rows():
    assert rendered(TABLE, rows=[]) == '<p class="empty">Nothing yet.</p>'


def test_it_marks_a_private_object_and_nothing_else():
    private, public = SimpleNamespace(is_public=False), SimpleNamespace(is_public=True)

    assert rendered("{{ item|private_badge }}", item=private) == (
        ' <span class="badge badge-muted">private</span>'
    )
    assert rendered("{{ item|private_badge }}", item=public) == ""
