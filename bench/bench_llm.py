"""LLM players: what the harness adds to a move on top of the model's server, and whether a
worker playing many LLM duels in threads keeps its other duels' speed.

    python -m bench.bench_llm               # full run, about 5 minutes
    python -m bench.bench_llm --quick       # smoke run (a test runs it)
    python -m bench.bench_llm --json figures.json
    python -m bench.bench_llm --profile     # where the harness's time goes (cProfile)

The model's server is ``llm.local_server`` with its rule-based brain, in a process of its
own (``python -m bench.bench_llm --serve DELAY``), as a real model's server is: its work
never shares this process's interpreter lock with the referees measured here.

overhead
    What the harness adds to a move, reported, no longer a target (issue 22): a model
    answers in 100 ms to minutes, so a millisecond of client code is noise, and the
    harness sends with the official ``openai`` client. Tic-tac-toe duels, the LLM seat
    (``sandboxes.llm``, temperature 0) against the example random player in the
    ``process`` sandbox, with the clock LLM duels get (``llm_clock``). Per LLM move: the
    time the referee measures (request sent to reply read, ``MatchRecord.timings``), and
    in the same round the same server's latency for the same request (the same messages
    and sampling settings), asked by a bare client: one raw HTTP/1.1 POST with
    ``stream: true``, the whole SSE answer read to its end, on a kept-alive connection.
    The difference is what the harness adds: the referee's socket relay, prompt
    building, the HTTP client (``llm.provider``), records. The LLM seat's own records
    split it (the harness's time for the move, the client's time for the request), and a
    second bare pass, opening a new connection per request, shows what reconnecting
    costs.
load
    In this process, as in one worker: ``duels`` tic-tac-toe duels of two LLM seats
    (temperatures 0 and 0.6) at once in a thread pool, against a server that waits a
    while before each answer (a model thinking: 20 ms, then 0.5 s), while another
    thread plays hosted Connect Four duels between two example random players in the
    ``process`` sandbox. The hosted duels' moves per second (moves over the summed match
    durations) alone (before and after) and during the LLM duels, in the same round;
    the LLM duels' completion (all finished, none in error, no fault), wall time and
    moves per second, and the CPU time they took in this process (the hosted referee
    thread's own left out) and in the server. A control in each round: the same LLM
    duels in another process (``--llm-duels``), sharing the machine's cores with the
    hosted duel but not its interpreter.
"""

from __future__ import annotations

import concurrent.futures
import cProfile
import dataclasses
import datetime
import io
import json
import os
import pstats
import random
import resource
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from bench.cli import run_bench
from bench.support import (
    RANDOM_PLAYER,
    REPOSITORY,
    machine,
    machine_summary,
    process_cpu_seconds,
)

SDK_PATH = REPOSITORY / "sdk"
if str(SDK_PATH) not in sys.path:  # running from a checkout without installing the SDK
    sys.path.insert(0, str(SDK_PATH))

from environments.registry import load_info, make_environment  # noqa: E402
from llm.config import LLMConfig  # noqa: E402
from llm.harness import Harness  # noqa: E402
from llm.local_server import MODEL, LocalLLMServer, Reply, rule_based  # noqa: E402
from referee.duel import run_duel  # noqa: E402
from referee.duel_settings import llm_clock  # noqa: E402
from referee.results import DuelResult, Outcome  # noqa: E402
from sandboxes.base import AgentSource  # noqa: E402
from sandboxes.llm import LLMSandbox  # noqa: E402
from sandboxes.process import ProcessSandbox  # noqa: E402

TIC_TAC_TOE_RANDOM = REPOSITORY / "example_players" / "tic_tac_toe" / "random_player.py"
#: A hosted duel counts as not slowed down when it keeps this share of its speed alone.
TARGET_HOSTED_RATIO = 0.9
HOSTED_DUEL_MATCHES = 10


@dataclasses.dataclass(frozen=True)
class Plan:
    #: Rounds of the overhead measurement, each one duel and its two bare passes.
    rounds: int
    #: Matches of each overhead duel (about 3.5 LLM moves each).
    matches: int
    #: Rounds of each load measurement.
    load_rounds: int
    #: LLM duels at once.
    duels: int
    #: The load measurements: (seconds the server waits before each answer, matches of
    #: each LLM duel).
    loads: tuple[tuple[float, int], ...]
    #: Seconds the hosted duels are measured alone in each load round (and again after).
    alone_seconds: float


