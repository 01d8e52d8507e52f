"""Console chart benchmark: the pass-rate chart of an agent with 1,000 completed runs
(docs/guides/console.md).

On the embedded stack (moto server on 127.0.0.1, HTTP routes) one agent gets one real completed
run of v2 against v1 on a dataset, then 1,000 completed runs written straight into the tables
(`bench.history.write_history`): copies of that run over two datasets, a minute apart, with
pass rates, confirmed regressions and fixes and drafts drawn from a seeded generator. Then it
measures and prints

- `GET /api/v1/agents/{id}/eval-runs/chart` with `last=all` and `last=10`: the median of
  `--repeat` requests, with the size of the answer;
- in headless Chromium (the system's `/usr/bin/chromium`, driven by Playwright; never a
  downloaded browser), the time from the start of the navigation to
  `{api_url}/agents/{id}?last=all#token={jwt}` until `#chart svg [data-run-id]` is laid out
  (checked every animation frame, by the page's clock), and its ratio to a floor measured in the
  same run: navigating to `{api_url}/openapi.json` until it loaded. Each navigation gets a fresh
  browser context (no cache). Target: under 1 s with 1,000 runs.

`--stand-in` serves, at that same page address (Playwright answers the navigation itself, so the
page and the API share one origin), a minimal page that fetches the chart and inserts its `svg`
into `<figure id="chart">`: the chart's own cost without the console around it, and what the
benchmark measures before the console page exists.

    python -m bench.console_chart [--runs 1000] [--repeat 7] [--stand-in]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time
from dataclasses import replace
from datetime import timedelta
from typing import Any

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SELECTOR = "#chart svg [data-run-id]"

SHOWN = f"""() => {{
  const point = document.querySelector({SELECTOR!r});
  return point && point.getBoundingClientRect().width > 0 ? performance.now() : false;
}}"""
"""Checked at every animation frame: the page's time (ms since its navigation started) once the
chart's first point is laid out. Playwright's own `wait_for_selector` checks at 0, 20, 50, 100,
100 then every 500 ms (`retryWithProgressAndBackoff` in its driver), which would add up to half a
second to what is measured."""

FLOOR_LOADED = "performance.getEntriesByType('navigation')[0].loadEventEnd"
"""The floor page's time from its navigation's start until it loaded, ms: both figures are the
page's own clock from the same start."""

STAND_IN = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>chart stand-in</title></head>
<body><figure id="chart"></figure>
<script>
const token = new URLSearchParams(location.hash.slice(1)).get("token");
const last = new URLSearchParams(location.search).get("last") || "10";
const agent = location.pathname.split("/")[2];
fetch(`/api/v1/agents/${encodeURIComponent(agent)}/eval-runs/chart?last=${last}`,
      {headers: {Authorization: `Bearer ${token}`}})
  .then(r => r.json())
  .then(chart => { document.getElementById("chart").innerHTML = chart.svg; });
