"""The typed client (`assay.client`) covers the OpenAPI document, and only it (issue 13, scope 2):
every route and method the document lists for people and pipelines has a client method, every
client method names a route the document lists, with the same path parameters as the method
takes."""

from __future__ import annotations

import inspect
import re

import httpx
import pytest

import app
from assay import client
from assay.client import OPERATIONS, ApiError, ApiUnreachable, AssayClient
from chalicelib.api import openapi


def _documented() -> set[tuple[str, str]]:
    """Every route a person or a pipeline calls: not those an agent calls during an eval attempt
    with its attempt's tool token (the tool gateway), which the client has no token for."""
    document = openapi.build(app.app)
    return {
        (method.upper(), path)
        for path, ops in document["paths"].items()
        for method, op in ops.items()
        if op.get("security") != [{"toolToken": []}]
    }


def test_every_documented_route_has_a_client_method_and_no_method_names_another() -> None:
    documented = _documented()
    assert sorted(documented - set(OPERATIONS)) == [], "routes without a client method"
    assert sorted(set(OPERATIONS) - documented) == [], "client methods of no route"


def test_no_two_parts_of_the_client_name_a_method_alike() -> None:
    # One part's method would hide the other's (the first base class wins).
    seen: dict[str, str] = {}
    clashes = []
    for part in AssayClient.__bases__:
        for name, value in vars(part).items():
            if callable(value) and not name.startswith("__"):
                if name in seen:
                    clashes.append((name, seen[name], part.__name__))
                seen[name] = part.__name__
    assert clashes == []


@pytest.mark.parametrize("route", sorted(OPERATIONS))
def test_a_methods_arguments_start_with_its_paths_parameters(route: tuple[str, str]) -> None:
    _, path = route
    method = getattr(AssayClient, OPERATIONS[route])
    wanted = re.findall(r"\{(\w+)\}", path)
    params = [
        p.name
        for p in inspect.signature(method).parameters.values()
        if p.kind is p.POSITIONAL_OR_KEYWORD and p.name != "self"
    ]
    assert params[: len(wanted)] == wanted


def _fake(handler):  # noqa: ANN001, ANN202 - a test transport
    return AssayClient("http://assay.test", "tok", transport=httpx.MockTransport(handler))


def test_ids_are_quoted_as_one_segment_and_none_fields_are_left_out() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"ok": True})

    api = _fake(handler)
    api.start_run("a/b#c", dataset_id="ds", candidate="draft", reruns=None)
    assert seen[0].url.raw_path == b"/api/v1/agents/a%2Fb%23c/eval-runs"
    assert seen[0].headers["authorization"] == "Bearer tok"
    assert seen[0].read() == b'{"dataset_id":"ds","candidate":"draft"}'


def test_an_error_answer_raises_with_its_code_field_and_request_id() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            400,
            json={"error": {"code": "invalid_input", "message": "bad", "field": "dataset_id"}},
            headers={"X-Request-Id": "req-1"},
        )

    with pytest.raises(ApiError) as caught:
        _fake(handler).get_run("r1")
    err = caught.value
    assert (err.status, err.code, err.field, err.request_id) == (
        400,
        "invalid_input",
        "dataset_id",
        "req-1",
    )
    assert "dataset_id" in str(err) and "req-1" in str(err)


def test_no_answer_raises_unreachable() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with pytest.raises(ApiUnreachable):
        _fake(handler).progress("r1")


def test_cases_follow_next_cursor_until_the_last_page() -> None:
    pages = {
        None: {"cases": [{"case_id": "a"}, {"case_id": "b"}], "next_cursor": "k2"},
        "k2": {"cases": [{"case_id": "c"}], "next_cursor": None},
    }

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=pages[request.url.params.get("cursor")])

    assert [c["case_id"] for c in _fake(handler).cases("r1")] == ["a", "b", "c"]


def test_the_client_package_imports_neither_the_service_nor_the_embedded_stack() -> None:
    source = inspect.getsource(client)
    assert "chalicelib" not in source.replace("assay.client", "") and "assay_local" not in source