FULL = Plan(
    rounds=5,
    matches=60,
    load_rounds=3,
    duels=50,
    # The test server (an answer in 20 ms: the harness's own cost dominates), and
    # a model closer to real ones (half a second an answer).
    loads=((0.02, 10), (0.5, 2)),
    alone_seconds=5.0,
)
QUICK = Plan(rounds=1, matches=2, load_rounds=1, duels=3, loads=((0.02, 1),), alone_seconds=0.5)


# --- the model's server, in a process of its own -----------------------------------------


@dataclasses.dataclass(frozen=True)
class ThinkingBrain:
    """The rule-based brain, answering after ``delay`` seconds (a model at work)."""

    delay: float

    def __call__(self, request: dict[str, Any]) -> Reply:
        return dataclasses.replace(rule_based(request), delay=self.delay)


def _serve(delay: float) -> int:
    """The server side: ``LocalLLMServer`` until stdin closes; its URL on stdout."""
    with LocalLLMServer(ThinkingBrain(delay)) as server:
        print(server.url, flush=True)
        sys.stdin.read()
    return 0


class ServerProcess:
    """``python -m bench.bench_llm --serve DELAY``: the rule-based server, another process."""

    def __init__(self, delay: float = 0.0) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.bench_llm", "--serve", str(delay)],
            cwd=REPOSITORY,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()
        if not self.url:
            raise RuntimeError(f"the model's server exited with {self.process.wait()}")

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()


# --- the bare client ------------------------------------------------------------------------


