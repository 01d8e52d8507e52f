"""A careless `--max-luck` or `--reruns` (docs/guides/ci-gate.md, docs/concepts/noise.md): refused
before anything is asked, exit 3, one `error:` line naming the flag and what would fix it."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import cases, sleepy_spec


@pytest.mark.parametrize(
    "value", ["abc", "150%", "-1%", "-0.5", "nan", "inf", "", "%", "1e400", "0", "0%", "0.0"]
)
def test_a_malformed_max_luck_is_one_error_line_naming_the_flag(api, cli, value):
    """Refused before anything is asked, exit 3, one `error:` line naming the flag (under
    argparse's usage). A bound of 0 is refused too: no measured chance is ever 0, so it would
    make every confirmed regression inconclusive, with advice that no model could follow."""
    done = cli("gate", "run_doesnotexist0000", f"--max-luck={value}")
    assert done.code == 3, done
    said = [line for line in done.err.splitlines() if "error:" in line]
    assert len(said) == 1 and "--max-luck" in said[0], done.err
    assert "1%" in said[0] or "0-100%" in said[0], done.err  # what would fix it
    assert "Traceback" not in done.err


@pytest.mark.parametrize("value", ["AUTO", "Auto", "²", "1.5", "-1", "6", "10000000000000000000"])
def test_a_malformed_reruns_is_one_error_line_naming_the_flag(api, cli, value):
    done = cli("estimate", "agent_x", "--dataset", "ds_x", "--draft", f"--reruns={value}")
    assert done.code == 3, done
    said = [line for line in done.err.splitlines() if "error:" in line]
    assert len(said) == 1 and "--reruns" in said[0], done.err
    assert "0-5 or auto" in said[0], done.err


def test_reruns_auto_without_a_baseline_or_on_a_stability_run_is_one_line_exit_3(api, cli):
    ds = api.dataset(cases(2))
    agent = api.agent(sleepy_spec(), publish=1)
    for args in (
        ("run", agent, "--dataset", ds, "--draft", "--reruns", "auto", "--yes"),
        ("estimate", agent, "--dataset", ds, "--draft", "--reruns", "auto"),
        ("run", agent, "--dataset", ds, "--stability", "--reruns", "auto", "--yes"),
    ):
        done = cli(*args)
        assert done.code == 3, (args, done)
        said = [line for line in done.err.splitlines() if line.strip()]
        assert len(said) == 1 and "reruns" in said[0], (args, done.err)
        assert "Traceback" not in done.err
    assert api.ok("GET", f"/api/v1/eval-runs?agent_id={agent}")["runs"] == []


@pytest.mark.parametrize(
    "flag", [("--max-luck", "1%"), ("--min-pass-rate", "90%"), ("--timeout", "60")]
)
def test_a_gate_flag_on_run_without_wait_is_refused_before_anything_starts(api, cli, flag):
    """`assay run ... --max-luck 1% --yes` without `--wait` would start the run and exit 0
    whatever it finds: a CI step that forgot `--wait` would pass every regression. Refused, one
    line naming the flag and `--wait`, exit 3, nothing started."""
    ds = api.dataset(cases(2))
    agent = api.agent(sleepy_spec(), publish=1)
    done = cli("run", agent, "--dataset", ds, "--version", "1", *flag, "--yes")
    assert done.code == 3, done
    said = [line for line in done.err.splitlines() if line.strip()]
    assert len(said) == 1 and flag[0] in said[0] and "--wait" in said[0], done.err
    assert api.ok("GET", f"/api/v1/eval-runs?agent_id={agent}")["runs"] == []
