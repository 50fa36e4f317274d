"""A round robin of short duels, timed end to end on a fresh site, as an organizer runs one.

    python -m bench.bench_round_robin                       # embedded default, this checkout
    python -m bench.bench_round_robin --stack compose       # docker-compose.yml of its HEAD
    python -m bench.bench_round_robin --baseline c3688c6    # an older checkout first, then this
    python -m bench.bench_round_robin --rounds 5 --agents 16 --matches 10
    python -m bench.bench_round_robin --quick               # 3 agents, 2-match duels, 1 round
    python -m bench.bench_round_robin --json PATH

For each checkout (``--baseline``, a folder or a git revision in a temporary worktree, then
``--candidate``, this folder by default), a fresh site of it (``bench_soak``'s sites: the
embedded default served by ``manage.py run_gateway --manager`` from the checkout's folder,
or the compose stack built from a clone of its HEAD) is given ``--agents`` Connect Four
agents (the random and kaggle-style example players, alternately: cheap moves, so that
what is timed is the platform), which its own workers build and validate. Then
``--rounds`` round robins of all of them, one after another, each of ``--matches``-match
duels (Connect Four's default is 10), each launched as an organizer launches one and
timed until it has completed:

wall
    From the tournament's start to its end, as the site recorded them (its clock).
duels/min
    Its duels over that wall.
CPU per duel
    The machine's busy CPU time (``/proc/stat``: the site, its workers, the agents, and
    for compose the containers) from the launch until the completion was seen, per duel.
duel job
    Each duel's job, median: waiting in the queue (created to started) and running (started
    to ended, the agents' start-up and every match included).

The site's code is only reached through ``manage.py shell`` of the checkout and its public
API, so that an older checkout runs as it was. ``bench_jobs`` times a round robin too, in
one process with its tasks run at once and heavier agents: the platform's own code; this
one is what an organizer waits for, the site's broker, workers and sandboxes included.
A figure is the median of the rounds, the range in brackets; the candidate's over the
baseline's is the last column.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import functools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.bench_soak import ComposeSite, EmbeddedSite, stack_option
from bench.cli import run_bench
from bench.support import (
    PLAYERS,
    Checkout,
    checkout_prepare,
    machine,
    machine_summary,
    wait_until,
)

ENVIRONMENT = "connect_four"
OWNER_EMAIL = "round-robin@example.org"
#: The cheap example players the agents alternate between.
SOURCES = {
    "random": PLAYERS / "random_player.py",
    "kaggle-style": PLAYERS / "kaggle_style.py",
}
#: How long the uploads may take to be built and validated, and a round robin to complete.
VALIDATION_TIMEOUT = 1800.0
ROUND_TIMEOUT = 3600.0


@dataclasses.dataclass(frozen=True)
class Plan:
    agents: int
    matches: int
    rounds: int


FULL = Plan(agents=16, matches=10, rounds=3)
QUICK = Plan(agents=3, matches=2, rounds=1)


def agents(count: int) -> dict[str, str]:
    """``count`` agents by name (``random-1``, ``kaggle-style-2``, ...): their ``main.py``."""
    kinds = list(SOURCES)
    chosen = {}
    for index in range(count):
        kind = kinds[index % len(kinds)]
        chosen[f"{kind}-{index + 1}"] = SOURCES[kind].read_text()
    return chosen


# --- what runs on the site, by its checkout's ``manage.py shell`` ---------------------------

UPLOAD = """
import json
from core.models import Environment, User
from core.services.accounts import user_create
from core.services.environments import environments_import
from core.services.revisions import competitor_get_or_create, revision_create

environments_import()
# The benchmark times its own tournaments: the games' standing ladders would play beside.
Environment.objects.update(standing_competition=False)
owner = User.objects.filter(email=EMAIL).first() or user_create(
    email=EMAIL, display_name="Round robin", password="a round robin password 2026"
)
environment = Environment.objects.get(name=ENVIRONMENT)
for name, source in AGENTS.items():
    competitor = competitor_get_or_create(
        owner=owner, environment=environment, name=name, is_public=True
    )
    revision_create(
        competitor=competitor, uploaded_by=owner, filename="main.py", content=source.encode()
    )
print(json.dumps(len(AGENTS)))
"""

VALIDATED = """
import json
from core.models import Job, JobStatus, Revision

revisions = Revision.objects.filter(competitor__environment__name=ENVIRONMENT)
failed = Job.objects.filter(revision__in=revisions, status=JobStatus.FAILED)
print(json.dumps({
    "validated": revisions.validated().count(),
    "failed": [f"{job.revision}: {job.kind}: {job.error[:300]}" for job in failed],
}))
"""

LAUNCH = """
import json
from core.models import Environment, Revision
from tournament_manager.services.tournaments import tournament_create, tournament_launch