class BareClient:
    """The least a client can do: one ``sendall`` per request, the SSE answer read to the
    end of its chunked body, nothing parsed."""

    def __init__(self, url: str, *, keep_alive: bool) -> None:
        parts = urlsplit(url)
        self.address = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.path = parts.path.rstrip("/") + "/chat/completions"
        self.keep_alive = keep_alive
        self._connection: socket.socket | None = None

    def _connect(self) -> socket.socket:
        connection = socket.create_connection(self.address)
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return connection

    def ask(self, body: bytes) -> float:
        """Seconds from sending ``body`` to the end of the answer."""
        started = time.monotonic()
        connection = self._connection or self._connect()
        connection.sendall(
            f"POST {self.path} HTTP/1.1\r\nHost: {self.address[0]}:{self.address[1]}\r\n"
            "Content-Type: application/json\r\nAuthorization: Bearer bench\r\n"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        answer = b""
        while not answer.endswith(b"\r\n0\r\n\r\n"):
            chunk = connection.recv(1 << 16)
            if not chunk:
                raise RuntimeError(f"the server closed the connection: {answer[-300:]!r}")
            answer += chunk
            if self.keep_alive:
                # A server that writes each event on its own without TCP_NODELAY (the
                # local server did until issue 12) holds each one until this side's
                # delayed ACK, 40 ms, on a kept-alive connection: ACKing at once keeps
                # the baseline the server's own latency whatever its socket options.
                connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
        elapsed = time.monotonic() - started
        if not answer.startswith(b"HTTP/1.1 200") or b"data: [DONE]" not in answer:
            raise RuntimeError(f"unexpected answer: {answer[:300]!r}")
        if self.keep_alive:
            self._connection = connection
        else:
            connection.close()
        return elapsed

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def _request_body(config: LLMConfig, messages: list[dict[str, str]]) -> bytes:
    """The JSON body the harness's provider sends for ``messages`` (``llm.provider``)."""
    document: dict[str, Any] = {
        "messages": messages,
        "model": config.model,
        "max_tokens": config.max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    for name in ("temperature", "top_p", "seed"):
        value = getattr(config, name)
        if value is not None:
            document[name] = value
    return json.dumps(document).encode()


# --- overhead per move ------------------------------------------------------------------


def _llm_seat(url: str, temperature: float) -> LLMSandbox:
    config = LLMConfig(base_url=url, model=MODEL, api_key="bench", temperature=temperature)
    return LLMSandbox(config)


def _quantile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[round(share * (len(ordered) - 1))]


def _overhead_round(plan: Plan, server: ServerProcess, seed: int) -> dict[str, Any]:
    seat = _llm_seat(server.url, 0.0)
    # Overrides of the duel's settings: Any, as run_duel takes them (not its progress).
    clock: dict[str, Any] = llm_clock(load_info("tic_tac_toe"))
    duel = run_duel(
        "tic_tac_toe",
        (AgentSource.llm("rule-based"), AgentSource.from_path(TIC_TAC_TOE_RANDOM)),
        backend=(seat, ProcessSandbox()),
        seed=seed,
        matches=plan.matches,
        **clock,
    )
    _check(duel)
    referee: list[float] = []
    harness: list[float] = []
    client: list[float] = []
    bodies: list[bytes] = []
    for match in duel.matches:
        index = 0 if match.first_player == 1 else 1
        timings = [timing for step in match.timings if (timing := step[index]) is not None]
        turns = match.transcripts[1]["turns"]
        if len(turns) != len(timings) or any(len(turn["attempts"]) != 1 for turn in turns):
            raise RuntimeError(f"match {match.index}: LLM moves and requests do not pair up")
        referee += timings
        harness += [turn["latency_ms"] / 1000 for turn in turns]
        client += [turn["attempts"][0]["latency_ms"] / 1000 for turn in turns]
        bodies += [_request_body(seat.config, turn["attempts"][0]["messages"]) for turn in turns]
    kept = BareClient(server.url, keep_alive=True)
    try:
        bare = [kept.ask(body) for body in bodies]
    finally:
        kept.close()
    fresh = BareClient(server.url, keep_alive=False)
    reconnecting = [fresh.ask(body) for body in bodies]

    def ms(values: list[float]) -> dict[str, float]:
        return {
            "median": statistics.median(values) * 1000,
            "p90": _quantile(values, 0.9) * 1000,
        }

    def added(upper: list[float], lower: list[float]) -> float:
        """The median, over moves, of what ``upper`` adds to ``lower`` (ms)."""
        return statistics.median(a - b for a, b in zip(upper, lower, strict=True)) * 1000

    return {
        "moves": len(referee),
        "referee": ms(referee),
        "harness": ms(harness),
        "client": ms(client),
        "bare": ms(bare),
        "bare_new_connection": ms(reconnecting),
        # Each figure is a median over moves of one move's difference: the same request.
        "added_ms": added(referee, bare),
        "referee_relay_ms": added(referee, harness),
        "prompts_reading_records_ms": added(harness, client),
        "client_ms": added(client, bare),
        "new_connection_ms": added(reconnecting, bare),
    }


def _check(duel: DuelResult) -> None:
    if duel.infrastructure_error:
        raise RuntimeError(f"the duel ended in error: {duel.infrastructure_error}")
    faults = [fault.describe() for match in duel.matches for fault in match.faults]
    if faults:
        raise RuntimeError(f"the duel had faults: {faults[:3]}")


# --- 50 LLM duels at once beside a hosted duel ----------------------------------------------


@dataclasses.dataclass
class HostedRun:
    moves: int = 0
    match_seconds: float = 0.0
    #: CPU time of the thread that refereed them (the agents are other processes).
    cpu_seconds: float = 0.0

    @property
    def moves_per_second(self) -> float:
        return self.moves / self.match_seconds if self.match_seconds else 0.0


def _hosted_until(stop: threading.Event | float, backend: ProcessSandbox, seed: int) -> HostedRun:
    """Hosted Connect Four duels, one after another, until ``stop`` is set (or its time
    comes); only the duels that ended before then count, except that the first always
    does: on a loaded machine one duel can outlast the whole window, and a run of none
    would be no figure at all."""
    run = HostedRun()
    sources = (AgentSource.from_path(RANDOM_PLAYER),) * 2
    cpu_before = time.thread_time()

    def stopped() -> bool:
        return stop.is_set() if isinstance(stop, threading.Event) else time.monotonic() >= stop

    while not (stopped() and run.moves):
        duel = run_duel(
            "connect_four", sources, backend=backend, seed=seed, matches=HOSTED_DUEL_MATCHES
        )
        seed += 1
        _check(duel)
        if stopped() and run.moves:
            break
        run.moves += sum(len(match.actions) for match in duel.matches)
        run.match_seconds += sum(match.duration for match in duel.matches)
    run.cpu_seconds = time.thread_time() - cpu_before
    return run


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _llm_duels(
    url: str, duels: int, matches: int, seed: int, *, started: Callable[[], None] = lambda: None
) -> dict[str, Any]:
    """``duels`` tic-tac-toe duels of two LLM seats at once, a thread each; what became of
    them, and this process's CPU time meanwhile."""
    clock: dict[str, Any] = llm_clock(load_info("tic_tac_toe"))

    def llm_duel(number: int) -> DuelResult:
        return run_duel(
            "tic_tac_toe",
            (AgentSource.llm("cold"), AgentSource.llm("warm")),
            backend=(_llm_seat(url, 0.0), _llm_seat(url, 0.6)),
            seed=seed * 1000 + number,
            matches=matches,
            **clock,
        )

    cpu_before = _cpu_seconds()
    begun = time.monotonic()
    started()
    with concurrent.futures.ThreadPoolExecutor(duels) as pool:
        played = list(pool.map(llm_duel, range(duels)))
    wall = time.monotonic() - begun
    cpu = _cpu_seconds() - cpu_before
    timings = sorted(
        timing
        for duel in played
        for match in duel.matches
        for step in match.timings
        for timing in step
        if timing is not None
    )
    return {
        "llm_duels": len(played),
        "llm_finished": sum(1 for duel in played if len(duel.matches) == matches),
        "llm_errors": sum(1 for duel in played if duel.infrastructure_error),
        "llm_faults": sum(len(match.faults) for duel in played for match in duel.matches),
        "llm_error_matches": sum(
            1 for duel in played for match in duel.matches if match.result is Outcome.ERROR
        ),
        "llm_moves": len(timings),
        "llm_wall_s": wall,
        "llm_moves_per_s": len(timings) / wall,
        "llm_move_median_ms": statistics.median(timings) * 1000,
        "llm_move_p90_ms": _quantile(timings, 0.9) * 1000,
        "cpu_s": cpu,
    }


def _run_llm_duels(url: str, duels: int, matches: int, seed: int) -> int:
    """The other-process side: ``started`` once the duels begin, then their figures."""
    figures = _llm_duels(url, duels, matches, seed, started=lambda: print("started", flush=True))
    print(json.dumps(figures), flush=True)
    return 0


def _beside(
    backend: ProcessSandbox, seed: int, play: Callable[[], dict[str, Any]]
) -> tuple[HostedRun, dict[str, Any]]:
    """Hosted duels in another thread for as long as ``play`` takes."""
    stop = threading.Event()
    with concurrent.futures.ThreadPoolExecutor(1) as hosted_pool:
        hosted = hosted_pool.submit(_hosted_until, stop, backend, seed)
        try:
            played = play()
        finally:
            stop.set()
        return hosted.result(), played


def _load_round(
    url: str, server_pid: int, duels: int, matches: int, alone_seconds: float, seed: int
) -> dict[str, Any]:
    """One round, in a process of its own (``--load-round``): a fresh worker."""
    backend = ProcessSandbox()
    alone = _hosted_until(time.monotonic() + alone_seconds, backend, seed)

    def elsewhere() -> dict[str, Any]:
        # The control: the same LLM duels in another process (another worker), sharing
        # this machine's cores with the hosted duel but not its interpreter.
        other = subprocess.Popen(
            [
                *(sys.executable, "-m", "bench.bench_llm", "--llm-duels", url),
                *(str(duels), str(matches), str(seed)),
            ],
            cwd=REPOSITORY,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert other.stdout is not None
        if other.stdout.readline().strip() != "started":
            raise RuntimeError(f"the other process's LLM duels did not start ({other.wait()})")
        figures: dict[str, Any] = json.loads(other.stdout.readline())
        other.wait()
        return figures

    def here() -> dict[str, Any]:
        # The LLM duels in threads of this process, as one worker would play them.
        server_cpu_before = process_cpu_seconds(server_pid)
        figures = _llm_duels(url, duels, matches, seed)
        figures["server_cpu_s"] = process_cpu_seconds(server_pid) - server_cpu_before
        return figures

    beside_other, other = _beside(backend, seed + 300, elsewhere)
    together, llm = _beside(backend, seed + 500, here)
    after = _hosted_until(time.monotonic() + alone_seconds, backend, seed + 700)
    # The hosted duels' own referee ran in this process too: its thread's CPU is not theirs.
    llm_cpu = llm.pop("cpu_s") - together.cpu_seconds
    return {
        "alone_moves_per_s": alone.moves_per_second,
        "alone_moves": alone.moves,
        "together_moves_per_s": together.moves_per_second,
        "together_moves": together.moves,
        "ratio": together.moves_per_second / alone.moves_per_second,
        "other_process_moves_per_s": beside_other.moves_per_second,
        "other_process_ratio": beside_other.moves_per_second / alone.moves_per_second,
        "other_process_llm_wall_s": other["llm_wall_s"],
        "other_process_llm_finished": other["llm_finished"],
        "after_moves_per_s": after.moves_per_second,
        "after_ratio": after.moves_per_second / alone.moves_per_second,
        **llm,
        "worker_cpu_s": llm_cpu,
        "worker_cpu_per_llm_move_ms": llm_cpu / llm["llm_moves"] * 1000,
    }


def _run_load_round(arguments: list[str]) -> int:
    url, server_pid, duels, matches, alone_seconds, seed = arguments
    figures = _load_round(
        url, int(server_pid), int(duels), int(matches), float(alone_seconds), int(seed)
    )
    print(json.dumps(figures), flush=True)
    return 0


# --- the whole run ---------------------------------------------------------------------------


def _spread(rounds: list[dict[str, Any]], key: str) -> dict[str, float]:
    values = [r[key] for r in rounds]
    return {"median": statistics.median(values), "low": min(values), "high": max(values)}


def _load(
    plan: Plan, delay: float, matches: int, *, report: Callable[[str], None]
) -> dict[str, Any]:
    rounds: list[dict[str, Any]] = []
    with ServerProcess(delay) as server:
        for number in range(plan.load_rounds):
            arguments = [server.process.pid, plan.duels, matches, plan.alone_seconds, 200 + number]
            completed = subprocess.run(
                [
                    *(sys.executable, "-m", "bench.bench_llm", "--load-round", server.url),
                    *(str(argument) for argument in arguments),
                ],
                cwd=REPOSITORY,
                stdout=subprocess.PIPE,
                text=True,
                check=True,
            )
            rounds.append(json.loads(completed.stdout.strip().splitlines()[-1]))
            row = rounds[-1]
            report(
                f"load, {delay * 1000:g} ms an answer, round {number + 1}: hosted "
                f"{row['alone_moves_per_s']:.0f} moves/s alone, "
                f"{row['together_moves_per_s']:.0f} beside {row['llm_duels']} LLM duels "
                f"({row['llm_finished']} finished in {row['llm_wall_s']:.1f} s)"
            )
    return {
        "delay": delay,
        "matches": matches,
        "rounds": rounds,
        **{
            key: _spread(rounds, key)
            for key in (
                "ratio",
                "alone_moves_per_s",
                "together_moves_per_s",
                "other_process_moves_per_s",
                "other_process_ratio",
                "other_process_llm_wall_s",
                "after_moves_per_s",
                "after_ratio",
                "llm_wall_s",
                "llm_moves_per_s",
                "llm_move_median_ms",
                "llm_move_p90_ms",
                "worker_cpu_s",
                "worker_cpu_per_llm_move_ms",
                "server_cpu_s",
            )
        },
        **{
            key: sum(r[key] for r in rounds)
            for key in (
                "llm_duels",
                "llm_finished",
                "llm_errors",
                "llm_faults",
                "llm_error_matches",
                "llm_moves",
                "other_process_llm_finished",
            )
        },
    }


def measure(plan: Plan, *, report: Callable[[str], None]) -> dict[str, Any]:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 65536), hard))
    figures: dict[str, Any] = {
        "date": datetime.date.today().isoformat(),
        "machine": machine_summary(machine()),
        "load_average_before": os.getloadavg(),
        "plan": dataclasses.asdict(plan),
    }
    started = time.monotonic()
    overhead: list[dict[str, Any]] = []
    with ServerProcess() as server:
        for number in range(plan.rounds):
            overhead.append(_overhead_round(plan, server, 100 + number))
            row = overhead[-1]
            report(
                f"overhead, round {number + 1}: {row['moves']} moves, referee "
                f"{row['referee']['median']:.3f} ms, bare {row['bare']['median']:.3f} ms, "
                f"added {row['added_ms']:.3f} ms"
            )
    figures["overhead"] = {
        "rounds": overhead,
        "moves": sum(r["moves"] for r in overhead),
        **{
            key: _spread(overhead, key)
            for key in (
                "added_ms",
                "referee_relay_ms",
                "prompts_reading_records_ms",
                "client_ms",
                "new_connection_ms",
            )
        },
        **{
            f"{part}_{statistic}_ms": statistics.median(r[part][statistic] for r in overhead)
            for part in ("referee", "harness", "client", "bare", "bare_new_connection")
            for statistic in ("median", "p90")
        },
    }
    figures["load"] = [_load(plan, delay, matches, report=report) for delay, matches in plan.loads]
    figures["seconds"] = time.monotonic() - started
    figures["load_average_after"] = os.getloadavg()
    return figures


