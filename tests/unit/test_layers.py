"""The Lambda package holds the service only (issue 10 scope 4): `app.py` and `chalicelib/` - what
`chalice package` bundles with `requirements.txt` - import nothing of the local stack, the command
line, the infrastructure definitions, the benchmarks or the tests, nor what only those need."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OUTSIDE_THE_LAMBDA = ("assay_local", "infra", "bench", "tests", "moto", "rich", "mcp")
"""Top-level packages the deployed service never imports: ours that stay on a machine, and the
libraries `requirements.txt` leaves out (moto and rich serve the local stack and the CLI; the MCP
SDK only the tests: the service's MCP client and server are its own)."""


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """`(line, module)` of every import in `path`, at any depth (a function's own imports too)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def service_files() -> list[Path]:
    return [ROOT / "app.py", *sorted((ROOT / "chalicelib").rglob("*.py"))]


def test_the_service_files_are_found():
    names = {p.relative_to(ROOT).as_posix() for p in service_files()}
    assert {"app.py", "chalicelib/bootstrap.py", "chalicelib/domain/scorers.py"} <= names
    assert (
        not (ROOT / "chalicelib" / "local").exists()
        and not (ROOT / "chalicelib" / "cli.py").exists()
    )


@pytest.mark.parametrize("path", service_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_the_service_imports_nothing_that_stays_outside_the_lambda_package(path):
    wrong = [
        (line, module)
        for line, module in imported_modules(path)
        if module.split(".")[0] in OUTSIDE_THE_LAMBDA
    ]
    assert wrong == [], f"{path.relative_to(ROOT)} imports {wrong}"


def test_the_check_sees_imports_inside_functions(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "def f():\n    from infra.resources import bootstrap\n    import moto.server\n"
    )
    assert imported_modules(sample) == [(2, "infra.resources"), (3, "moto.server")]
