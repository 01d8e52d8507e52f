"""Cold import of the Lambda handlers (issue 12 scope 3): `python -m bench.coldimport`.

Each figure is the median over N fresh interpreters (default 7) doing what the Lambda runtime does
as a function starts - `importlib.import_module(module)`, then `getattr(module, name)` of the
function's handler string - measured in interleaved rounds, so that the machine's load falls on
every target alike:

- **api**: `app.app`, the handler of the API function (`<app>-<stage>`);
- **case worker**: the handler string Chalice gives the case-tasks queue's event source. A handler
  on a blueprint is `<blueprint module>.<function>` (`chalicelib.workers.cases.handle_case_task`),
  so that Lambda never imports `app.py` (`chalicelib.startup` says how each function starts);
- with `--all`, the other event handlers (the DLQ, agent events, the two schedules).

Every process runs as a deployed stage: `AWS_LAMBDA_FUNCTION_NAME` and `_HANDLER` set as Lambda
sets them, a 40-character `ASSAY_JWT_SECRET` (a deployed stage refuses the built-in one), no other
`ASSAY_*` or `AWS_*` variable.

Figures per target: **import** - wall ms from before the import to after `getattr`, measured
inside the process (what a cold start waits for; the goals are judged on it); **CPU** - the same
span's CPU time (it moves less than wall time when other work shares the machine); **process** -
the whole process's wall time minus a bare interpreter's (`python -c pass`), which also counts the
interpreter freeing every module at exit, a cost Lambda never pays at start.

Bytecode decides much of a start, so each mode is measured apart (`--modes`), from a private
`PYTHONPYCACHEPREFIX` (the tree's own `__pycache__` directories are never read):

- `bytecode`: every module imported has its `.pyc` (written by a warm-up run): the import work
  itself; the goals are judged on this one;
- `source`: the libraries have bytecode, assay's own modules are compiled at each start (this
  machine's default: `PYTHONDONTWRITEBYTECODE=1`);
- `none`: nothing has bytecode, as in a package `chalice package` builds (it unpacks wheels
  without compiling them, and Lambda's `/var/task` is read-only, so nothing is ever cached).

Then `-X importtime` (bytecode, the least of 3 runs per module) lists what each start spends most
on, cumulative (a module's imports count in it), so the next person sees where start-up goes.

`--instructions` also counts each start's instructions under valgrind's callgrind (bytecode mode):
a figure the machine's load does not move, for a machine others share (each count takes minutes).

`--root DIR` measures another checkout; `--baseline DIR` measures an older one (e.g. a worktree of
the commit before) in the same interleaved rounds and prints after/before ratios. Figures, never
pass/fail.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APP_NAME = "assay"
STAGE = "dev"
GOALS_MS = {"api": 400.0, "case worker": 250.0}
"""Issue 12's goals: cold import of the API handler and of the case worker, in ms."""

BENCH_SECRET = "bench-coldimport-secret-0123456789abcdef"
"""A 40-character HS256 secret: a deployed stage refuses to start with the built-in one."""

MARK = "coldimport:"
"""Starts the line on which a measured process reports its import's wall and CPU ms."""


@dataclass(frozen=True)
class Target:
    """One Lambda function's start: the handler string Lambda resolves, and its function name."""

    label: str
    handler: str
    function_name: str

    def code(self) -> str:
        """What the process runs: the runtime's import of the handler, timed from inside."""
        if not self.handler:
            return "pass"
        module, _, attr = self.handler.rpartition(".")
        return (
            "import time; w, c = time.perf_counter(), time.process_time(); "
            f"import importlib; getattr(importlib.import_module({module!r}), {attr!r}); "
            "w, c = time.perf_counter() - w, time.process_time() - c; "
            f"print({MARK!r}, w * 1000, c * 1000)"
        )


BARE = Target("bare interpreter", "", "")


@dataclass(frozen=True)
class Sample:
    """One process: its import's wall and CPU ms (0 for the bare interpreter), and its own wall
    ms."""

    import_ms: float
    cpu_ms: float
    process_ms: float


def _environ(root: Path, target: Target, *, write: bool, prefix: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "AWS_", "PYTHON"))}
    env.update(PYTHONPATH=str(root), PYTHONUNBUFFERED="1", AWS_DEFAULT_REGION="us-east-1")
    if not write:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    if prefix is not None:
        env["PYTHONPYCACHEPREFIX"] = str(prefix)
    if target.handler:
        env.update(
            AWS_LAMBDA_FUNCTION_NAME=target.function_name,
            _HANDLER=target.handler,
            ASSAY_JWT_SECRET=BENCH_SECRET,
        )
    return env


