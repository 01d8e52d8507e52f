"""The OpenAPI 3.1 document (`chalicelib.api.openapi`, issue 11 scope 9) cannot drift from the
routes: it lists exactly the app's routes and methods, each view's body and query come from the
`Contract` the view is checked against, and the whole validates as OpenAPI 3.1."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest
from openapi_spec_validator import OpenAPIV31SpecValidator
from pydantic import BaseModel

import app
from chalicelib.api import openapi, query_schemas, routes
from chalicelib.api.common import CONTRACT_ATTRIBUTE, Query
from chalicelib.api.schemas import Body
from chalicelib.domain.enums import AttemptState, CaseOutcome

ROOT = Path(__file__).resolve().parents[2]


def _routes() -> set[tuple[str, str]]:
    """Every (path, method) a view of the app answers, less the 405 views."""
    return {
        (path, method)
        for path, views in app.app.routes.items()
        for method, entry in views.items()
        if openapi.documented(path, entry)
    }


def test_the_document_lists_every_route_and_method_and_nothing_else():
    document = openapi.build(app.app)
    documented = {
        (path, method.upper()) for path, ops in document["paths"].items() for method in ops
    }
    assert documented == _routes()
    assert len(documented) == 120  # 119 routes of the API and the document's own


def test_the_document_speaks_in_assays_own_words():
    """Operation ids and descriptions come from the code's names and docstrings: none may cite the
    work items or design notes behind them (users have neither)."""
    import json
    import re

    text = json.dumps(openapi.build(app.app))
    for pattern in (r"\bseed", r"\bissues? \d", r"\bscope \d", r"DESIGN\.md", r"\.\./shared"):
        found = [
            text[max(0, m.start() - 60) : m.end() + 40] for m in re.finditer(pattern, text, re.I)
        ]
        assert not found, (pattern, found[:3])


def test_the_document_validates_as_openapi_3_1():
    document = openapi.build(app.app)
    assert document["openapi"] == "3.1.0"
    errors = [str(e) for e in OpenAPIV31SpecValidator(document).iter_errors()]
    assert errors == []


def test_every_view_is_wrapped_so_it_is_checked_and_documented():
    for path, views in app.app.routes.items():
        for method, entry in views.items():
            if not openapi.documented(path, entry):
                continue
            assert hasattr(entry.view_function, CONTRACT_ATTRIBUTE), (method, path)


def test_no_view_reads_the_request_itself():
    """A view that read `current_request` could take a body or parameter the document does not
    list; every view gets its body and query from its contract."""
    source = inspect.getsource(routes)
    assert "current_request" not in source.replace("bp.current_app", "")


def test_a_body_and_its_query_are_documented_from_their_models():
    document = openapi.build(app.app)
    create = document["paths"]["/api/v1/agents"]["post"]
    assert create["requestBody"]["required"] is True
    assert create["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/CreateAgent"
    }
    agent = document["components"]["schemas"]["CreateAgent"]
    assert agent["required"] == ["name", "spec"] and agent["additionalProperties"] is False
    assert agent["properties"]["name"]["description"] == "A person's name for the agent."
    publish = document["paths"]["/api/v1/agents/{agent_id}/versions"]["post"]
    assert publish["requestBody"]["required"] is False
    version = document["components"]["schemas"]["Publish"]["properties"]["version"]["anyOf"][0]
    assert version == {"type": "integer", "minimum": 1, "maximum": 2**31 - 1}
    events = document["paths"]["/api/v1/eval-runs/{run_id}/events"]["get"]["parameters"]
    assert [(p["name"], p["in"]) for p in events] == [
        ("run_id", "path"),
        ("after", "query"),
        ("wait", "query"),
        ("limit", "query"),
    ]
    assert events[3]["schema"] == {
        "default": 100,
        "description": "Attempts per answer.",
        "maximum": 1000,
        "minimum": 1,
        "type": "integer",
    }


def test_the_document_itself_needs_no_token_and_every_other_route_does():
    document = openapi.build(app.app)
    assert document["security"] == [{"bearer": []}]
    public = [
        (path, method)
        for path, ops in document["paths"].items()
        for method, op in ops.items()
        if op.get("security") == []
    ]
    assert public == [("/openapi.json", "get")]


def test_the_tool_gateway_takes_an_attempts_tool_token_not_a_persons():
    document = openapi.build(app.app)
    call = document["paths"]["/api/v1/gateway/{org_id}/{run_id}/{session_id}/tools/{tool_name}"]
    assert call["post"]["security"] == [{"toolToken": []}]
    assert {"401", "413"} <= set(call["post"]["responses"])
    assert call["post"]["requestBody"]["required"] is False
    schemes = document["components"]["securitySchemes"]
    assert schemes["toolToken"]["scheme"] == "bearer" and "bearerFormat" not in schemes["toolToken"]


def test_the_operator_s_route_takes_the_operator_key_not_a_tenant_s_token():
    document = openapi.build(app.app)
    limits = document["paths"]["/api/v1/organizations/{org_id}/limits"]["put"]
    assert limits["security"] == [{"operatorKey": []}]
    assert {"401", "413"} <= set(limits["responses"])
    schemes = document["components"]["securitySchemes"]
    assert schemes["operatorKey"]["scheme"] == "bearer" and "ASSAY_OPERATOR_KEY" in str(
        schemes["operatorKey"]["description"]
    )
    operator_routes = [
        (path, method)
        for path, ops in document["paths"].items()
        for method, op in ops.items()
        if op.get("security") == [{"operatorKey": []}]
    ]
    assert operator_routes == [("/api/v1/organizations/{org_id}/limits", "put")]


def test_the_outcome_filter_takes_every_comparison_outcome_and_settled_state():
    assert set(get_args(query_schemas.CaseFilter)) == {*CaseOutcome, *AttemptState}


def test_importing_the_app_builds_no_document():
    """A cold start that is never asked for the document does not pay for building it."""
    probe = "import sys, app; print('chalicelib.api.openapi' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


def _api_models() -> list[type[BaseModel]]:
    found = {Query, *Body.__subclasses__()}
    stack = list(found)
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in found:
                found.add(sub)
                stack.append(sub)
    return sorted(found, key=lambda m: m.__qualname__)


@pytest.mark.parametrize("model", _api_models(), ids=lambda m: m.__qualname__)
def test_each_api_field_is_described_by_its_docstring_as_pydantic_would(model):
    """The document reads the fields' docstrings itself (a model class no longer does as it is
    created: issue 12); what it reads is what pydantic's `use_attribute_docstrings` read."""
    from pydantic._internal._docs_extraction import extract_docstrings_from_cls

    expected: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if issubclass(cls, BaseModel) and cls.__module__.startswith("chalicelib.api."):
            expected.update(extract_docstrings_from_cls(cls, use_inspect=True))
    assert openapi.field_docstrings(model) == expected
    assert model.model_config.get("defer_build") is True  # built by its first request