def _spread_text(row: dict[str, float], digits: int) -> str:
    return f"**{row['median']:.{digits}f}** ({row['low']:.{digits}f} to {row['high']:.{digits}f})"


def table(figures: dict[str, Any]) -> str:
    overhead, plan = figures["overhead"], figures["plan"]
    lines = [
        f"LLM players ({figures['machine']}, {figures['date']}, load average before "
        f"{figures['load_average_before'][0]:.2f}, {figures['seconds']:.0f} s)",
        "",
        f"{overhead['moves']} LLM moves in {plan['rounds']} rounds; medians of the rounds",
        "",
        "| per LLM move | median (ms) | 90th percentile (ms) |",
        "| --- | ---: | ---: |",
    ]
    for part, label in (
        ("referee", "referee's time for the LLM seat"),
        ("harness", "harness's time for the move (its records)"),
        ("client", "the HTTP client's time for the request, events read (its records)"),
        ("bare", "bare client, kept-alive connection (baseline)"),
        ("bare_new_connection", "bare client, a new connection per request"),
    ):
        lines.append(
            f"| {label} | {overhead[f'{part}_median_ms']:.3f} | {overhead[f'{part}_p90_ms']:.3f} |"
        )
    lines += [
        "",
        "| added per move, median over moves (ms) | median of rounds (range) |",
        "| --- | ---: |",
    ]
    for key, label in (
        ("added_ms", "**harness over the server's own latency**"),
        ("referee_relay_ms", "of which the referee and the socket relay"),
        ("prompts_reading_records_ms", "of which prompts, checking the answer, records"),
        ("client_ms", "of which the HTTP client (llm.provider)"),
        ("new_connection_ms", "(a new connection per request, bare)"),
    ):
        lines.append(f"| {label} | {_spread_text(overhead[key], 3)} |")
    # Reported, not a target any more (issue 22): a model answers in 100 ms to minutes, so
    # a millisecond of the client's Python is noise; the client is the official one.
    for load in figures["load"]:
        kept = load["ratio"]["median"] >= TARGET_HOSTED_RATIO
        complete = (
            load["llm_finished"] == load["llm_duels"]
            and load["llm_errors"] == 0
            and load["llm_faults"] == 0
        )
        lines += [
            "",
            f"{plan['duels']} LLM duels at once ({load['matches']} matches each, the server "
            f"waiting {load['delay'] * 1000:g} ms per answer) beside hosted Connect Four "
            f"duels, {plan['load_rounds']} rounds",
            "",
            "| load | median of rounds (range) |",
            "| --- | ---: |",
        ]
        for key, label, digits in (
            ("alone_moves_per_s", "hosted duel alone (moves/s)", 0),
            ("together_moves_per_s", "hosted duel beside the LLM duels (moves/s)", 0),
            ("ratio", "beside / alone", 3),
            (
                "other_process_moves_per_s",
                "control: beside the same LLM duels in another process (moves/s)",
                0,
            ),
            ("other_process_ratio", "control: beside / alone", 3),
            ("after_moves_per_s", "hosted duel alone again, after the LLM duels (moves/s)", 0),
            ("after_ratio", "after / alone", 3),
            ("llm_wall_s", "LLM duels' wall time (s)", 1),
            ("llm_moves_per_s", "LLM moves/s", 0),
            ("llm_move_median_ms", "LLM move, median (ms)", 1),
            ("llm_move_p90_ms", "LLM move, 90th percentile (ms)", 1),
            ("worker_cpu_s", "this process's CPU time for the LLM duels (s)", 1),
            ("worker_cpu_per_llm_move_ms", "of which per LLM move (ms)", 2),
            ("server_cpu_s", "the server's CPU time (s)", 1),
        ):
            lines.append(f"| {label} | {_spread_text(load[key], digits)} |")
        lines += [
            "",
            f"LLM duels finished: {load['llm_finished']} of {load['llm_duels']} "
            f"({load['llm_moves']} moves), in error: {load['llm_errors']}, faults: "
            f"{load['llm_faults']}, matches in error: {load['llm_error_matches']}; in "
            f"another process: {load['other_process_llm_finished']} finished",
            f"target: the LLM duels complete beside a hosted duel that keeps "
            f"{TARGET_HOSTED_RATIO:.0%} of its speed: "
            + ("met" if complete and kept else "NOT met"),
        ]
    return "\n".join(lines)