environment = Environment.objects.get(name=ENVIRONMENT)
tournament = tournament_create(
    environment=environment,
    name=NAME,
    revisions=list(Revision.objects.validated().filter(competitor__environment=environment)),
    matches_per_duel=MATCHES,
)
tournament = tournament_launch(tournament=tournament)
print(json.dumps({"id": tournament.pk, "duels": tournament.duels_total}))
"""

PLAYED = """
import json
from core.models import Duel, Match, Tournament

tournament = Tournament.objects.get(pk=ID)
duels = list(Duel.objects.filter(tournament=tournament).select_related("job"))
jobs = [duel.job for duel in duels]
print(json.dumps({
    "started_at": tournament.started_at.isoformat(),
    "ended_at": tournament.ended_at.isoformat(),
    "duels": len(duels),
    "succeeded": sum(duel.status == "succeeded" for duel in duels),
    "matches": Match.objects.filter(duel__tournament=tournament).count(),
    "waits": [(job.started_at - job.created_at).total_seconds() for job in jobs if job.started_at],
    "runs": [
        (job.ended_at - job.started_at).total_seconds()
        for job in jobs
        if job.started_at and job.ended_at
    ],
}))
"""


def site_code(template: str, **values: Any) -> str:
    """``template`` with ``values`` (and the environment's and owner's names) assigned first."""
    values = {"ENVIRONMENT": ENVIRONMENT, "EMAIL": OWNER_EMAIL, **values}
    return "".join(f"{name} = {value!r}\n" for name, value in values.items()) + template


# --- the run ----------------------------------------------------------------------------


def busy_cpu_seconds() -> float:
    """The machine's CPU time spent busy since boot (every core), from ``/proc/stat``."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def _completed(site: EmbeddedSite | ComposeSite, tournament_id: int) -> bool:
    """Whether the site's API says the tournament has completed."""
    return bool(site.api(f"/tournaments/{tournament_id}")["status"] == "completed")


@contextlib.contextmanager
def _site(stack: str, checkout: Checkout, report: Callable[[str], None]) -> Iterator[Any]:
    site = (EmbeddedSite if stack == "embedded" else ComposeSite)({}, report, root=checkout.path)
    try:
        if isinstance(site, EmbeddedSite):
            site.start(join=False)
        else:
            site.start()
        yield site
    finally:
        site.close()


def measure_checkout(
    plan: Plan, *, stack: str, checkout: Checkout, report: Callable[[str], None]
) -> dict[str, Any]:
    """The rounds on a fresh site of ``checkout``."""
    with _site(stack, checkout, report) as site:
        set_up = time.monotonic()
        site.shell(site_code(UPLOAD, AGENTS=agents(plan.agents)))

        def validated() -> bool:
            state = site.shell(site_code(VALIDATED))
            if state["failed"]:
                failures = "\n".join(state["failed"])
                raise SystemExit(f"bench_round_robin: uploads failed:\n{failures}")
            return bool(state["validated"] >= plan.agents)

        wait_until(
            f"{plan.agents} agents built and validated",
            validated,
            timeout=VALIDATION_TIMEOUT,
            every=3,
        )
        report(
            f"{checkout.role}: {plan.agents} agents built and validated in "
            f"{time.monotonic() - set_up:.0f} s"
        )
        rounds = []
        for number in range(1, plan.rounds + 1):
            before = busy_cpu_seconds()
            launched = site.shell(
                site_code(LAUNCH, NAME=f"Round robin {number}", MATCHES=plan.matches)
            )
            wait_until(
                f"round robin {number} to complete",
                functools.partial(_completed, site, launched["id"]),
                timeout=ROUND_TIMEOUT,
                every=0.5,
            )
            cpu = busy_cpu_seconds() - before
            played = site.shell(site_code(PLAYED, ID=launched["id"]))
            rounds.append(_round_figures(played, cpu, plan))
            report(
                f"{checkout.role}, round {number}: {played['duels']} duels in "
                f"{rounds[-1]['wall_seconds']:.1f} s, {rounds[-1]['cpu_per_duel']:.2f} CPU-s a duel"
            )
    return {"checkout": checkout.figures(), "rounds": rounds, "summary": _summary(rounds)}


