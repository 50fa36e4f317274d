"""Seats as rows, step 2 of 3: every duel's players become seat rows (1 and 2 from the
duel's columns, 3 to 6 from ``DuelPlayer``), each duel names its game, and every match
keeps its scores and seats as lists (rows recorded before games of more than two had
them only in ``player_1_score``/``player_2_score`` and ``first_player``).

Its own migration, as 0023: PostgreSQL will not alter a table with this one's pending
foreign-key checks, so the columns go in 0027."""

from django.db import migrations

#: What a duel kept of players 1 and 2 in ``player_<n>_<field>`` columns.
FIELDS = ("wins", "score", "errors", "restarts", "log")
BATCH = 2000


def _ranks(scores):  # type: ignore[no-untyped-def]
    """As ``referee.results.ranks_from_scores``, which pages computed from the scores."""
    return [1 + sum(1 for other in scores if other > score) for score in scores]


def seats_from_columns(apps, schema_editor):  # type: ignore[no-untyped-def]
    Duel = apps.get_model("core", "Duel")
    DuelPlayer = apps.get_model("core", "DuelPlayer")
    DuelSeat = apps.get_model("core", "DuelSeat")
    more: dict[int, list] = {}
    for player in DuelPlayer.objects.order_by("duel_id", "number").iterator(chunk_size=BATCH):
        more.setdefault(player.duel_id, []).append(player)
    duels = Duel.objects.select_related("revision_1__competitor").order_by("pk")
    seats = []
    for duel in duels.iterator(chunk_size=BATCH):
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
        seats += rows
        if len(seats) >= BATCH:
            DuelSeat.objects.bulk_create(seats)
            seats = []
    DuelSeat.objects.bulk_create(seats)
    # Every duel's game is its first player's.
    environments = {}
    for duel, environment in Duel.objects.values_list(
        "pk", "revision_1__competitor__environment_id"
    ).iterator(chunk_size=BATCH):
        environments.setdefault(environment, []).append(duel)
    for environment, ids in environments.items():
        for start in range(0, len(ids), BATCH):
            Duel.objects.filter(pk__in=ids[start : start + BATCH]).update(
                environment_id=environment
            )


def match_lists_from_columns(apps, schema_editor):  # type: ignore[no-untyped-def]
    Match = apps.get_model("core", "Match")
    changed = []
    fields = ("pk", "first_player", "seat_players", "scores", "player_1_score", "player_2_score")
    for match in Match.objects.only(*fields).order_by("pk").iterator(chunk_size=BATCH):
        if match.scores and match.seat_players:
            continue
        if not match.scores:
            match.scores = [match.player_1_score, match.player_2_score]
        if not match.seat_players:
            match.seat_players = [1, 2] if match.first_player == 1 else [2, 1]
        changed.append(match)
        if len(changed) >= BATCH:
            Match.objects.bulk_update(changed, ["scores", "seat_players"])
            changed = []
    Match.objects.bulk_update(changed, ["scores", "seat_players"])


def columns_from_seats(apps, schema_editor):  # type: ignore[no-untyped-def]
    """Back: players 1 and 2 to the duel's columns, 3 to 6 to ``DuelPlayer``."""
    Duel = apps.get_model("core", "Duel")
    DuelPlayer = apps.get_model("core", "DuelPlayer")
    DuelSeat = apps.get_model("core", "DuelSeat")
    players = []
    for seat in DuelSeat.objects.order_by("duel_id", "number").iterator(chunk_size=BATCH):
        values = {field: getattr(seat, field) for field in FIELDS}
        if seat.number <= 2:
            Duel.objects.filter(pk=seat.duel_id).update(
                **{f"revision_{seat.number}_id": seat.revision_id},
                **{f"player_{seat.number}_{field}": value for field, value in values.items()},
            )
        else:
            players.append(
                DuelPlayer(
                    duel_id=seat.duel_id,
                    number=seat.number,
                    revision_id=seat.revision_id,
                    **values,
                )
            )
    DuelPlayer.objects.bulk_create(players, batch_size=BATCH)
    DuelSeat.objects.all().delete()


def match_columns_from_lists(apps, schema_editor):  # type: ignore[no-untyped-def]
    Match = apps.get_model("core", "Match")
    changed = []
    for match in Match.objects.order_by("pk").iterator(chunk_size=BATCH):
        match.player_1_score, match.player_2_score = match.scores[:2]
        changed.append(match)
    Match.objects.bulk_update(changed, ["player_1_score", "player_2_score"], batch_size=BATCH)


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0025_duel_seats"),
    ]

    operations = [
        migrations.RunPython(seats_from_columns, columns_from_seats),
        migrations.RunPython(match_lists_from_columns, match_columns_from_lists),
    ]
