"""Install what you use (issue 13 scope 7): `pip install assay` is the client, without moto; the
embedded stack is the `local` extra, which `dev` (and so `make demo`, `make test`) includes.

The stack commands (`demo`, `dev`, `bench`) refuse in one line naming the extra when moto is
missing, before anything starts.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from assay_local.extras import LOCAL_EXTRA, STACK_COMMANDS

ROOT = Path(__file__).resolve().parents[2]
STACK_ONLY = {"moto", "flask", "werkzeug", "cfn-lint", "flask-cors", "docker", "sympy"}
"""What moto's server brings: none of it belongs in the client's install (545 MB before)."""


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _name(requirement: str) -> str:
    return re.match(r"[A-Za-z0-9_.-]+", requirement).group(0).lower()


def test_the_base_install_declares_no_package_of_the_embedded_stack():
    project = _project()
    assert not {_name(d) for d in project["dependencies"]} & STACK_ONLY
    extras = project["optional-dependencies"]
    assert [d for d in extras["local"] if _name(d) == "moto"] == ["moto[server]>=5.2.5,<5.3"]
    assert "assay[local]" in extras["dev"]  # the tests start the embedded stack


def test_pip_resolves_the_client_install_without_moto_flask_or_cfn_lint(tmp_path):
    """What `pip install .` would install, as pip resolves it (a dry run: nothing is installed)."""
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet"]
        + ["--report", str(report), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    names = {
        i["metadata"]["name"].lower().replace("_", "-")
        for i in json.loads(report.read_text())["install"]
    }
    assert {"assay", "chalice", "boto3", "rich", "aws-lambda-powertools"} <= names
    assert not names & STACK_ONLY, sorted(names & STACK_ONLY)


def test_make_installs_the_local_extra_for_the_demo_and_the_tests():
    makefile = (ROOT / "Makefile").read_text()
    assert "pip install --quiet -c requirements.lock -e '.[local,dev]'" in makefile
    assert re.search(r"^demo: setup$", makefile, re.M) and re.search(
        r"^test: lint docs browser$", makefile, re.M
    )
    assert re.search(r"^lint: setup$", makefile, re.M)
    assert re.search(r"^docs: setup$", makefile, re.M)
    assert "mkdocs build --strict --site-dir test-output/site" in makefile
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def _without_moto(argv: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    """`assay <argv>` in a fresh interpreter where `import moto` fails, as after `pip install .`."""
    code = (
        "import sys; sys.modules['moto'] = None; "  # a None entry makes every import of it fail
        "from assay_local.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    environ = {k: v for k, v in os.environ.items() if k != "AWS_ENDPOINT_URL"} | env
    return subprocess.run(
        [sys.executable, "-c", code, *argv],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_each_stack_command_refuses_in_one_line_naming_the_local_extra_when_moto_is_missing():
    assert set(STACK_COMMANDS) == {"demo", "dev", "bench"}
    for command in STACK_COMMANDS:
        done = _without_moto([command])
        assert done.returncode == 2, (command, done.stderr[-2000:])  # cannot start
        assert done.stdout == ""
        assert done.stderr.splitlines() == [
            f"assay {command}: the embedded stack (moto) is not installed: {LOCAL_EXTRA}"
        ]
        assert "pip install 'assay[local]'" in done.stderr


def test_the_client_commands_work_without_moto():
    done = _without_moto(["token", "--org", "acme", "--user", "me"])
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count(".") == 2  # a JWT: header.claims.signature


def _locked() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (ROOT / "requirements.lock").read_text(encoding="utf-8").splitlines():
        found = re.match(r"([A-Za-z0-9_.-]+)==([^\s;]+)", line)
        if found:
            pins[re.sub(r"[-_.]+", "-", found.group(1)).lower()] = found.group(2)
    return pins


def test_the_lock_pins_every_declared_requirement_within_its_range():
    """`make setup` installs requirements.lock; a range changed without `make lock` fails here."""
    from packaging.requirements import Requirement

    project = _project()
    declared = [*project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        declared += [d for d in extra if not d.startswith("assay[")]
    pins = _locked()
    wrong = []
    for text in declared:
        req = Requirement(text)
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        if name not in pins or not req.specifier.contains(pins[name], prereleases=True):
            wrong.append(f"{text}: locked {pins.get(name)}")
    assert not wrong, "run make lock: " + "; ".join(wrong)
    assert "pip" in pins  # chalice needs a pip it supports: the lock holds pip itself


def test_the_lambda_requirements_agree_with_the_project_dependencies():
    """What Chalice bundles (requirements.txt) is the project's dependency list with the same
    ranges, less what only the CLI prints with (rich) and Chalice itself."""
    lambda_reqs = [
        line.split("#")[0].strip()
        for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
        if line.split("#")[0].strip()
    ]
    declared = [d for d in _project()["dependencies"] if _name(d) not in {"chalice", "rich"}]
    assert sorted(lambda_reqs) == sorted(declared)