</script></body></html>"""
"""What the console page does for the chart, and nothing else."""


def _history(template: Any, count: int, datasets: list[str], seed: int = 15) -> list[Any]:
    """`count` completed copies of `template`, a minute apart and older than it, alternating over
    `datasets`: a pass rate drawn around 0.7, a tenth of them drafts, about a quarter with
    confirmed regressions and a quarter with confirmed fixes (so some with both)."""
    from chalicelib.clock import iso, parse_iso

    rng = random.Random(seed)
    created = parse_iso(template.created_at)
    outcome = template.outcome
    assert outcome is not None and outcome.comparison is not None
    out = []
    for i in range(count):
        at = created - timedelta(minutes=count - i)
        total = outcome.total
        passed = max(0, min(total, round(rng.gauss(0.7, 0.1) * total)))
        broke = rng.randint(1, 3) if rng.random() < 0.25 else 0
        fixed = rng.randint(1, 4) if rng.random() < 0.25 else 0
        comparison = outcome.comparison.model_copy(
            update={"confirmed_regressions": broke, "confirmed_fixes": fixed}
        )
        kept = outcome.model_copy(
            update={
                "passed": passed,
                "failed": total - passed,
                "pass_rate": passed / total,
                "comparison": comparison,
            }
        )
        draft = rng.random() < 0.1
        arms = tuple(
            replace(a, draft=True, version=None) if draft and a.arm_id == "candidate" else a
            for a in template.arms
        )
        out.append(
            replace(
                template,
                run_id=f"run_chart_{i:06d}",
                dataset_id=datasets[i % len(datasets)],
                created_at=iso(at),
                started_at=iso(at),
                completed_at=iso(at + timedelta(seconds=30)),
                draft=draft,
                resolved_version=None if draft else template.resolved_version,
                candidate="draft" if draft else template.candidate,
                arms=arms,
                outcome=kept,
            )
        )
    return out


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def _browser_times(
    page_url: str, floor_url: str, *, repeat: int, stand_in: bool
) -> tuple[list[float], list[float]]:
    """Seconds from the start of the navigation until the chart's first point is laid out, and
    until the floor's page loaded, by the page's own clock, `repeat` of each, taken in turn."""
    from playwright.sync_api import sync_playwright

    chart_s: list[float] = []
    floor_s: list[float] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for round_ in range(repeat + 1):  # the first round warms the browser up
                context = browser.new_context()
                page = context.new_page()
                page.goto(floor_url, wait_until="load")
                floor = float(page.evaluate(FLOOR_LOADED)) / 1000
                context.close()

                context = browser.new_context()
                page = context.new_page()
                if stand_in:
                    page_path = page_url.split("#")[0].split("?")[0]
                    page.route(
                        page_path + "*",
                        lambda route: route.fulfill(
                            status=200, content_type="text/html", body=STAND_IN
                        ),
                    )
                response = page.goto(page_url, wait_until="commit")
                if response is not None and response.status >= 400:
                    raise RuntimeError(
                        f"{page_url.split('#')[0]} answered {response.status}: the console page"
                        " is not there; --stand-in measures the chart with a minimal page"
                    )
                shown_ms = page.wait_for_function(SHOWN, polling="raf", timeout=60_000).json_value()
                took = float(shown_ms) / 1000
                points = page.locator(SELECTOR).count()
                context.close()
                if round_:
                    chart_s.append(took)
                    floor_s.append(floor)
        finally:
            browser.close()
    print(f"  the page showed {points} points")
    return chart_s, floor_s


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--stand-in", action="store_true", help="a minimal page, not the console")
    parser.add_argument("--no-browser", action="store_true", help="the API figures only")
    args = parser.parse_args(argv)

    from assay_local.stack import EmbeddedStack
    from bench.client import api_caller
    from bench.history import write_history
    from chalicelib import bootstrap
    from chalicelib.api.common import issue_token

    org, user = "org_bench", "bench@assay.local"
    with EmbeddedStack(workers=2, scheduler=False) as stack:
        call = api_caller(stack, org, user, timeout=900)
        cases = [
            {"case_id": f"c{i}", "input": f"question {i}", "reference": "42"} for i in range(20)
        ]
        datasets = []
        for name in ("GSM8K test", "Arithmetic holdout"):
            ds = call("POST", "/api/v1/datasets", json={"name": name})["dataset_id"]
            body = {"scoring": {"required": ["equals"]}, "cases": cases}
            call("POST", f"/api/v1/datasets/{ds}/versions", json=body)
            datasets.append(ds)
        spec = {"runtime": "python", "entrypoint": "bench.agents:sleepy", "model": "bench-model"}
        agent_id = call(
            "POST", "/api/v1/agents", json={"name": "charted", "spec": {**spec, "options": {}}}
        )["agent_id"]
        for options in ({}, {"answers": {"c3": "7", "c4": "7"}}):
            draft = {"spec": {**spec, "options": {"sleep_ms": 0, **options}}}
            call("PUT", f"/api/v1/agents/{agent_id}/draft", json=draft)
            call("POST", f"/api/v1/agents/{agent_id}/versions", json={})
        body = {
            "dataset_id": datasets[0],
            "candidate": "version",
            "version": 2,
            "paired_baseline": True,
        }
        first = call("POST", f"/api/v1/agents/{agent_id}/eval-runs", json=body)
        while call("GET", f"/api/v1/eval-runs/{first['run_id']}/progress")["status"] in (
            "queued",
            "running",
        ):
            time.sleep(0.05)
        template = bootstrap.container().runs.get(org, first["run_id"])
        if template is None or template.status != "completed":
            raise RuntimeError("the template run did not complete")
        t0 = time.monotonic()
        write_history(_history(template, args.runs, datasets))
        wrote_s = time.monotonic() - t0
        print(f"{args.runs} runs written in {wrote_s:.1f} s (plus the one real run)", flush=True)

        api_ms: dict[str, float] = {}
        answer = {}
        for last in ("all", "10"):
            path = f"/api/v1/agents/{agent_id}/eval-runs/chart?last={last}"
            call("GET", path)  # warm
            samples = []
            for _ in range(args.repeat):
                t = time.monotonic()
                answer[last] = call("GET", path)
                samples.append(time.monotonic() - t)
            api_ms[last] = _median_ms(samples)
            a = answer[last]
            print(
                f"chart API last={last}: median {api_ms[last]:.0f} ms, fastest"
                f" {min(samples) * 1000:.0f} ms over {args.repeat} calls"
                f"  [measured {a['measured']}, shown {a['shown']}, svg {len(a['svg']):,} bytes]",
                flush=True,
            )

        if not args.no_browser:
            s = stack.settings
            token = issue_token(org, user, secret=s.assay_jwt_secret, issuer=s.assay_jwt_issuer)
            page_url = f"{stack.api_url}/agents/{agent_id}?last=all#token={token}"
            chart_s, floor_s = _browser_times(
                page_url,
                f"{stack.api_url}/openapi.json",
                repeat=args.repeat,
                stand_in=args.stand_in,
            )
            chart, floor = _median_ms(chart_s), _median_ms(floor_s)
            target = "met" if chart < 1000 else "NOT met"
            print(
                f"browser ({'stand-in page' if args.stand_in else 'console page'}, last=all):"
                f" chart visible after median {chart:.0f} ms (fastest {min(chart_s) * 1000:.0f}"
                f" ms); floor (openapi.json) median {floor:.0f} ms; ratio {chart / floor:.1f}x;"
                f" target < 1 s: {target}"
            )
    print(
        f"machine: {platform.machine()} {os.cpu_count()} cores, Python"
        f" {platform.python_version()}, load average {os.getloadavg()[0]:.2f}"
    )
    print(
        f"command: python -m bench.console_chart --runs {args.runs} --repeat {args.repeat}"
        f"{' --stand-in' if args.stand_in else ''}{' --no-browser' if args.no_browser else ''}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
