"""Connections and environments' test connections through the HTTP API and the CLI
(docs/guides/tools.md): saving one (its URL checked by egress), reading and removing it, what
keeps it from being removed, another organization seeing nothing, and specs whose tools name
connections.

Nothing here calls a connection: saving one sends no request. Egress resolves a saved URL's name,
so every test answers names with a stub resolver (`no_dns`): no DNS is asked, and a name the stub
does not know is accepted when saved (it would be checked again when called)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.e2e.conftest import cases, sleepy_spec
from tests.support.e2e import Api

SHOP = {"connection_id": "shop", "kind": "http", "url": "https://shop.example.com/tools"}


@pytest.fixture(autouse=True)
def no_dns(resolver):
    """Names answered by a stub that knows none (a test may install its own)."""
    return resolver({})


def _connect(api: Api, connection_id: str, **fields: Any) -> dict[str, Any]:
    body = {**SHOP, "connection_id": connection_id, **fields}
    status, made = api.call("POST", "/api/v1/connections", json=body)
    assert status == 201, made
    return made


def _tool_spec(*connection_ids: str) -> dict[str, Any]:
    """A `python` agent whose tools run on `connection_ids` (one write tool each)."""
    tools = [
        {"name": f"act_{i}", "effect": "write", "connection_id": cid}
        for i, cid in enumerate(connection_ids)
    ]
    return {**sleepy_spec(), "tools": tools}


def _error(answer: Any) -> dict[str, Any]:
    return answer["error"] if isinstance(answer, dict) else {}


# --- saving, reading, removing -------------------------------------------------------------


def test_a_connection_is_created_listed_read_and_deleted(api):
    api.ok("PUT", "/api/v1/secrets/shop-token", json={"value": "tok-0123456789abcdef"})
    made = _connect(api, "shop", auth_secret="shop-token", description="the shop's tools")
    assert made == {
        "connection_id": "shop",
        "kind": "http",
        "url": "https://shop.example.com/tools",
        "auth_secret": "shop-token",
        "description": "the shop's tools",
        "created_at": made["created_at"],
        "created_by": api.user_id,
    }
    assert made["created_at"].endswith("Z")
    mcp = _connect(api, "mail", kind="mcp", url="https://mail.example.com/mcp")
    assert (mcp["kind"], mcp["auth_secret"], mcp["description"]) == ("mcp", None, "")
    listed = api.ok("GET", "/api/v1/connections")["connections"]
    assert [c["connection_id"] for c in listed] == ["mail", "shop"]
    assert "tok-0123456789abcdef" not in json.dumps(listed)
    assert api.ok("GET", "/api/v1/connections/shop") == made

    status, taken = api.call("POST", "/api/v1/connections", json=SHOP)
    assert status == 409 and _error(taken)["field"] == "connection_id"

    status, body = api.call("DELETE", "/api/v1/connections/shop")
    assert (status, body) == (204, "")
    status, gone = api.call("GET", "/api/v1/connections/shop")
    assert status == 404 and _error(gone)["field"] == "connection_id"
    assert api.call("DELETE", "/api/v1/connections/shop")[0] == 404
    assert [c["connection_id"] for c in api.ok("GET", "/api/v1/connections")["connections"]] == [
        "mail"
    ]


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"token": "x"}, "token"),
        ({"kind": "grpc"}, "kind"),
        ({"url": "file:///etc/passwd"}, "url"),
        ({"auth_secret": "../other"}, "auth_secret"),
        ({"connection_id": "a/b"}, "connection_id"),
    ],
)
def test_a_connection_that_cannot_be_kept_is_a_400_naming_the_field(api, fields, field):
    status, refused = api.call("POST", "/api/v1/connections", json={**SHOP, **fields})
    assert status == 400, refused
    assert _error(refused)["field"] == field
    assert api.ok("GET", "/api/v1/connections")["connections"] == []


def test_egress_refuses_a_connection_to_a_private_or_metadata_address_when_saved(
    api, resolver, operator
):
    stub = resolver({"meta.test": ["169.254.169.254"], "shop.test": ["93.184.216.34"]})
    refused_urls = ["http://169.254.169.254/latest/meta-data/", "http://meta.test/tools"]
    for url in refused_urls:
        status, refused = api.call("POST", "/api/v1/connections", json={**SHOP, "url": url})
        assert status == 400, refused
        assert _error(refused)["field"] == "url"
        assert "metadata" in _error(refused)["message"]
    assert ("meta.test", 80) in stub.asked
    operator(assay_allow_private_network=False)
    status, refused = api.call(
        "POST", "/api/v1/connections", json={**SHOP, "url": "http://10.0.0.1/"}
    )
    assert status == 400 and _error(refused)["field"] == "url", refused
    assert "ASSAY_ALLOW_PRIVATE_NETWORK" in _error(refused)["message"]
    assert api.ok("GET", "/api/v1/connections")["connections"] == []
    assert _connect(api, "shop", url="https://shop.test/tools")["url"] == "https://shop.test/tools"


HOSTS_THAT_ARE_NO_HOSTNAME = [
    "http://%31%36%39.254.169.254/latest/meta-data/",
    "http://169%2e254%2e169%2e254/",
    "http://169.254.169.254%00.x/",
    "http://shop%2eexample.com/tools",
    "http://shop example.com/tools",
    "http://shop..example.com/tools",
    "http://.shop.example.com/tools",
    "https://shop.example.com../tools",
]
"""Hosts a hostile tester saved, to fail only at run time by DNS (issue 35)."""


@pytest.mark.parametrize("kind", ["http", "mcp"])
def test_a_host_that_is_no_hostname_or_address_is_a_400_at_save_before_any_lookup(
    api, resolver, kind
):
    stub = resolver({"shop.example.com": ["93.184.216.34"]})
    for url in HOSTS_THAT_ARE_NO_HOSTNAME:
        body = {**SHOP, "kind": kind, "url": url}
        status, refused = api.call("POST", "/api/v1/connections", json=body)
        assert status == 400, (url, refused)
        error = _error(refused)
        assert error["field"] == "url", error
        assert "is not a valid hostname or IP address" in error["message"], error
    assert stub.asked == []  # refused by its shape: no name was looked up
    assert api.ok("GET", "/api/v1/connections")["connections"] == []
    assert _connect(api, "shop", kind=kind, url="https://shop.example.com./tools")
    assert stub.asked == [("shop.example.com", 443)]


def test_an_agent_url_whose_host_is_no_hostname_is_a_400_naming_spec_url(api, resolver):
    stub = resolver({})
    for url in HOSTS_THAT_ARE_NO_HOSTNAME[:3]:
        spec = {"runtime": "http", "url": url}
        status, refused = api.call("POST", "/api/v1/agents", json={"name": "a", "spec": spec})
        assert status == 400 and _error(refused)["field"] == "spec.url", (url, refused)
        assert "is not a valid hostname or IP address" in _error(refused)["message"]
    assert stub.asked == []
    assert api.ok("GET", "/api/v1/agents")["agents"] == []


def test_another_organization_sees_none_of_them(api, new_api):
    _connect(api, "shop")
    other = new_api()
    _connect(other, "shop-test")
    for method in ("GET", "DELETE"):
        status, answer = other.call(method, "/api/v1/connections/shop")
        assert status == 404 and _error(answer)["field"] == "connection_id", answer
    assert [c["connection_id"] for c in other.ok("GET", "/api/v1/connections")["connections"]] == [
        "shop-test"
    ]
    status, answer = other.call(
        "POST",
        "/api/v1/environments",
        json={"environment_id": "prod", "test_connections": {"shop": "shop-test"}},
    )
    assert status == 404 and _error(answer)["field"] == "test_connections.shop", answer
    agent = other.call("POST", "/api/v1/agents", json={"name": "a", "spec": _tool_spec("shop")})
    assert agent[0] == 404 and _error(agent[1])["field"] == "spec.tools[0].connection_id"
    assert api.ok("GET", "/api/v1/connections/shop")["connection_id"] == "shop"


# --- what keeps a connection ---------------------------------------------------------------


def test_a_connection_a_queued_run_uses_cannot_be_removed_until_the_run_ends(api, frozen):
    _connect(api, "shop")
    _connect(api, "spare")
    agent = api.agent(_tool_spec("shop"))
    ds = api.dataset(cases(2))
    run = api.start(agent, ds)  # pollers paused: it stays queued
    status, refused = api.call("DELETE", "/api/v1/connections/shop")
    assert status == 409, refused
    assert _error(refused)["field"] == "connection_id"
    assert _error(refused)["run_ids"] == [run["run_id"]]
    assert run["run_id"] in _error(refused)["message"]
    assert api.call("DELETE", "/api/v1/connections/spare")[0] == 204
    api.ok("POST", f"/api/v1/eval-runs/{run['run_id']}/cancel")
    assert api.call("DELETE", "/api/v1/connections/shop")[0] == 204


def test_a_connection_an_environment_maps_cannot_be_removed(api):
    for cid in ("shop", "shop-test"):
        _connect(api, cid)
    env = api.ok(
        "POST",
        "/api/v1/environments",
        json={"environment_id": "prod", "test_connections": {"shop": "shop-test"}},
    )
    assert env["test_connections"] == {"shop": "shop-test"}
    for cid in ("shop", "shop-test"):
        status, refused = api.call("DELETE", f"/api/v1/connections/{cid}")
        assert status == 409, refused
        assert _error(refused)["environment_ids"] == ["prod"]
        assert "environment prod" in _error(refused)["message"]
    cleared = api.ok(
        "PUT", "/api/v1/environments/prod/test-connections", json={"test_connections": {}}
    )
    assert cleared["test_connections"] == {}
    assert api.call("DELETE", "/api/v1/connections/shop")[0] == 204


# --- test connections ----------------------------------------------------------------------


def test_test_connections_name_other_connections_of_the_organization(api):
    for cid in ("shop", "shop-test", "mail", "mail-test"):
        _connect(api, cid)
    api.ok("POST", "/api/v1/environments", json={"environment_id": "prod"})
    assert api.ok("GET", "/api/v1/environments/prod")["test_connections"] == {}
    path = "/api/v1/environments/prod/test-connections"

    status, unknown = api.call("PUT", path, json={"test_connections": {"shop": "nowhere"}})
    assert status == 404 and _error(unknown)["field"] == "test_connections.shop", unknown
    status, unknown = api.call("PUT", path, json={"test_connections": {"gone": "shop-test"}})
    assert status == 404 and _error(unknown)["field"] == "test_connections.gone", unknown
    status, itself = api.call("PUT", path, json={"test_connections": {"shop": "shop"}})
    assert status == 400 and _error(itself)["field"] == "test_connections.shop", itself
    status, extra = api.call("PUT", path, json={"test_connections": {}, "also": 1})
    assert status == 400 and _error(extra)["field"] == "also", extra
    status, missing = api.call("PUT", path, json={})
    assert status == 400 and _error(missing)["field"] == "test_connections", missing
    status, no_env = api.call(
        "PUT", "/api/v1/environments/nowhere/test-connections", json={"test_connections": {}}
    )
    assert status == 404 and _error(no_env)["field"] == "environment_id", no_env
    assert api.ok("GET", "/api/v1/environments/prod")["test_connections"] == {}

    mapped = {"shop": "shop-test", "mail": "mail-test"}
    env = api.ok("PUT", path, json={"test_connections": mapped})
    assert env["environment_id"] == "prod" and env["test_connections"] == mapped
    assert api.ok("GET", "/api/v1/environments/prod")["test_connections"] == mapped
    [listed] = api.ok("GET", "/api/v1/environments")["environments"]
    assert listed["test_connections"] == mapped

    status, on_create = api.call(
        "POST",
        "/api/v1/environments",
        json={"environment_id": "stage", "test_connections": {"shop": "nowhere"}},
    )
    assert status == 404 and _error(on_create)["field"] == "test_connections.shop", on_create
    assert [e["environment_id"] for e in api.ok("GET", "/api/v1/environments")["environments"]] == [
        "prod"
    ]


def test_test_connections_do_not_change_under_a_queued_run_in_the_environment(api, frozen):
    for cid in ("shop", "shop-test"):
        _connect(api, cid)
    api.ok("POST", "/api/v1/environments", json={"environment_id": "prod"})
    run = api.start(api.agent(sleepy_spec()), api.dataset(cases(1)), environment_id="prod")
    path = "/api/v1/environments/prod/test-connections"
    status, refused = api.call("PUT", path, json={"test_connections": {"shop": "shop-test"}})
    assert status == 409, refused
    assert _error(refused)["field"] == "environment_id"
    assert _error(refused)["run_ids"] == [run["run_id"]]
    api.ok("POST", f"/api/v1/eval-runs/{run['run_id']}/cancel")
    assert api.ok("PUT", path, json={"test_connections": {"shop": "shop-test"}})[
        "test_connections"
    ] == {"shop": "shop-test"}


# --- specs naming connections --------------------------------------------------------------


def test_a_spec_whose_tool_names_an_unknown_connection_is_a_404_naming_the_field(api):
    _connect(api, "shop")
    status, refused = api.call(
        "POST", "/api/v1/agents", json={"name": "a", "spec": _tool_spec("shop", "nowhere")}
    )
    assert status == 404, refused
    assert _error(refused)["field"] == "spec.tools[1].connection_id"
    assert "nowhere" in _error(refused)["message"]
    agent = api.agent(_tool_spec("shop"))
    status, refused = api.call(
        "PUT", f"/api/v1/agents/{agent}/draft", json={"spec": _tool_spec("nowhere")}
    )
    assert status == 404 and _error(refused)["field"] == "spec.tools[0].connection_id", refused
    status, bad = api.call(
        "PUT",
        f"/api/v1/agents/{agent}/draft",
        json={"spec": {**sleepy_spec(), "tools": [{"name": "x", "effect": "sometimes"}]}},
    )
    assert status == 400 and _error(bad)["field"] == "spec.tools[0].effect", bad
    assert api.ok("GET", f"/api/v1/agents/{agent}/draft")["spec"] == _tool_spec("shop")


# --- the CLI -------------------------------------------------------------------------------


def test_connections_and_test_connections_with_the_cli(cli):
    assert cli("connections", "list").out.startswith("no connections yet: ")
    made = cli(
        "connections",
        "create",
        "shop",
        "https://shop.example.com/tools",
        "--auth-secret",
        "shop-token",
    )
    assert made.code == 0, made.err
    assert made.out.strip() == (
        "connection shop created: http https://shop.example.com/tools, authorized with secret "
        "shop-token"
    )
    test = cli(
        "connections", "create", "shop-test", "https://test.example.com/mcp", "--kind", "mcp"
    )
    assert test.code == 0, test.err
    listed = cli("connections", "list")
    header, *rows = listed.out.splitlines()
    assert re.split(r"\s{2,}", header.strip()) == [
        "CONNECTION", "KIND", "URL", "AUTH SECRET", "DESCRIPTION",
    ]  # fmt: skip
    assert [re.split(r"\s{2,}", r.strip()) for r in rows] == [
        ["shop", "http", "https://shop.example.com/tools", "shop-token", "-"],
        ["shop-test", "mcp", "https://test.example.com/mcp", "-", "-"],
    ]
    as_json = json.loads(cli("connections", "list", "--json").out)
    assert [c["connection_id"] for c in as_json["connections"]] == ["shop", "shop-test"]

    env = cli("environments", "create", "prod", "--test-connection", "shop=shop-test")
    assert env.code == 0, env.err
    assert env.out.strip().endswith("test connections shop -> shop-test")
    busy = cli("connections", "delete", "shop-test")
    assert busy.code == 3 and busy.out == ""
    assert "409" in busy.err and "environment prod" in busy.err
    assert len(busy.err.strip().splitlines()) == 1

    unknown = cli("environments", "test-connections", "prod", "--map", "shop=nowhere")
    assert unknown.code == 3 and "test_connections.shop" in unknown.err
    wrong = cli("environments", "test-connections", "prod", "--map", "shop")
    assert wrong.code == 3 and "--map 'shop': write CONNECTION=TEST_CONNECTION" in wrong.err
    cleared = cli("environments", "test-connections", "prod", "--clear")
    assert cleared.code == 0 and cleared.out.strip() == "environment prod: test connections none"
    again = cli("environments", "test-connections", "prod", "--map", "shop=shop-test", "--json")
    assert json.loads(again.out)["test_connections"] == {"shop": "shop-test"}
    cli("environments", "test-connections", "prod", "--clear")

    gone = cli("connections", "delete", "shop-test")
    assert gone.code == 0 and gone.out.strip() == "deleted connection shop-test"
    refused = cli("connections", "create", "meta", "http://169.254.169.254/")
    assert refused.code == 3 and "(field url)" in refused.err
    assert [
        c["connection_id"]
        for c in json.loads(cli("connections", "list", "--json").out)["connections"]
    ] == ["shop"]
