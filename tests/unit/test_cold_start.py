"""What a Lambda imports as it starts (issue 12 scope 3), checked without timing anything.

Each test starts a fresh interpreter the way the Lambda runtime starts a function - import the
module of its handler string, get the handler - as a deployed stage (`AWS_LAMBDA_FUNCTION_NAME`
set, a real signing secret), and looks at `sys.modules` afterwards. An event handler on a
blueprint has the handler string `<blueprint module>.<function>` (Chalice), so its Lambda never
imports `app.py`. `bench/coldimport.py` gives the times.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chalicelib import names
from chalicelib.api.lazy import LazyModule
from chalicelib.config import DEV_JWT_SECRET

ROOT = Path(__file__).resolve().parents[2]

HEAVY = (
    "httpx",
    "jsonschema",
    "referencing",
    "regex",
    "croniter",
    "scipy",
    "jwt",
    "cryptography",
    "aws_lambda_powertools",  # JSON logs and EMF metrics: at the first invocation (telemetry)
)
"""Libraries a start must not import: each is imported where it is first needed."""

AWS = ("boto3", "botocore", "pynamodb")
"""Clients are built on first use (`bootstrap`), never as a module is imported."""

GONE = ("pydantic_settings",)
"""No longer a dependency: `Settings` reads its variables itself."""

BUS = "chalicelib.services.messagebus"
"""The one service module every function imports as it starts (`startup.start` wires the bus)."""

AREAS = ("access", "agents", "connections", "org", "datasets", "runs", "secrets")
"""The route modules of `chalicelib.api.routes`, each binding its services and views lazily."""


def _handlers() -> dict[str, str]:
    from app import app

    return {e.name: e.handler_string for e in app.event_sources}


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`code` run by a fresh interpreter in the checkout, with none of this process's `ASSAY_*`
    or `AWS_LAMBDA*` variables, and `env` on top."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "AWS_LAMBDA"))}
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _start(handler: str, function_name: str, **env: str) -> subprocess.CompletedProcess[str]:
    module, _, attr = handler.rpartition(".")
    code = (
        "import importlib, json, sys; "
        f"getattr(importlib.import_module({module!r}), {attr!r}); "
        "print(json.dumps(sorted(sys.modules)))"
    )
    return _python(
        code,
        **{
            "AWS_LAMBDA_FUNCTION_NAME": function_name,
            "_HANDLER": handler,
            "ASSAY_JWT_SECRET": "s" * 40,
            **env,
        },
    )


def _modules(handler: str, function_name: str) -> set[str]:
    started = _start(handler, function_name)
    assert started.returncode == 0, started.stderr[-2000:]
    return set(json.loads(started.stdout.splitlines()[-1]))


def _loaded(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in packages)


def _case_worker() -> str:
    from app import app

    return next(
        e.handler_string
        for e in app.event_sources
        if getattr(e, "queue", None) == names.CASE_TASKS_QUEUE
    )


def test_the_case_worker_starts_without_app_the_routes_the_suites_or_heavy_libraries():
    modules = _modules(_case_worker(), "assay-dev-handle_case_task")
    assert "chalicelib.services.run_case" in modules  # what it is there for
    assert "app" not in modules
    assert not [m for m in modules if m.startswith("chalicelib.api")]
    assert "chalicelib.workers.handlers" not in modules  # agent events and the schedules
    assert not _loaded(modules, HEAVY + AWS + GONE)
    # the bus's table names every listener: it is imported by the first published event
    assert "chalicelib.services.event_handlers" not in modules
    assert "chalicelib.services.suites" not in modules
    # a run's outcome (its models, the comparison) is read and written only as the run ends
    assert "chalicelib.domain.outcome" not in modules
    assert "chalicelib.domain.compare" not in modules


def test_models_a_case_worker_starts_with_but_seldom_uses_are_built_at_their_first_use():
    code = (
        "import chalicelib.workers.cases; "
        "from chalicelib.domain import judge_rules, outcome; "
        "print(judge_rules.JudgeSpec.__pydantic_complete__, "
        "outcome.Outcome.__pydantic_complete__); "
        "import pydantic\ntry: outcome.Outcome.model_validate({})\n"
        "except pydantic.ValidationError: pass\n"
        "print(outcome.Outcome.__pydantic_complete__)"
    )
    started = _python(
        code, AWS_LAMBDA_FUNCTION_NAME="assay-dev-handle_case_task", ASSAY_JWT_SECRET="s" * 40
    )
    assert started.returncode == 0, started.stderr[-2000:]
    assert started.stdout.split() == ["False", "False", "True"]


def test_pydantic_looks_for_no_plugin_unless_the_operator_asks():
    code = "import os, chalicelib; print(os.environ['PYDANTIC_DISABLE_PLUGINS'])"
    assert _python(code).stdout.strip() == "__all__"
    assert _python(code, PYDANTIC_DISABLE_PLUGINS="0").stdout.strip() == "0"


@pytest.mark.parametrize("name", ["handle_dead_case", "handle_agent_event", "sweep_runs"])
def test_no_event_handler_imports_app_or_the_routes(name):
    modules = _modules(_handlers()[name], f"assay-dev-{name}")
    assert "app" not in modules
    assert not [m for m in modules if m.startswith("chalicelib.api")]
    assert not _loaded(modules, HEAVY + AWS + GONE)


def test_the_api_handler_starts_with_the_routes_and_no_service_view_worker_or_heavy_library():
    modules = _modules("app.app", "assay-dev")
    assert {"chalicelib.api.routes", "chalicelib.api.schemas"} <= modules
    assert not _loaded(modules, HEAVY + AWS + GONE)
    # each service and the views come with the first request that needs them
    assert "chalicelib.api.views" not in modules
    assert "chalicelib.api.run_views" not in modules
    assert not [m for m in modules if m.startswith("chalicelib.services.") and m != BUS]
    assert not [m for m in modules if m.startswith("chalicelib.workers")]


def test_the_api_function_serves_every_route_the_deployment_declares():
    """As the API function, `app.py` leaves the worker blueprints out; the routes (and the 405
    answers beside them) are the ones `chalice package` sees."""
    from app import app

    code = (
        "import json, app; "
        "print(json.dumps({p: sorted(v) for p, v in app.app.routes.items()})); "
        "print(len(app.app.event_sources))"
    )
    done = _python(
        code, AWS_LAMBDA_FUNCTION_NAME="assay-dev", _HANDLER="app.app", ASSAY_JWT_SECRET="s" * 40
    )
    assert done.returncode == 0, done.stderr[-2000:]
    routes, sources = done.stdout.splitlines()[-2:]
    assert json.loads(routes) == {p: sorted(v) for p, v in app.routes.items()}
    assert int(sources) == 0 and len(app.event_sources) == 5


@pytest.mark.parametrize(
    "module",
    [
        *(f"chalicelib.api.routes.{area}" for area in AREAS),
        "chalicelib.api.common",
    ],
)
def test_each_lazy_module_is_the_one_type_checking_imports(module):
    """`LazyModule("x.y")` stands for what `from x import y as name` imports under
    `TYPE_CHECKING`: the same name bound to the same module, and that module exists."""
    loaded = importlib.import_module(module)
    tree = ast.parse(Path(loaded.__file__ or "").read_text())
    typed: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom), ast.unparse(imp)
                for alias in imp.names:
                    typed[alias.asname or alias.name] = f"{imp.module}.{alias.name}"
    lazy = {k: v.name for k, v in vars(loaded).items() if isinstance(v, LazyModule)}
    assert lazy and lazy == typed
    for name in lazy.values():
        importlib.import_module(name)


def test_a_worker_started_alone_hears_its_events():
    """Lambda never imports `app.py` for a worker, so the worker's module wires the bus itself:
    its first published event loads the table every listener is named in."""
    code = (
        "import importlib, sys; "
        f"importlib.import_module({_case_worker().rpartition('.')[0]!r}); "
        "from chalicelib.services import messagebus; "
        "assert 'chalicelib.services.event_handlers' not in sys.modules; "
        "messagebus._wire_if_pending(); "  # what the first publish does first
        "from chalicelib.services.event_handlers import EVENT_HANDLERS; "
        "assert messagebus._handlers == {k: tuple(v) for k, v in EVENT_HANDLERS.items()}; "
        "print('wired')"
    )
    done = _python(code)
    assert done.returncode == 0 and done.stdout.strip() == "wired", done.stderr[-2000:]


@pytest.mark.parametrize("name", ["handle_case_task", "suite_tick"])
def test_a_deployed_worker_with_the_built_in_secret_refuses_to_start(name):
    """The check `app.py` makes for the API, made by the worker's own module (a worker Lambda never
    imports `app.py`)."""
    cold = _start(_handlers()[name], f"assay-dev-{name}", ASSAY_JWT_SECRET=DEV_JWT_SECRET)
    assert cold.returncode != 0
    assert "ConfigurationError" in cold.stderr and "built-in development secret" in cold.stderr


def test_the_deployment_chalice_builds_holds_every_function_with_its_handler(monkeypatch):
    """What `chalice package` and `chalice deploy` build from `app.py` (its application graph):
    the API function and one function per event handler, each handler a worker module's."""
    from chalice.cli.factory import CLIFactory
    from chalice.deploy import models
    from chalice.deploy.appgraph import ApplicationGraphBuilder, DependencyBuilder

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    config = CLIFactory(project_dir=str(ROOT)).create_config_obj(chalice_stage_name="dev")
    graph = ApplicationGraphBuilder().build(config, "dev")
    functions = {
        r.resource_name: r.handler
        for r in DependencyBuilder().build_dependencies(graph)
        if isinstance(r, models.LambdaFunction)
    }
    assert functions == {
        "api_handler": "app.app",
        "handle_case_task": "chalicelib.workers.cases.handle_case_task",
        "handle_dead_case": "chalicelib.workers.cases.handle_dead_case",
        "handle_agent_event": "chalicelib.workers.handlers.handle_agent_event",
        "sweep_runs": "chalicelib.workers.handlers.sweep_runs",
        "suite_tick": "chalicelib.workers.handlers.suite_tick",
    }
