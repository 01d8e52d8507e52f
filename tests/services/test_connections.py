"""Connections and environments' test connections on fakes (docs/guides/tools.md): what may be
saved, what keeps a connection from being removed, and specs naming connections."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.domain.identity import Identity
from chalicelib.domain.records import Run
from chalicelib.errors import ConflictError, InvalidInputError, NotFoundError
from chalicelib.services import agents, connections, environments
from tests.fakes import FakeContainer
from tests.fakes.ledger import an_arm

ACME = Identity("acme", "ana")
GLOBEX = Identity("globex", "gil")


def _connection(c: FakeContainer, connection_id: str, who: Identity = ACME, **kw: Any) -> None:
    connections.create(
        c,
        who,
        connection_id=connection_id,
        kind=kw.pop("kind", "http"),
        url=kw.pop("url", f"https://{connection_id}.example.com/tools"),
        **kw,
    )


def _tool(connection_id: str | None, name: str = "refund") -> dict[str, Any]:
    tool: dict[str, Any] = {"name": name, "effect": "write"}
    if connection_id is not None:
        tool["connection_id"] = connection_id
    return tool


def _spec(*tools: dict[str, Any]) -> dict[str, Any]:
    return {"runtime": "recorded", "inline": {"c1": "ok"}, "tools": list(tools)}


def _run(
    run_id: str,
    status: str,
    *,
    spec: dict[str, Any] | None = None,
    settings: dict[str, Any] | None = None,
    environment_id: str | None = None,
) -> Run:
    return Run(
        run_id=run_id,
        org_id="acme",
        agent_id="a",
        dataset_id="d",
        dataset_version=1,
        created_at=f"2026-12-01T09:00:0{run_id[-1]}.000Z",
        status=status,
        phase="answering",
        candidate="version",
        spec_hash="h",
        environment_id=environment_id,
        arms=(an_arm(spec=spec or {"model": "m"}),),
        case_ids_text="c1",
        scoring={},
        tasks_total=1,
        expected=1,
        heartbeat_at_ms=0,
        settings=settings or {},
    )


# --- saving ----------------------------------------------------------------------------------


def test_a_connection_is_kept_with_the_secret_s_name_and_listed_by_id(c: FakeContainer) -> None:
    _connection(c, "shop", auth_secret="shop-token", description="the shop's tools")
    _connection(c, "mail", kind="mcp")
    kept = connections.get(c, ACME, "shop")
    assert (kept.kind, kept.url, kept.auth_secret, kept.description, kept.created_by) == (
        "http",
        "https://shop.example.com/tools",
        "shop-token",
        "the shop's tools",
        "ana",
    )
    assert kept.created_at == "2026-12-01T09:00:00.000Z"
    assert [r.connection_id for r in connections.list_connections(c, ACME)] == ["mail", "shop"]
    assert connections.get(c, ACME, "mail").kind == "mcp"


def test_an_id_is_unique_within_its_organization_only(c: FakeContainer) -> None:
    _connection(c, "shop")
    with pytest.raises(ConflictError) as taken:
        _connection(c, "shop")
    assert taken.value.field == "connection_id"
    _connection(c, "shop", GLOBEX, url="https://globex.example.com/")
    assert connections.get(c, ACME, "shop").url == "https://shop.example.com/tools"
    with pytest.raises(NotFoundError) as hidden:
        connections.get(c, GLOBEX, "mail")
    assert hidden.value.field == "connection_id"


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"connection_id": "a#b"}, "connection_id"),
        ({"kind": "grpc"}, "kind"),
        ({"url": "ftp://shop.example.com/"}, "url"),
        ({"url": "http://169.254.169.254/latest/"}, "url"),
        ({"url": "http://10.0.0.1/"}, "url"),
        ({"url": "http://[::1]:8080/"}, "url"),
        ({"url": "https://shop.example.com/" + "x" * 2100}, "url"),
        ({"auth_secret": "../etc"}, "auth_secret"),
        ({"auth_secret": "has space"}, "auth_secret"),
        ({"description": "x" * 1001}, "description"),
    ],
)
def test_a_connection_that_cannot_be_kept_is_refused_naming_the_field(
    c: FakeContainer, fields: dict[str, Any], field: str
) -> None:
    given: dict[str, Any] = {
        "connection_id": "shop",
        "kind": "http",
        "url": "https://shop.example.com/tools",
        **fields,
    }
    # Private networks refused, as a deployed stage refuses them, whatever this process's
    # environment says (an embedded stack in the same process allows them).
    c.settings = c.settings.model_copy(update={"assay_allow_private_network": False})
    with pytest.raises(InvalidInputError) as refused:
        connections.create(c, ACME, **given)
    assert refused.value.field == field
    assert connections.list_connections(c, ACME) == []


def test_a_name_resolving_to_the_metadata_address_is_refused(c: FakeContainer) -> None:
    c.resolver = lambda host, _port: (
        ["169.254.169.254"] if host == "meta.example.com" else ["93.184.216.34"]
    )
    with pytest.raises(InvalidInputError) as refused:
        _connection(c, "shop", url="https://meta.example.com/tools")
    assert refused.value.field == "url" and "metadata" in refused.value.message
    _connection(c, "shop", url="https://shop.example.com/tools")


def test_a_secret_value_pasted_into_the_url_is_refused(c: FakeContainer) -> None:
    c.secrets.kept[("acme", "shop-token")] = "s3cr3t-value-of-the-shop-0123456789"
    with pytest.raises(InvalidInputError) as refused:
        _connection(
            c, "shop", url="https://shop.example.com/?t=s3cr3t-value-of-the-shop-0123456789"
        )
    assert refused.value.field == "url"
    assert "s3cr3t" not in refused.value.message


# --- removing --------------------------------------------------------------------------------


def test_removing_is_refused_while_an_active_run_s_tools_name_it(c: FakeContainer) -> None:
    _connection(c, "shop")
    _connection(c, "mail")
    c.runs.add(_run("r1", "queued", spec=_spec(_tool("shop"))))
    c.runs.add(_run("r2", "completed", spec=_spec(_tool("mail"))))  # ended: holds nothing
    with pytest.raises(ConflictError) as refused:
        connections.delete(c, ACME, "shop")
    assert refused.value.field == "connection_id"
    assert refused.value.details["run_ids"] == ["r1"]
    assert "r1" in refused.value.message
    connections.delete(c, ACME, "mail")
    assert [r.connection_id for r in connections.list_connections(c, ACME)] == ["shop"]


@pytest.mark.parametrize("mapped", [{"shop": "other"}, {"other": "shop"}])
def test_removing_is_refused_while_an_active_run_s_test_connections_map_it(
    c: FakeContainer, mapped: dict[str, str]
) -> None:
    _connection(c, "shop")
    c.runs.add(_run("r1", "running", settings={"isolation": {"test_connections": mapped}}))
    with pytest.raises(ConflictError) as refused:
        connections.delete(c, ACME, "shop")
    assert refused.value.details["run_ids"] == ["r1"]


def test_removing_is_refused_while_an_environment_maps_to_or_from_it(c: FakeContainer) -> None:
    for cid in ("shop", "shop-test", "spare"):
        _connection(c, cid)
    environments.create(c, ACME, environment_id="prod", test_connections={"shop": "shop-test"})
    for cid in ("shop", "shop-test"):
        with pytest.raises(ConflictError) as refused:
            connections.delete(c, ACME, cid)
        assert refused.value.details["environment_ids"] == ["prod"]
        assert "environment prod" in refused.value.message
    connections.delete(c, ACME, "spare")
    environments.set_test_connections(c, ACME, "prod", {})
    connections.delete(c, ACME, "shop")
    connections.delete(c, ACME, "shop-test")
    assert connections.list_connections(c, ACME) == []


def test_removing_another_organization_s_connection_is_not_found(c: FakeContainer) -> None:
    _connection(c, "shop")
    with pytest.raises(NotFoundError):
        connections.delete(c, GLOBEX, "shop")
    assert connections.get(c, ACME, "shop")


# --- test connections ------------------------------------------------------------------------


def test_test_connections_map_connections_of_the_organization_to_others(
    c: FakeContainer,
) -> None:
    for cid in ("shop", "shop-test"):
        _connection(c, cid)
    _connection(c, "theirs", GLOBEX)
    env = environments.create(
        c, ACME, environment_id="prod", test_connections={"shop": "shop-test"}
    )
    assert env.test_connections == {"shop": "shop-test"}
    with pytest.raises(NotFoundError) as unknown:
        environments.set_test_connections(c, ACME, "prod", {"shop": "theirs"})
    assert unknown.value.field == "test_connections.shop"
    with pytest.raises(NotFoundError) as unknown_key:
        environments.set_test_connections(c, ACME, "prod", {"gone": "shop-test"})
    assert unknown_key.value.field == "test_connections.gone"
    with pytest.raises(InvalidInputError) as itself:
        environments.set_test_connections(c, ACME, "prod", {"shop": "shop"})
    assert itself.value.field == "test_connections.shop"
    with pytest.raises(InvalidInputError) as not_a_map:
        environments.set_test_connections(c, ACME, "prod", ["shop"])
    assert not_a_map.value.field == "test_connections"
    assert c.environments.get("acme", "prod").test_connections == {"shop": "shop-test"}
    with pytest.raises(NotFoundError) as on_create:
        environments.create(c, ACME, environment_id="stage", test_connections={"shop": "nope"})
    assert on_create.value.field == "test_connections.shop"
    assert [e.environment_id for e in c.environments.list("acme")] == ["prod"]


def test_test_connections_do_not_change_under_a_run_in_the_environment(
    c: FakeContainer,
) -> None:
    for cid in ("shop", "shop-test"):
        _connection(c, cid)
    environments.create(c, ACME, environment_id="prod")
    c.runs.add(_run("r1", "running", environment_id="prod"))
    with pytest.raises(ConflictError) as refused:
        environments.set_test_connections(c, ACME, "prod", {"shop": "shop-test"})
    assert refused.value.field == "environment_id"
    assert refused.value.details["run_ids"] == ["r1"]
    assert c.environments.get("acme", "prod").test_connections == {}
    with pytest.raises(NotFoundError) as no_env:
        environments.set_test_connections(c, ACME, "nowhere", {})
    assert no_env.value.field == "environment_id"


# --- specs naming connections ----------------------------------------------------------------


def test_a_spec_s_tools_must_name_connections_of_the_organization(c: FakeContainer) -> None:
    _connection(c, "shop")
    _connection(c, "mail", GLOBEX)
    spec = _spec(_tool("shop", "lookup"), _tool(None, "note"), _tool("mail"))
    with pytest.raises(NotFoundError) as unknown:
        agents.create_agent(c, ACME, name="a", spec=spec, agent_id="a")
    assert unknown.value.field == "spec.tools[2].connection_id"
    ok = _spec(_tool("shop", "lookup"), _tool(None, "note"))
    agents.create_agent(c, ACME, name="a", spec=ok, agent_id="a")
    with pytest.raises(NotFoundError) as on_edit:
        agents.update_draft(c, ACME, "a", spec=spec)
    assert on_edit.value.field == "spec.tools[2].connection_id"


def test_publishing_a_draft_whose_connection_is_gone_is_refused(c: FakeContainer) -> None:
    _connection(c, "shop")
    agents.create_agent(c, ACME, name="a", spec=_spec(_tool("shop")), agent_id="a")
    connections.delete(c, ACME, "shop")
    with pytest.raises(NotFoundError) as gone:
        agents.publish(c, ACME, "a")
    assert gone.value.field == "spec.tools[0].connection_id"
    assert agents.list_versions(c, ACME, "a") == []


def test_every_runtime_checks_a_spec_s_tools(c: FakeContainer) -> None:
    bad = {"runtime": "recorded", "inline": {"c1": "ok"}, "tools": [{"name": "x", "effect": "no"}]}
    with pytest.raises(InvalidInputError) as refused:
        agents.create_agent(c, ACME, name="a", spec=bad)
    assert refused.value.field == "spec.tools[0].effect"
    flat = {
        "runtime": "openai",
        "base_url": "https://api.example.com/v1",
        "model": "m",
        "tools": [{"name": "lookup", "effect": "read", "parameters": {"type": "object"}}],
    }
    assert agents.create_agent(c, ACME, name="a", spec=flat).draft_spec == flat
