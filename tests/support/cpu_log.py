"""Where a test run's CPU goes: with ``ARENA_TEST_CPU_LOG=folder`` each test process
writes one JSON line per test (its id, when it began, its wall seconds, and the CPU
seconds spent by the test process and by the children it reaped during the test, set-up
and teardown included) to ``folder/<pid>.jsonl``. ``python -m tests.support.cpu_log
folder`` sums them by test and by module. Off by default; see docs/developers/testing.md."""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    folder = os.environ.get("ARENA_TEST_CPU_LOG")
    if not folder:
        yield
        return
    began, wall, own, children = (
        time.time(),
        time.monotonic(),
        _cpu(resource.RUSAGE_SELF),
        _cpu(resource.RUSAGE_CHILDREN),
    )
    yield
    line = {
        "test": item.nodeid,
        # When it began (the epoch's seconds): to match it with what other processes
        # record meanwhile, such as the Docker engine's events.
        "began": round(began, 3),
        "wall": round(time.monotonic() - wall, 3),
        "cpu": round(_cpu(resource.RUSAGE_SELF) - own, 3),
        "children": round(_cpu(resource.RUSAGE_CHILDREN) - children, 3),
    }
    Path(folder).mkdir(parents=True, exist_ok=True)
    with open(Path(folder) / f"{os.getpid()}.jsonl", "a") as log:
        log.write(json.dumps(line) + "\n")


def main(folder: str) -> None:
    by_module: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    tests = []
    for path in Path(folder).glob("*.jsonl"):
        for text in path.read_text().splitlines():
            line = json.loads(text)
            tests.append(line)
            total = by_module[line["test"].split("::")[0]]
            total[0] += 1
            total[1] += line["wall"]
            total[2] += line["cpu"]
            total[3] += line["children"]
    print(f"{'tests':>5} {'wall':>8} {'cpu':>8} {'child':>8}  module (by cpu + children)")
    for module, (count, wall, cpu, child) in sorted(
        by_module.items(), key=lambda kv: -(kv[1][2] + kv[1][3])
    ):
        print(f"{int(count):5d} {wall:8.1f} {cpu:8.1f} {child:8.1f}  {module}")
    print(
        f"all: {len(tests)} tests, wall {sum(t['wall'] for t in tests):.0f} s, cpu "
        f"{sum(t['cpu'] for t in tests):.0f} s, children {sum(t['children'] for t in tests):.0f} s"
    )


if __name__ == "__main__":
    main(sys.argv[1])