# --- where the harness's time goes ----------------------------------------------------------


def profile(moves: int = 2000, top: int = 30) -> int:
    """The harness alone (no referee, no relay) playing tic-tac-toe moves against the
    server under cProfile, in this thread; the functions by cumulative and own time."""
    with ServerProcess() as server:
        config = LLMConfig(base_url=server.url, model=MODEL, api_key="bench", temperature=0.0)
        harness = Harness(config)
        harness.handle({"type": "hello", "environment": "tic_tac_toe"})
        environment = make_environment("tic_tac_toe")
        chance = random.Random(1)
        profiler = cProfile.Profile()
        played = match = request = 0
        started = time.monotonic()
        while played < moves:
            environment.reset(match)
            seat = match % 2
            harness.handle({"type": "start", "match": match, "player": seat})
            step = 0
            while not environment.is_terminal():
                [mover] = environment.to_move()
                legal = environment.legal_actions(mover)
                step += 1
                if mover != seat:
                    environment.step({mover: chance.choice(legal)})
                    continue
                request += 1
                message = {
                    "type": "act",
                    "id": request,
                    "match": match,
                    "step": step - 1,
                    "observation": environment.observation(mover),
                    "legal_actions": legal,
                    "time_left": {"move": 60.0, "bank": 300.0},
                }
                profiler.enable()
                reply = harness.handle(message)
                profiler.disable()
                assert reply is not None
                environment.step({mover: reply["action"]})
                played += 1
            match += 1
        elapsed = time.monotonic() - started
        harness.close()
    print(f"{played} moves of the harness alone, {elapsed / played * 1000:.3f} ms per move")
    # Each start of an LLM seat makes its own client (``llm.provider.Provider``).
    cpu_before = time.process_time()
    for _ in range(20):
        Harness(config).close()
    construction_ms = (time.process_time() - cpu_before) / 20 * 1000
    print(f"a new Harness (its HTTP client): {construction_ms:.1f} ms of CPU")
    for order in ("cumulative", "tottime"):
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats(order).print_stats(top)
        print(text.getvalue())
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--serve"]:
        return _serve(float(argv[1]))
    if argv[:1] == ["--load-round"]:
        return _run_load_round(argv[1:])
    if argv[:1] == ["--llm-duels"]:
        return _run_llm_duels(argv[1], int(argv[2]), int(argv[3]), int(argv[4]))
    if argv[:1] == ["--profile"]:
        return profile()
    return run_bench(
        argv,
        sys.modules[__name__],
        quick_help="smoke run: one round of 2 matches, 3 LLM duels at once",
    )


if __name__ == "__main__":
    sys.exit(main())