def targets(root: Path, all_handlers: bool) -> list[Target]:
    """The API handler, the case worker, and with `all_handlers` every other event handler, as
    the app in `root` names them (read in a child process: this one stays free of the app)."""
    code = (
        "import json, app; from chalicelib import names; "
        "print(json.dumps([{e.name: e.handler_string for e in app.app.event_sources}, "
        "next(e.name for e in app.app.event_sources "
        "if getattr(e, 'queue', None) == names.CASE_TASKS_QUEUE)]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=root,
        env=_environ(root, BARE, write=False, prefix=None),
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    handlers, case_worker = json.loads(out.stdout.strip().splitlines()[-1])
    found = [Target("api", "app.app", f"{APP_NAME}-{STAGE}")]
    for name, handler in handlers.items():
        if name == case_worker or all_handlers:
            label = "case worker" if name == case_worker else name
            found.append(Target(label, handler, f"{APP_NAME}-{STAGE}-{name}"))
    return found


def _run(
    root: Path,
    target: Target,
    prefix: Path,
    *,
    write: bool = False,
    importtime: bool = False,
    wrapper: tuple[str, ...] = (),
) -> tuple[Sample, str]:
    argv = [*wrapper, sys.executable, *(["-X", "importtime"] if importtime else [])]
    argv += ["-c", target.code()]
    env = _environ(root, target, write=write, prefix=prefix)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, timeout=300)
    process_ms = (time.perf_counter() - start) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{target.label} failed to start:\n{done.stderr[-3000:]}")
    reported = [line.split()[1:] for line in done.stdout.splitlines() if line.startswith(MARK)]
    import_ms, cpu_ms = (float(v) for v in reported[-1]) if reported else (0.0, 0.0)
    return Sample(import_ms, cpu_ms, process_ms), done.stderr


def measure(
    plan: list[tuple[Path, Target]], prefix: Path, runs: int
) -> dict[tuple[Path, str], list[Sample]]:
    """`runs` samples of each `(checkout, target)`, taken in interleaved rounds."""
    samples: dict[tuple[Path, str], list[Sample]] = {(r, t.label): [] for r, t in plan}
    for _ in range(runs):
        for root, target in plan:
            samples[root, target.label].append(_run(root, target, prefix)[0])
    return samples


CALLGRIND = ("valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null")


def instructions(root: Path, target: Target, prefix: Path) -> int:
    """Instructions the whole process executes, counted by valgrind's callgrind: the same figure
    on an idle or a loaded machine (~50x slower to take)."""
    _, stderr = _run(root, target, prefix, wrapper=CALLGRIND)
    counted = [line for line in stderr.splitlines() if "Collected :" in line]
    if not counted:
        raise SystemExit(f"callgrind reported no count for {target.label}:\n{stderr[-2000:]}")
    return int(counted[-1].split()[-1])


def top_imports(stderrs: list[str], limit: int) -> list[tuple[float, float, int, str]]:
    """`(cumulative ms, self ms, depth, module)` of the `limit` costliest imports in `-X
    importtime` outputs (the least of the runs for each module), costliest first."""
    best: dict[str, tuple[float, float, int]] = {}
    for stderr in stderrs:
        for line in stderr.splitlines():
            if not line.startswith("import time:") or "self [us]" in line:
                continue
            self_us, cumulative_us, name = line.removeprefix("import time:").split("|", 2)
            depth = (len(name) - len(name.lstrip(" ")) - 1) // 2
            key = name.strip()
            seen = (int(cumulative_us) / 1000, int(self_us) / 1000, depth)
            best[key] = min(best.get(key, seen), seen)
    rows = [
        (cumulative, self_ms, depth, name) for name, (cumulative, self_ms, depth) in best.items()
    ]
    return sorted(rows, reverse=True)[:limit]


def _prepare(prefix: Path, mode: str, plan: list[tuple[Path, Target]]) -> None:
    """Give the cache `prefix` the bytecode `mode` calls for."""
    shutil.rmtree(prefix, ignore_errors=True)
    prefix.mkdir(parents=True)
    if mode == "none":
        return
    for root, target in plan:
        _run(root, target, prefix, write=True)
    if mode == "source":  # assay's own modules lose their bytecode; the libraries keep theirs
        for root in {r for r, _ in plan}:
            mirror = prefix / root.relative_to(root.anchor)  # (a venv may live in the checkout)
            shutil.rmtree(mirror / "chalicelib", ignore_errors=True)
            for compiled in mirror.glob("app.*.pyc"):
                compiled.unlink()


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} cores"


