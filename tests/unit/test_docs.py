"""The README is a front door and the site under docs/ is complete: a README of at most 12 KiB that
gives the two commands first and links only to files that exist; no page cites a document a
reader does not have; every page is in the site's navigation; and the generated references
(`docs/hooks.py`) name every route of the OpenAPI document and every subcommand of `assay`.

`make docs` (in `make test`) builds the site with `mkdocs build --strict`, which also fails on a
broken link or anchor; these tests say what each rule is, and run in `make test-fast` too."""

from __future__ import annotations

import argparse
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest
import yaml

import app
from chalicelib.api import openapi
from chalicelib.config import Settings
from chalicelib.domain.access import PERMISSIONS, ROLES

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"

README_MAX_BYTES = 12_288
CITATION = re.compile(
    r"\bseed ?0\d\d|\bseed[s]/|\bDESIGN\.md|\bDESIGN[ ]§|\bSTYLE\.md", re.IGNORECASE
)
"""A citation of a spec or design document by file name."""
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hooks = _hooks()


@pytest.fixture(scope="module")
def document() -> dict:
    return openapi.build(app.app)


@pytest.fixture(scope="module")
def parser() -> argparse.ArgumentParser:
    return hooks.assay_parser()


def _pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def _nav_pages(nav: list) -> list[str]:
    found: list[str] = []
    for entry in nav:
        values = entry.values() if isinstance(entry, dict) else [entry]
        for value in values:
            found += _nav_pages(value) if isinstance(value, list) else [value]
    return found


def _mkdocs_config() -> dict:
    class Loader(yaml.SafeLoader):
        """The safe loader, reading MkDocs' `!!python/name:` tags as their names."""

    Loader.add_multi_constructor(
        "tag:yaml.org,2002:python/name:", lambda loader, suffix, node: suffix
    )
    return yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)


def test_the_readme_is_at_most_12_kib():
    size = len(README.read_bytes())
    assert size <= README_MAX_BYTES, f"README.md is {size:,} bytes; move detail into docs/"


def test_the_readme_gives_make_demo_and_make_test_in_its_first_40_lines():
    head = "\n".join(README.read_text(encoding="utf-8").splitlines()[:40])
    assert "make demo" in head and "make test" in head


def test_the_readme_keeps_the_locked_install_in_view():
    text = README.read_text(encoding="utf-8")
    for words in ("make setup", "make lock", "requirements.lock", "pip install -c"):
        assert words in text, words


def test_every_relative_link_of_the_readme_points_at_a_file_that_exists():
    links = LINK.findall(README.read_text(encoding="utf-8"))
    relative = [link for link in links if not re.match(r"^(https?:|mailto:|#)", link)]
    assert relative, "the README links into docs/"
    missing = [link for link in relative if not (ROOT / link.split("#", 1)[0]).is_file()]
    assert not missing, missing


def test_the_readme_links_into_the_docs_by_relative_links_only():
    links = LINK.findall(README.read_text(encoding="utf-8"))
    assert any(link.startswith("docs/") and link.endswith(".md") for link in links)
    assert not [link for link in links if link.startswith("/")], "absolute paths break on GitHub"


def test_no_page_cites_a_spec_or_design_document_by_file_name(document, parser):
    texts = {"README.md": README.read_text(encoding="utf-8")}
    texts |= {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in _pages()}
    texts[hooks.API_PAGE] = hooks.api_page(document)
    texts[hooks.CLI_PAGE] = hooks.cli_page(parser)
    found = [
        f"{name}:{n}: {line.strip()}"
        for name, text in texts.items()
        for n, line in enumerate(text.splitlines(), 1)
        if CITATION.search(line)
    ]
    assert not found, "\n".join(found)


def test_every_page_is_in_the_navigation_and_every_entry_is_a_page():
    nav = _nav_pages(_mkdocs_config()["nav"])
    on_disk = {str(p.relative_to(DOCS)) for p in _pages()}
    generated = {hooks.API_PAGE, hooks.CLI_PAGE}
    assert on_disk - set(nav) == set(), "pages missing from nav"
    assert set(nav) - on_disk - generated == set(), "nav entries with no page"
    assert len(nav) == len(set(nav))