def _round_figures(played: dict[str, Any], cpu: float, plan: Plan) -> dict[str, Any]:
    started = datetime.datetime.fromisoformat(played["started_at"])
    ended = datetime.datetime.fromisoformat(played["ended_at"])
    wall = (ended - started).total_seconds()
    duels = played["duels"]
    if played["succeeded"] != duels or played["matches"] != duels * plan.matches:
        raise SystemExit(
            f"bench_round_robin: a round robin did not play cleanly: {played['succeeded']} of "
            f"{duels} duels succeeded, {played['matches']} matches"
        )
    return {
        "duels": duels,
        "matches": played["matches"],
        "wall_seconds": round(wall, 2),
        "duels_per_minute": round(60 * duels / wall, 1),
        "cpu_per_duel": round(cpu / duels, 3),
        "duel_wait_median": round(statistics.median(played["waits"]), 3),
        "duel_run_median": round(statistics.median(played["runs"]), 3),
        "load": round(os.getloadavg()[0], 2),
    }


#: The figures of a round, as the table names them.
TITLES = {
    "wall_seconds": "wall (s)",
    "duels_per_minute": "duels/min",
    "cpu_per_duel": "CPU-s per duel",
    "duel_wait_median": "duel queued (s, median)",
    "duel_run_median": "duel ran (s, median)",
}


def _summary(rounds: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    return {
        name: {
            "median": statistics.median(r[name] for r in rounds),
            "min": min(r[name] for r in rounds),
            "max": max(r[name] for r in rounds),
        }
        for name in TITLES
    }


def measure(
    plan: Plan,
    *,
    stack: str,
    baseline: str | None,
    candidate: str,
    report: Callable[[str], None],
) -> dict[str, Any]:
    began = time.monotonic()
    measured = []
    with contextlib.ExitStack() as stack_of_checkouts:
        folder = Path(tempfile.mkdtemp(prefix="arena-bench-round-robin-"))
        stack_of_checkouts.callback(lambda: folder.rmdir() if folder.exists() else None)
        roles = [("baseline", baseline)] if baseline else []
        for role, spec in [*roles, ("candidate", candidate)]:
            checkout = checkout_prepare(role, spec, folder, stack_of_checkouts)
            report(f"{role}: {checkout.commit} {checkout.subject[:70]}")
            measured.append(measure_checkout(plan, stack=stack, checkout=checkout, report=report))
    return {
        "benchmark": "bench_round_robin",
        "date": datetime.date.today().isoformat(),
        "machine": machine_summary(machine()),
        "stack": stack,
        "plan": dataclasses.asdict(plan),
        "checkouts": measured,
        "wall_seconds": round(time.monotonic() - began, 1),
    }


def table(figures: dict[str, Any]) -> str:
    plan, checkouts = figures["plan"], figures["checkouts"]
    duels = checkouts[-1]["rounds"][0]["duels"]
    lines = [
        f"A round robin of {plan['agents']} Connect Four agents ({duels} duels of "
        f"{plan['matches']} matches) on the {figures['stack']} stack, {plan['rounds']} "
        f"rounds ({figures['date']}; {figures['machine']})",
        "",
        "| figure | "
        + " | ".join(f"{c['checkout']['role']} ({c['checkout']['commit']})" for c in checkouts)
        + (" | candidate / baseline |" if len(checkouts) == 2 else " |"),
        "| --- " + "| ---: " * len(checkouts) + ("| ---: |" if len(checkouts) == 2 else "|"),
    ]
    for name, title in TITLES.items():
        cells = []
        for checkout in checkouts:
            figure = checkout["summary"][name]
            cells.append(f"{figure['median']:g} ({figure['min']:g}-{figure['max']:g})")
        ratio = ""
        if len(checkouts) == 2:
            before = checkouts[0]["summary"][name]["median"]
            after = checkouts[1]["summary"][name]["median"]
            ratio = f" | x{after / before:.2f}" if before else " | -"
        lines.append(f"| {title} | " + " | ".join(cells) + ratio + " |")
    return "\n".join(lines)


def _options(parser: argparse.ArgumentParser) -> None:
    stack_option(parser)
    parser.add_argument("--baseline", help="a folder or git revision measured first")
    parser.add_argument("--candidate", default=".", help="a folder or git revision (this one)")


def main(argv: list[str] | None = None) -> int:
    return run_bench(
        argv,
        sys.modules[__name__],
        quick_help="3 agents, 2-match duels, 1 round",
        plan_options={
            "agents": "agents in the round robin (16)",
            "matches": "matches a duel (10)",
            "rounds": "round robins, one after another (3)",
        },
        plan_refusal=lambda plan: (
            "a round robin needs two agents, a match a duel and a round"
            if plan.agents < 2 or plan.matches < 1 or plan.rounds < 1
            else None
        ),
        add_options=_options,
    )


if __name__ == "__main__":
    raise SystemExit(main())
