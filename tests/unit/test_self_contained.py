"""A bare clone runs: nothing in the repository reads or names a path outside it, and nothing in it
(the README, docs/, the code's docstrings and comments) cites a document a user lacks: a rule is
stated in assay's own words or points at the docs/ page that states it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

OUTSIDE = re.compile(r"\.\./shared|\bshared/(data|seeds|hooks|DESIGN|STYLE)")
"""A path to the workplace folder beside the repository, which a user's clone does not have."""

CITATION = re.compile(
    r"\bseed ?0\d\d|\bseed[s]/|\bDESIGN\.md|\bDESIGN[ ]§|\bSTYLE\.md", re.IGNORECASE
)
"""A citation of a design or spec document by file name."""


def _tracked() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True
    ).stdout.decode()
    return [ROOT / name for name in out.split("\0") if name]


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
        return None


def test_no_tracked_file_names_a_path_outside_the_repository():
    me = Path(__file__).resolve()
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in _tracked()
        if path.resolve() != me and (text := _text(path)) is not None
        for n, line in enumerate(text.splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert not found, "\n".join(found)


def test_no_tracked_file_cites_a_spec_or_design_document_by_file_name():
    data = ROOT / "examples" / "gsm8k"  # the dataset's own text is not ours to rewrite
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in _tracked()
        if data not in path.parents and (text := _text(path)) is not None
        for n, line in enumerate(text.splitlines(), 1)
        if CITATION.search(line)
    ]
    assert not found, "\n".join(found)


def test_the_demo_data_is_in_the_repository():
    data = ROOT / "examples" / "gsm8k"
    for name in ("test.jsonl", "example_model_solutions.jsonl", "LICENSE"):
        assert (data / name).is_file(), name
    assert len((data / "test.jsonl").read_text(encoding="utf-8").splitlines()) == 1319