def test_the_site_has_concepts_guides_reference_and_architecture():
    sections = [next(iter(e)) for e in _mkdocs_config()["nav"] if isinstance(e, dict)]
    assert {"Concepts", "Guides", "Reference", "Architecture"} <= set(sections)


def test_the_api_reference_names_every_route_of_the_openapi_document(document):
    page = hooks.api_page(document)
    routes = [
        (method.upper(), path) for path, methods in document["paths"].items() for method in methods
    ]
    assert len(routes) > 50
    missing = [f"{m} {p}" for m, p in routes if f"\n### {m} {p}\n" not in page]
    assert not missing, missing
    for name in document["components"]["schemas"]:
        assert f"\n### {name}\n" in page, name


def test_the_api_reference_gives_parameters_and_request_body_fields(document):
    page = hooks.api_page(document)
    start = page.index("### POST /api/v1/agents/{agent_id}/eval-runs\n")
    section = page[start : page.index("\n### ", start + 1)]
    assert "| `agent_id` | path |" in section
    assert "**Request body** (required): [StartRun](#startrun)" in section
    body = page[page.index("### StartRun\n") :]
    assert "| `dataset_id` |" in body and "| `paired_baseline` | boolean | no |" in body


def _walk(parser: argparse.ArgumentParser) -> list[str]:
    """Every subcommand's full name under `parser` ("assay suites run"), read from argparse."""
    found: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += [sub.prog, *_walk(sub)]
    return found


def test_the_cli_reference_names_every_subcommand(parser):
    page = hooks.cli_page(parser)
    commands = _walk(parser)
    assert {"assay run", "assay gate", "assay import", "assay dev", "assay suites run"} <= set(
        commands
    )
    missing = [c for c in commands if not re.search(rf"^#+ {re.escape(c)}$", page, re.M)]
    assert not missing, missing


def test_the_cli_reference_gives_each_flag_of_a_command(parser):
    page = hooks.cli_page(parser)
    section = page[page.index("## assay run\n") : page.index("## assay gate\n")]
    for flag in ("--dataset DATASET", "--draft", "--paired-baseline", "--min-pass-rate"):
        assert f"`{flag}" in section, flag
    assert "usage: assay run" in section


def test_the_access_matrix_is_the_roles_permissions():
    text = (DOCS / "reference" / "access.md").read_text(encoding="utf-8")
    header = next(line for line in text.splitlines() if line.startswith("| permission |"))
    roles = [cell.strip(" `") for cell in header.strip("|").split("|")[1:-1]]
    assert roles == list(ROLES)
    rows = {
        m.group(1): [cell.strip() for cell in m.group(2).split("|")][: len(roles)]
        for m in re.finditer(r"^\| `([a-z]+:[a-z]+)` \|(.*)\|$", text, re.M)
    }
    assert list(rows) == list(PERMISSIONS)
    for permission, cells in rows.items():
        held = {role for role, cell in zip(roles, cells, strict=True) if cell == "✓"}
        assert held == {r for r in roles if permission in ROLES[r]}, permission


def test_every_setting_is_documented():
    text = (DOCS / "reference" / "settings.md").read_text(encoding="utf-8")
    missing = [name.upper() for name in Settings.model_fields if f"`{name.upper()}`" not in text]
    assert not missing, missing


def test_a_citation_in_a_docstring_is_left_out_of_the_generated_pages():
    # `\x20` is a space: the citations are spelled so that this file cites nothing itself.
    assert hooks.plain("Run the version before (seed\x20004).") == "Run the version before."
    assert hooks.plain('The chart, as SVG (seed\x20004 "In the') == "The chart, as SVG"
    assert hooks.plain("A body over the limit (README, Limits).") == (
        "A body over the limit (see Limits)."
    )
