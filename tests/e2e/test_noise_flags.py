"""A careless `--max-luck` or `--reruns` (docs/guides/ci-gate.md, docs/concepts/noise.md): refused
before anything is asked, exit 3, one `error:` line naming the flag and what would fix it."""

from __future__ import annotations

import pytest


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