def _verdict(label: str, ms: float) -> str:
    goal = GOALS_MS.get(label)
    if goal is None:
        return ""
    met = f"met ({ms / goal:.2f} of it)" if ms <= goal else f"NOT met ({ms / goal:.2f}x)"
    return f"  goal <= {goal:.0f} ms: {met}"


def _figures(taken: list[Sample], bare: float) -> tuple[float, float, float]:
    """Medians of `(import, CPU, process - bare)` ms."""
    return (
        statistics.median(s.import_ms for s in taken),
        statistics.median(s.cpu_ms for s in taken),
        statistics.median(s.process_ms for s in taken) - bare,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--runs", type=int, default=7, help="interpreters per target and mode")
    parser.add_argument(
        "--modes", default="bytecode,source", help="comma-separated: bytecode, source, none"
    )
    parser.add_argument("--all", action="store_true", help="every event handler, not only two")
    parser.add_argument("--top", type=int, default=15, help="costliest imports shown per target")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to measure")
    parser.add_argument(
        "--baseline",
        type=Path,
        help="an older checkout measured in the same rounds (before/after ratios)",
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="also count each start's instructions with valgrind (load-independent; slow)",
    )
    args = parser.parse_args(argv)
    root = args.root.resolve()
    baseline = args.baseline.resolve() if args.baseline else None
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = set(modes) - {"bytecode", "source", "none"}
    if unknown:
        parser.error(f"unknown mode(s): {', '.join(sorted(unknown))}")

    handlers = targets(root, args.all)
    compared = targets(baseline, args.all) if baseline else []
    plan = [(root, BARE), *((root, t) for t in handlers), *((baseline, t) for t in compared)]
    print(f"{root}: python {sys.version.split()[0]}, {args.runs} runs per figure")
    if baseline:
        print(f"baseline {baseline}, measured in the same rounds")
    print(f"{_load()} at start; medians in ms")
    with tempfile.TemporaryDirectory(prefix="assay-coldimport-") as tmp:
        prefix = Path(tmp) / "pycache"
        for mode in modes:
            _prepare(prefix, mode, plan)
            samples = measure(plan, prefix, args.runs)
            bare = statistics.median(s.process_ms for s in samples[root, BARE.label])
            print(f"\nmode {mode} ({_load()}): bare interpreter {bare:.0f}")
            print(f"  {'':<20} {'import':>7} {'CPU':>7} {'process':>8}")
            for target in handlers:
                wall, cpu, process = _figures(samples[root, target.label], bare)
                print(
                    f"  {target.label:<20} {wall:7.0f} {cpu:7.0f} {process:8.0f}  "
                    f"{target.handler}{_verdict(target.label, wall)}"
                )
                before = next((t for t in compared if t.label == target.label), None)
                if baseline and before:
                    was, was_cpu, was_process = _figures(samples[baseline, before.label], bare)
                    print(
                        f"  {'  baseline':<20} {was:7.0f} {was_cpu:7.0f} {was_process:8.0f}  "
                        f"{before.handler}  after/before: import {wall / was:.2f}, "
                        f"CPU {cpu / was_cpu:.2f}"
                    )
        if args.instructions:
            _prepare(prefix, "bytecode", plan)
            bare_count = instructions(root, BARE, prefix)
            print("\ninstructions (callgrind, bytecode; millions, less a bare interpreter's):")
            for target in handlers:
                count = (instructions(root, target, prefix) - bare_count) / 1e6
                line = f"  {target.label:<20} {count:7.0f}  {target.handler}"
                before = next((t for t in compared if t.label == target.label), None)
                if baseline and before:
                    was = (instructions(baseline, before, prefix) - bare_count) / 1e6
                    line += f"  (baseline {was:.0f}: after/before {count / was:.2f})"
                print(line)
        _prepare(prefix, "bytecode", [(root, t) for t in (BARE, *handlers)])
        for target in handlers if args.top > 0 else []:
            stderrs = [_run(root, target, prefix, importtime=True)[1] for _ in range(3)]
            print(f"\ncostliest imports of {target.label} (-X importtime, bytecode; ms):")
            print(f"  {'cumulative':>10} {'self':>7}  module")
            for cumulative, self_ms, depth, name in top_imports(stderrs, args.top):
                print(f"  {cumulative:10.1f} {self_ms:7.1f}  {'  ' * depth}{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
