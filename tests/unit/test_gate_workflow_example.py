"""The GitHub Actions example (`examples/assay-gate.github-actions.yml`) sets up and gates the
agent with the `assay` command alone: no step calls curl or the API by hand, and every `assay`
command it names is one the CLI has (its `--help` answers)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from assay_local.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "assay-gate.github-actions.yml"


def _scripts() -> list[str]:
    doc = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    return [step["run"] for job in doc["jobs"].values() for step in job["steps"] if "run" in step]


def _commands() -> list[list[str]]:
    found = re.findall(r"\bassay ([a-z][a-z-]*)(?: ([a-z][a-z-]*)\b)?", "\n".join(_scripts()))
    return [[group, action] if action else [group] for group, action in found]


def test_no_step_calls_the_api_by_hand() -> None:
    for script in _scripts():
        assert "curl" not in script and "/api/v1" not in script and "wget" not in script


def test_it_creates_drafts_gates_and_publishes_with_the_cli() -> None:
    named = {" ".join(c) for c in _commands()}
    assert {"agents show", "agents draft", "agents create", "run", "agents publish"} <= named


@pytest.mark.parametrize("command", _commands(), ids=lambda c: " ".join(c))
def test_every_assay_command_it_names_exists(command: list[str], capsys) -> None:
    with pytest.raises(SystemExit) as ended:
        main([*command, "--help"])
    assert ended.value.code == 0
    assert "usage: assay " + " ".join(command) in capsys.readouterr().out
