"""The embedded stack's start-up (issue 33): `python -m bench.startup [--rounds 5]`.

Every figure comes from fresh Python processes, cold like a user's first command, three per round
in this order, so the machine's load falls on each alike:

- **floor**: `python -c pass`, the interpreter alone (start and exit);
- **stack**: a process that imports `EmbeddedStack`, starts it (moto's process, every table, queue
  and the bucket, the HTTP routes, pollers, scheduler) and stops it; its own marks give the import,
  start-to-ready and stop, and the stack's `phases` give the start step by step;
- **N = 1**: what `assay demo` does at its smallest - a process that starts the stack, imports a
  1-case dataset and makes an instant `python` agent through the HTTP API
  (`bench.pipeline.prepare`), starts one eval run of that case, polls its progress every 10 ms
  until it ends, and stops. Its wall is the process's whole life as the shell sees it,
  interpreter start and exit included.

It prints the medians over `--rounds`, each with its range, the machine line, and each process's
CPU seconds (its own and its children's, moto's process included): a figure the machine's load
moves less than the wall.

Bytecode: `--bytecode cached` (the default) gives every process a private `PYTHONPYCACHEPREFIX`,
written by a warm-up round that is not counted: what every command after a user's first sees.
`--bytecode env` leaves the environment as it is (where `PYTHONDONTWRITEBYTECODE=1`, assay's own
modules are compiled at every start).

`--baseline DIR` (repeatable) measures another checkout (e.g. `git archive` of the commit before,
unpacked) in the same interleaved rounds with this Python and prints each. Figures, never
pass/fail.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARK = "startup:"
"""Starts the line on which a measured process reports its marks (JSON)."""

STACK_CODE = f"""
import json, time
t0 = time.monotonic()
from assay_local.stack import EmbeddedStack
t1 = time.monotonic()
stack = EmbeddedStack().start()
t2 = time.monotonic()
stack.stop()
t3 = time.monotonic()
print({MARK!r} + json.dumps({{"t0": t0, "import_s": t1 - t0, "start_s": t2 - t1,
      "stop_s": t3 - t2, "phases": getattr(stack, "phases", {{}})}}), flush=True)
"""
"""The stack process: import, start, stop, and its marks (monotonic seconds are system-wide on
Linux, so `t0` says when the interpreter handed over to the code)."""

N1_CODE = f"""
import json, time
t0 = time.monotonic()
from assay_local.stack import EmbeddedStack
from bench.client import api_caller
from bench.pipeline import prepare
stack = EmbeddedStack().start()
t1 = time.monotonic()
try:
    call = api_caller(stack, "org_bench", "bench@assay.local", timeout=60)
    dataset_id, agent_id, _ = prepare(call, 1, 0)
    t2 = time.monotonic()
    run = call("POST", f"/api/v1/agents/{{agent_id}}/eval-runs",
               json={{"dataset_id": dataset_id, "candidate": "draft"}})
    while True:
        p = call("GET", f"/api/v1/eval-runs/{{run['run_id']}}/progress")
        if p["status"] not in ("queued", "running"):
            break
        time.sleep(0.01)
    t3 = time.monotonic()
finally:
    stack.stop()
t4 = time.monotonic()
print({MARK!r} + json.dumps({{"t0": t0, "start_s": t1 - t0, "prepare_s": t2 - t1,
      "run_s": t3 - t2, "stop_s": t4 - t3, "status": p["status"], "recorded": p["recorded"]}}),
      flush=True)
"""
"""The N = 1 process: start the stack, import one case, make the agent, run it once, stop."""


@dataclass
class Round:
    """One round's figures for one checkout, in seconds."""

    floor_s: float
    floor_cpu_s: float
    stack_wall_s: float
    stack: dict[str, object]
    n1_wall_s: float
    n1: dict[str, object]
    phases: dict[str, float] = field(default_factory=dict)


def _run(code: str | None, cwd: Path, env: dict[str, str]) -> tuple[float, dict[str, object]]:
    """Run `python -c code` (`pass` when None) in `cwd`; return its wall seconds (spawn to exit)
    and the marks it printed, with `interpreter_s` (spawn to its first line of code) and `cpu_s`
    (CPU seconds, user and system, of the process and its children, moto's included) added.

    Raises RuntimeError when the process fails or prints no marks."""
    t = time.monotonic()
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-c", code or "pass"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - t
    now = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = now.ru_utime + now.ru_stime - used.ru_utime - used.ru_stime
    if done.returncode != 0:
        raise RuntimeError(f"measured process failed ({done.returncode}): {done.stderr[-2000:]}")
    if code is None:
        return wall, {"cpu_s": cpu}
    line = next((x for x in done.stdout.splitlines() if x.startswith(MARK)), None)
    if line is None:
        raise RuntimeError(f"measured process printed no marks: {done.stdout[-2000:]}")
    marks: dict[str, object] = json.loads(line[len(MARK) :])
    marks["interpreter_s"] = float(marks["t0"]) - t  # type: ignore[arg-type]
    marks["cpu_s"] = cpu
    return wall, marks


