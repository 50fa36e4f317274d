"""Seats as rows, step 2 of 3: every duel's players become seat rows (1 and 2 from the
duel's columns, 3 to 6 from ``DuelPlayer``), each duel names its game, and every match
keeps its scores and seats as lists (rows recorded before games of more than two had
them only in ``player_1_score``/``player_2_score`` and ``first_player``).

Its own migration, as 0023: PostgreSQL will not alter a table with this one's pending
foreign-key checks, so the columns go in 0027."""

from django.db import migrations
from django.db.models import OuterRef, Subquery

#: What a duel kept of players 1 and 2 in ``player_<n>_<field>`` columns.
FIELDS = ("wins", "score", "errors", "restarts", "log")
#: Rows read and written at once: a big table is never held in memory whole.
BATCH = 1000


def _batches(queryset, *fields):
    """The rows in batches by id (a keyset, not a cursor: the table is written between
    reads), with only ``fields``."""
    last = 0
    while True:
        batch = list(queryset.filter(pk__gt=last).order_by("pk").only("pk", *fields)[:BATCH])
        if not batch:
            return
        yield batch
        last = batch[-1].pk


def _ranks(scores):
    """As ``referee.results.ranks_from_scores``, which pages computed from the scores."""
    return [1 + sum(1 for other in scores if other > score) for score in scores]


def seats_from_columns(apps, schema_editor):
    Duel = apps.get_model("core", "Duel")
    DuelPlayer = apps.get_model("core", "DuelPlayer")
    DuelSeat = apps.get_model("core", "DuelSeat")
    Revision = apps.get_model("core", "Revision")
    columns = [f"player_{number}_{field}" for number in (1, 2) for field in FIELDS]
    fields = ("revision_1_id", "revision_2_id", "result", "num_players", *columns)
    for duels in _batches(Duel.objects.all(), *fields):
        more: dict[int, list] = {}
        for player in DuelPlayer.objects.filter(duel__in=[duel.pk for duel in duels]).order_by(
            "duel_id", "number"
        ):
            more.setdefault(player.duel_id, []).append(player)
        seats, recounted = [], []
        for duel in duels:
            rows = [
                DuelSeat(
                    duel_id=duel.pk,
                    number=number,
                    revision_id=getattr(duel, f"revision_{number}_id"),
                    **{field: getattr(duel, f"player_{number}_{field}") for field in FIELDS},
                )
                for number in (1, 2)
            ]
            rows += [
                DuelSeat(
                    duel_id=duel.pk,
                    number=player.number,
                    revision_id=player.revision_id,
                    **{field: getattr(player, field) for field in FIELDS},
                )
                for player in more.get(duel.pk, [])
            ]
            if duel.result not in ("", "ERROR"):
                for row, rank in zip(rows, _ranks([row.score for row in rows]), strict=True):
                    row.rank = rank
            if duel.num_players != len(rows):
                # A player's row went missing: the duel has the players it has.
                duel.num_players = len(rows)
                recounted.append(duel)
            seats += rows
        DuelSeat.objects.bulk_create(seats)
        Duel.objects.bulk_update(recounted, ["num_players"])
    # Every duel's game is its first player's.
    Duel.objects.update(
        environment_id=Subquery(
            Revision.objects.filter(pk=OuterRef("revision_1_id")).values(
                "competitor__environment_id"
            )[:1]
        )
    )


def match_lists_from_columns(apps, schema_editor):
    """Rows recorded before games of more than two: their lists from the columns."""
    Match = apps.get_model("core", "Match")
    fields = ("first_player", "seat_players", "scores", "player_1_score", "player_2_score")
    for matches in _batches(Match.objects.all(), *fields):
        changed = []
        for match in matches:
            if match.scores and match.seat_players:
                continue
            if not match.scores:
                match.scores = [match.player_1_score, match.player_2_score]
            if not match.seat_players:
                match.seat_players = [1, 2] if match.first_player == 1 else [2, 1]
            changed.append(match)
        Match.objects.bulk_update(changed, ["scores", "seat_players"])


def columns_from_seats(apps, schema_editor):
    """Back: players 1 and 2 to the duel's columns, 3 to 6 to ``DuelPlayer``."""
    Duel = apps.get_model("core", "Duel")
    DuelPlayer = apps.get_model("core", "DuelPlayer")
    DuelSeat = apps.get_model("core", "DuelSeat")
    columns = [f"player_{number}_{field}" for number in (1, 2) for field in FIELDS]
    for duels in _batches(Duel.objects.all(), "revision_1_id", "revision_2_id", *columns):
        by_id = {duel.pk: duel for duel in duels}
        players = []
        for seat in DuelSeat.objects.filter(duel__in=list(by_id)).order_by("duel_id", "number"):
            values = {field: getattr(seat, field) for field in FIELDS}
            if seat.number <= 2:
                duel = by_id[seat.duel_id]
                setattr(duel, f"revision_{seat.number}_id", seat.revision_id)
                for field, value in values.items():
                    setattr(duel, f"player_{seat.number}_{field}", value)
            else:
                players.append(
                    DuelPlayer(
                        duel_id=seat.duel_id,
                        number=seat.number,
                        revision_id=seat.revision_id,
                        **values,
                    )
                )
        Duel.objects.bulk_update(duels, ["revision_1_id", "revision_2_id", *columns])
        DuelPlayer.objects.bulk_create(players)
    DuelSeat.objects.all().delete()


def match_columns_from_lists(apps, schema_editor):
    Match = apps.get_model("core", "Match")
    for matches in _batches(Match.objects.all(), "scores"):
        for match in matches:
            scores = [*match.scores, 0.0, 0.0]
            match.player_1_score, match.player_2_score = scores[:2]
        Match.objects.bulk_update(matches, ["player_1_score", "player_2_score"])


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0025_duel_seats"),
    ]

    operations = [
        migrations.RunPython(seats_from_columns, columns_from_seats),
        migrations.RunPython(match_lists_from_columns, match_columns_from_lists),
    ]