def measure(cwd: Path, env: dict[str, str]) -> Round:
    """One round in checkout `cwd`: the floor, the stack's start and stop, the N = 1 wall."""
    floor, floor_marks = _run(None, cwd, env)
    stack_wall, stack = _run(STACK_CODE, cwd, env)
    n1_wall, n1 = _run(N1_CODE, cwd, env)
    if n1.get("status") != "completed":
        raise RuntimeError(f"the N = 1 run ended {n1.get('status')!r}, not completed")
    phases = stack.get("phases")
    return Round(
        floor,
        float(floor_marks["cpu_s"]),  # type: ignore[arg-type]
        stack_wall,
        stack,
        n1_wall,
        n1,
        phases if isinstance(phases, dict) else {},
    )


def _med(values: list[float]) -> str:
    return (
        f"{statistics.median(values):6.2f} s  ({min(values):.2f}-{max(values):.2f})"
        if values
        else "     -"
    )


def report(label: str, rounds: list[Round]) -> None:
    """Print the medians (and ranges) of `rounds` under `label`."""

    def stack(key: str) -> list[float]:
        return [float(r.stack[key]) for r in rounds]  # type: ignore[arg-type]

    def n1(key: str) -> list[float]:
        return [float(r.n1[key]) for r in rounds]  # type: ignore[arg-type]

    print(f"{label}: medians over {len(rounds)} rounds (range)")
    print(f"  floor: python -c pass                {_med([r.floor_s for r in rounds])}")
    print(f"    its CPU                            {_med([r.floor_cpu_s for r in rounds])}")
    print(f"  stack process, whole life            {_med([r.stack_wall_s for r in rounds])}")
    print(f"    CPU of the process and moto's      {_med(stack('cpu_s'))}")
    print(f"    interpreter start                  {_med(stack('interpreter_s'))}")
    print(f"    import assay_local.stack           {_med(stack('import_s'))}")
    print(f"    start to ready                     {_med(stack('start_s'))}")
    print(f"    stop                               {_med(stack('stop_s'))}")
    names: list[str] = []
    for r in rounds:
        names += [n for n in r.phases if n not in names]
    if names:
        print("    start by phase:")
        for name in names:
            print(f"      {name:<32} {_med([r.phases.get(name, 0.0) for r in rounds])}")
    print(f"  N = 1 wall (process, shell's view)   {_med([r.n1_wall_s for r in rounds])}")
    print(f"    CPU of the process and moto's      {_med(n1('cpu_s'))}")
    print(f"    to stack ready (from first line)   {_med(n1('start_s'))}")
    print(f"    dataset and agent                  {_med(n1('prepare_s'))}")
    print(f"    the eval run of 1 case             {_med(n1('run_s'))}")
    print(f"    stop                               {_med(n1('stop_s'))}")


def _load() -> str:
    try:
        return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "load average unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--bytecode",
        choices=("cached", "env"),
        default="cached",
        help="cached: a private bytecode cache, warmed first; env: the environment's setting",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        action="append",
        default=[],
        help="another checkout, measured alike (repeat for more)",
    )
    args = parser.parse_args(argv)
    targets = [(f"baseline {path}", path.resolve()) for path in args.baseline]
    targets.append(("this checkout", ROOT))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "ASSAY_"))}
    env.pop("PYTHONPATH", None)
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as cache:
        if args.bytecode == "cached":
            env.pop("PYTHONDONTWRITEBYTECODE", None)
        print(
            f"machine: {platform.machine()} {os.cpu_count()} cores, Python "
            f"{platform.python_version()}, {_load()}"
        )
        print(
            f"bytecode: {args.bytecode}"
            + (
                " (PYTHONDONTWRITEBYTECODE=1: compiled at every start)"
                if env.get("PYTHONDONTWRITEBYTECODE")
                else ""
            )
        )
        results: dict[str, list[Round]] = {label: [] for label, _ in targets}
        for i in range(args.rounds + (1 if args.bytecode == "cached" else 0)):
            for label, cwd in targets:
                target_env = env
                if args.bytecode == "cached":
                    # the cache mirrors each source's absolute path: checkouts do not collide
                    target_env = env | {"PYTHONPYCACHEPREFIX": cache}
                measured = measure(cwd, target_env)
                if args.bytecode == "cached" and i == 0:
                    continue  # the warm-up round writes the bytecode
                results[label].append(measured)
                start_s = float(measured.stack["start_s"])  # type: ignore[arg-type]
                print(
                    f"  round {len(results[label])} {label}: N = 1 wall "
                    f"{measured.n1_wall_s:.2f} s, stack start {start_s:.2f} s ({_load()})",
                    flush=True,
                )
        print()
        for label, _ in targets:
            report(label, results[label])
        print(f"machine after: {_load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
