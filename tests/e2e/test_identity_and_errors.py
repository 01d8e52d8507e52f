"""Who may call, what another organization can see, and how bad input is refused.

Every refusal is a JSON body `{"error": {"code", "message", "field"?}}` with a 4xx status;
nothing a caller sends can produce a 500.
"""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

import httpx
import pytest

from chalicelib.api.common import issue_token
from tests.e2e.conftest import cases, sleepy_spec

CODES = {
    400: "invalid_input",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
}
"""Every refusal's code is snake case, one per status (401 and 403 say `unauthenticated`,
`forbidden`)."""


def error_of(
    status: int, body: Any, expected_status: int, field: str | None = None
) -> dict[str, Any]:
    """The `error` object of a refusal, after checking its status and shape."""
    assert status == expected_status, f"expected {expected_status}, got {status}: {body}"
    assert isinstance(body, dict) and set(body) == {"error"}, body
    error = body["error"]
    assert isinstance(error["code"], str) and re.fullmatch(r"[a-z]+(_[a-z]+)*", error["code"]), (
        error
    )
    assert error["code"] == CODES.get(expected_status, error["code"]), error
    assert isinstance(error["message"], str) and error["message"], error
    if field is not None:
        assert error.get("field") == field, error
    return error


# --- identity --------------------------------------------------------------------------------


def test_a_request_without_authorization_is_refused_401_naming_the_missing_header(stack):
    r = httpx.get(f"{stack.api_url}/api/v1/agents")
    error = error_of(r.status_code, r.json(), 401, field="Authorization")
    assert error["code"] == "unauthenticated"
    assert "Authorization" in error["message"]
    assert r.headers["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize(
    "header",
    [
        "Bearer not-a-jwt",
        "Bearer a.b.c",
        "Basic dXNlcjpwYXNz",
        "Bearer",
        "token-without-scheme",
    ],
    ids=["garbage", "three-garbage-segments", "basic-scheme", "empty-bearer", "no-scheme"],
)
def test_a_malformed_authorization_header_is_refused_401(stack, header):
    r = httpx.get(f"{stack.api_url}/api/v1/agents", headers={"Authorization": header})
    error_of(r.status_code, r.json(), 401, field="Authorization")


def test_a_token_signed_with_another_secret_is_refused_401(stack):
    token = issue_token(
        "org_x",
        "mallory",
        secret="not-the-secret-0123456789abcdef0123456789",
        issuer=stack.settings.assay_jwt_issuer,
    )
    r = httpx.get(f"{stack.api_url}/api/v1/agents", headers={"Authorization": f"Bearer {token}"})
    error = error_of(r.status_code, r.json(), 401, field="Authorization")
    assert "signature" in error["message"].lower()


def test_an_expired_token_is_refused_401(stack):
    an_hour_ago = int(time.time()) - 3600
    token = issue_token(
        "org_x",
        "alice",
        secret=stack.settings.assay_jwt_secret,
        issuer=stack.settings.assay_jwt_issuer,
        ttl_seconds=60,
        now_s=an_hour_ago,
    )
    r = httpx.get(f"{stack.api_url}/api/v1/agents", headers={"Authorization": f"Bearer {token}"})
    error = error_of(r.status_code, r.json(), 401, field="Authorization")
    assert "expired" in error["message"].lower()


def test_a_token_from_another_issuer_or_without_an_organization_is_refused_401(stack):
    import jwt

    s = stack.settings
    other_issuer = issue_token("org_x", "alice", secret=s.assay_jwt_secret, issuer="someone-else")
    no_org = jwt.encode(
        {"sub": "alice", "iss": s.assay_jwt_issuer}, s.assay_jwt_secret, algorithm="HS256"
    )
    numeric_org = jwt.encode(
        {"sub": "alice", "org": 7, "iss": s.assay_jwt_issuer}, s.assay_jwt_secret, algorithm="HS256"
    )
    for token in (other_issuer, no_org, numeric_org):
        r = httpx.get(
            f"{stack.api_url}/api/v1/agents", headers={"Authorization": f"Bearer {token}"}
        )
        error_of(r.status_code, r.json(), 401, field="Authorization")


def test_a_valid_token_reaches_the_caller_s_own_organization(new_api):
    api = new_api()
    assert api.ok("GET", "/api/v1/agents") == {"agents": []}


# --- tenancy: another organization's things do not exist for you ----------------------------


def test_another_organization_s_agent_dataset_and_run_are_404_everywhere(new_api):
    owner, stranger = new_api(), new_api()
    ds = owner.dataset(cases(2))
    agent = owner.agent(sleepy_spec(), publish=1)
    run = owner.start(agent, ds)
    owner.wait(run["run_id"])
    run_id = run["run_id"]

    reads = [
        ("GET", f"/api/v1/agents/{agent}"),
        ("GET", f"/api/v1/agents/{agent}/draft"),
        ("GET", f"/api/v1/agents/{agent}/versions"),
        ("GET", f"/api/v1/agents/{agent}/versions/1"),
        ("GET", f"/api/v1/agents/{agent}/eval-runs"),
        ("GET", f"/api/v1/datasets/{ds}"),
        ("GET", f"/api/v1/datasets/{ds}/versions/1/cases"),
        ("GET", f"/api/v1/datasets/{ds}/eval-runs"),
        ("GET", f"/api/v1/eval-runs/{run_id}"),
        ("GET", f"/api/v1/eval-runs/{run_id}/progress"),
        ("GET", f"/api/v1/eval-runs/{run_id}/events?wait=0"),
        ("GET", f"/api/evaluations/progress/{run_id}"),
        ("GET", f"/api/evaluations/stream/{run_id}?wait=0"),
    ]
    for method, path in reads:
        status, body = stranger.call(method, path)
        error = error_of(status, body, 404)
        assert stranger.org_id not in error["message"] and owner.org_id not in error["message"], (
            path,
            error,
        )

    writes = [
        ("PUT", f"/api/v1/agents/{agent}/draft", {"spec": sleepy_spec(answer="7")}),
        ("POST", f"/api/v1/agents/{agent}/versions", {}),
        ("POST", f"/api/v1/agents/{agent}/eval-runs", {"dataset_id": ds, "candidate": "draft"}),
        (
            "POST",
            f"/api/v1/datasets/{ds}/versions",
            {"scoring": {"required": ["equals"]}, "cases": cases(1)},
        ),
        ("POST", f"/api/v1/eval-runs/{run_id}/cancel", None),
        ("DELETE", f"/api/v1/eval-runs/{run_id}", None),
        ("POST", "/api/v1/agent-summaries", {"agents": [{"agentId": agent, "version": 1}]}),
    ]
    for method, path, body in writes:
        status, resp = stranger.call(method, path, **({"json": body} if body is not None else {}))
        error_of(status, resp, 404)

    # The stranger's own agent cannot run on the owner's dataset either.
    mine = stranger.agent(sleepy_spec())
    status, body = stranger.call(
        "POST", f"/api/v1/agents/{mine}/eval-runs", json={"dataset_id": ds, "candidate": "draft"}
    )
    error_of(status, body, 404, field="dataset_id")

    # Nothing of the owner's shows in the stranger's listings, and the owner's things are intact.
    assert stranger.ok("GET", "/api/v1/datasets")["datasets"] == []
    assert [a["agent_id"] for a in stranger.ok("GET", "/api/v1/agents")["agents"]] == [mine]
    assert stranger.ok("GET", "/api/v1/eval-runs")["runs"] == []
    assert owner.ok("GET", f"/api/v1/eval-runs/{run_id}")["status"] == "completed"
    assert owner.ok("GET", f"/api/v1/agents/{agent}")["latest_version"] == 1
    assert owner.ok("GET", f"/api/v1/agents/{agent}/draft")["spec"] == sleepy_spec()


def test_an_agent_id_of_one_organization_is_free_in_another_and_names_another_agent(new_api):
    a, b = new_api(), new_api()
    agent_id = f"shared-{uuid.uuid4().hex[:8]}"
    a.ok(
        "POST",
        "/api/v1/agents",
        json={"name": "a", "spec": sleepy_spec(answer="A"), "agent_id": agent_id},
    )
    a.ok("POST", f"/api/v1/agents/{agent_id}/versions")

    # Before B has one, A's id is nothing to B: 404 on every read, nothing listed.
    for path in (
        f"/api/v1/agents/{agent_id}",
        f"/api/v1/agents/{agent_id}/versions",
        f"/api/v1/agents/{agent_id}/versions/1",
    ):
        status, body = b.call("GET", path)
        error_of(status, body, 404)
    assert b.ok("GET", "/api/v1/agents")["agents"] == []

    # Ids are unique within an organization only: B takes the same id (201, never 409) for its own
    # agent.
    status, body = b.call(
        "POST",
        "/api/v1/agents",
        json={"name": "b", "spec": sleepy_spec(answer="B"), "agent_id": agent_id},
    )
    assert status == 201, body
    assert b.ok("GET", f"/api/v1/agents/{agent_id}/versions")["versions"] == []
    error_of(*b.call("GET", f"/api/v1/agents/{agent_id}/versions/1"), 404)
    b.ok("POST", f"/api/v1/agents/{agent_id}/versions")
    assert b.ok("GET", f"/api/v1/agents/{agent_id}/versions/1")["spec"]["options"]["answer"] == "B"
    assert a.ok("GET", f"/api/v1/agents/{agent_id}/versions/1")["spec"]["options"]["answer"] == "A"
    assert [
        v["version"] for v in a.ok("GET", f"/api/v1/agents/{agent_id}/versions")["versions"]
    ] == [1]
    # A second agent under the id in the same organization is still a 409.
    error_of(
        *b.call(
            "POST",
            "/api/v1/agents",
            json={"name": "b2", "spec": sleepy_spec(), "agent_id": agent_id},
        ),
        409,
        field="agent_id",
    )


def test_a_token_cannot_name_an_organization_that_would_run_into_another_s_keys(stack, new_api):
    # Every key starts `<org_id>#`: an organization id with `#` could reach into another's rows.
    api = new_api(org_id="#agent-ids")
    status, body = api.call("GET", "/api/v1/agents")
    error_of(status, body, 401, field="Authorization")


# --- bad input is a 400 naming the field, never a 500 ---------------------------------------


def test_a_malformed_json_body_is_400_naming_the_body(api):
    for path in ("/api/v1/agents", "/api/v1/datasets", "/api/v1/agent-summaries"):
        status, body = api.call(
            "POST", path, content=b'{"name": "a", ', headers={"Content-Type": "application/json"}
        )
        error = error_of(status, body, 400, field="body")
        assert "JSON" in error["message"]


def test_a_body_that_is_not_an_object_or_is_missing_is_400(api):
    status, body = api.call("POST", "/api/v1/agents", json=[1, 2])
    error_of(status, body, 400, field="body")
    status, body = api.call("POST", "/api/v1/agents")
    error_of(status, body, 400, field="body")
    status, body = api.call(
        "POST",
        "/api/v1/agents",
        content=b"\xff\xfe\x00",
        headers={"Content-Type": "application/json"},
    )
    error_of(status, body, 400, field="body")


def test_wrong_types_are_400_naming_the_field(api):
    agent = api.agent(sleepy_spec())
    ds = api.dataset(cases(1))
    status, body = api.call("POST", f"/api/v1/agents/{agent}/versions", json={"version": "abc"})
    error_of(status, body, 400, field="version")
    status, body = api.call("POST", f"/api/v1/agents/{agent}/versions", json={"version": 0})
    error_of(status, body, 400, field="version")
    status, body = api.call(
        "POST",
        f"/api/v1/agents/{agent}/eval-runs",
        json={"dataset_id": ds, "candidate": "draft", "dataset_version": True},
    )
    error = error_of(status, body, 400)
    assert error["field"].startswith("dataset_version")
    status, body = api.call("POST", "/api/v1/agents", json={"name": 5, "spec": sleepy_spec()})
    error_of(status, body, 400, field="name")
    status, body = api.call("POST", "/api/v1/agents", json={"name": "a", "spec": "python"})
    error_of(status, body, 400, field="spec")
    for bad in (
        "abc",
        "%C2%B2",
        "-1",
    ):  # "%C2%B2" is "²", which str.isdigit takes and int() does not
        status, body = api.call("GET", f"/api/v1/agents/{agent}/versions/{bad}")
        error_of(status, body, 400, field="version")
        status, body = api.call("GET", f"/api/v1/datasets/{ds}/versions/{bad}/cases")
        error_of(status, body, 400, field="dataset_version")
    status, body = api.call("GET", "/api/v1/eval-runs?limit=lots")
    error_of(status, body, 400, field="limit")
    status, body = api.call("GET", "/api/v1/eval-runs?limit=0")
    error_of(status, body, 400, field="limit")
    status, body = api.call("GET", "/api/v1/eval-runs?cursor=%%%not-a-cursor")
    error_of(status, body, 400, field="cursor")
    status, body = api.call("GET", f"/api/v1/agents/{agent}/eval-runs?draft=sometimes")
    error_of(status, body, 400, field="draft")
    status, body = api.call(
        "POST", "/api/v1/agent-summaries", json={"agents": [{"agentId": agent, "version": "3"}]}
    )
    error_of(status, body, 400, field="agents[0].version")
    status, body = api.call("POST", "/api/v1/agent-summaries", json={"agents": []})
    error_of(status, body, 400, field="agents")


def test_a_cursor_this_api_did_not_give_the_caller_is_400_not_500(api):
    import base64
    import json

    for value in (
        1,
        "x",
        [1],
        {"nope": 1},
        None,
        {"run_id": {"S": "r"}, "org_id": {"S": "org_someone_else"}, "created_at": {"S": "x"}},
    ):
        cursor = base64.urlsafe_b64encode(json.dumps(value).encode()).decode()
        status, body = api.call("GET", f"/api/v1/eval-runs?cursor={cursor}")
        error_of(status, body, 400, field="cursor")


def test_unknown_fields_are_400_naming_them(api):
    status, body = api.call(
        "POST", "/api/v1/agents", json={"name": "a", "spec": sleepy_spec(), "colour": "red"}
    )
    error = error_of(status, body, 400, field="colour")
    assert "unknown field" in error["message"]
    status, body = api.call("POST", "/api/v1/datasets", json={"name": "d", "owner": "me"})
    error_of(status, body, 400, field="owner")
    agent = api.agent(sleepy_spec())
    ds = api.dataset(cases(1))
    status, body = api.call(
        "POST",
        f"/api/v1/agents/{agent}/eval-runs",
        json={"dataset_id": ds, "candidate": "draft", "turbo": True},
    )
    error_of(status, body, 400, field="turbo")
    status, body = api.call(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={"scoring": {"required": ["equals"], "strict": True}, "cases": cases(1)},
    )
    error_of(status, body, 400, field="scoring.strict")


def test_an_unknown_runtime_is_400_naming_spec_runtime(api):
    status, body = api.call(
        "POST", "/api/v1/agents", json={"name": "a", "spec": {"runtime": "telepathy"}}
    )
    error = error_of(status, body, 400, field="spec.runtime")
    assert "telepathy" in error["message"] and "python" in error["message"]
    status, body = api.call(
        "POST", "/api/v1/agents", json={"name": "a", "spec": {"entrypoint": "x:y"}}
    )
    error_of(status, body, 400, field="spec.runtime")
    agent = api.agent(sleepy_spec())
    status, body = api.call("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": {"runtime": 3}})
    error_of(status, body, 400, field="spec.runtime")
    assert api.ok("GET", f"/api/v1/agents/{agent}/draft")["spec"] == sleepy_spec()


@pytest.mark.parametrize(
    "entrypoint",
    [
        "not an entrypoint",
        "no_such_module_xyz:f",
        "bench.agents:nothing_here",
        "bench.agents:_lock",
        None,
    ],
)
def test_a_python_runtime_with_a_bad_entrypoint_is_400_naming_spec_entrypoint(api, entrypoint):
    spec = {"runtime": "python", "entrypoint": entrypoint}
    status, body = api.call("POST", "/api/v1/agents", json={"name": "a", "spec": spec})
    error_of(status, body, 400, field="spec.entrypoint")


def test_an_empty_dataset_version_is_400(api):
    ds = api.ok("POST", "/api/v1/datasets", json={"name": "d"})["dataset_id"]
    status, body = api.call(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={"scoring": {"required": ["equals"]}, "cases": []},
    )
    error_of(status, body, 400, field="cases")
    status, body = api.call(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={
            "scoring": {"required": ["equals"]},
            "source": {"format": "jsonl", "content": "\n\n"},
        },
    )
    error_of(status, body, 400, field="cases")
    assert api.ok("GET", f"/api/v1/datasets/{ds}")["latest_version"] is None


def test_starting_on_a_dataset_with_no_version_yet_is_400(api):
    agent = api.agent(sleepy_spec())
    ds = api.ok("POST", "/api/v1/datasets", json={"name": "d"})["dataset_id"]
    status, body = api.call(
        "POST", f"/api/v1/agents/{agent}/eval-runs", json={"dataset_id": ds, "candidate": "draft"}
    )
    error_of(status, body, 400, field="dataset_version")


def test_unknown_agent_dataset_and_run_ids_are_404(api):
    agent = api.agent(sleepy_spec())
    ds = api.dataset(cases(1))
    checks = [
        (api.call("GET", "/api/v1/agents/agt_nope"), "agent_id"),
        (
            api.call("PUT", "/api/v1/agents/agt_nope/draft", json={"spec": sleepy_spec()}),
            "agent_id",
        ),
        (api.call("POST", "/api/v1/agents/agt_nope/versions"), "agent_id"),
        (
            api.call(
                "POST",
                "/api/v1/agents/agt_nope/eval-runs",
                json={"dataset_id": ds, "candidate": "draft"},
            ),
            "agent_id",
        ),
        (api.call("GET", f"/api/v1/agents/{agent}/versions/9"), "version"),
        (api.call("GET", "/api/v1/datasets/ds_nope"), "dataset_id"),
        (
            api.call(
                "POST",
                "/api/v1/datasets/ds_nope/versions",
                json={"scoring": {"required": ["equals"]}, "cases": cases(1)},
            ),
            "dataset_id",
        ),
        (api.call("GET", f"/api/v1/datasets/{ds}/versions/7/cases"), "dataset_version"),
        (
            api.call(
                "POST",
                f"/api/v1/agents/{agent}/eval-runs",
                json={"dataset_id": "ds_nope", "candidate": "draft"},
            ),
            "dataset_id",
        ),
        (
            api.call(
                "POST",
                f"/api/v1/agents/{agent}/eval-runs",
                json={"dataset_id": ds, "candidate": "draft", "dataset_version": 5},
            ),
            "dataset_version",
        ),
        (api.call("GET", "/api/v1/eval-runs/run_nope"), "run_id"),
        (api.call("GET", "/api/v1/eval-runs/run_nope/progress"), "run_id"),
        (api.call("GET", "/api/evaluations/progress/run_nope"), "run_id"),
        (api.call("GET", "/api/v1/eval-runs/run_nope/events?wait=0"), "run_id"),
        (api.call("DELETE", "/api/v1/eval-runs/run_nope"), "run_id"),
        (api.call("POST", "/api/v1/eval-runs/run_nope/cancel"), "run_id"),
        (
            api.call(
                "POST",
                "/api/v1/agent-summaries",
                json={"agents": [{"agentId": "agt_nope", "version": 1}]},
            ),
            "agent_id",
        ),
    ]
    for (status, body), field in checks:
        error_of(status, body, 404, field=field)


def test_a_version_asked_of_an_agent_never_published_is_400_run_its_draft_instead(api):
    agent = api.agent(sleepy_spec())
    ds = api.dataset(cases(1))
    for body in (
        {"candidate": "version"},
        {"candidate": "version", "version": 1},
        {"candidate": "latest"},
        {"candidate": 1},
        {"candidate": "published"},
    ):
        status, resp = api.call(
            "POST", f"/api/v1/agents/{agent}/eval-runs", json={"dataset_id": ds, **body}
        )
        error = error_of(status, resp, 400)
        assert "run its draft instead" in error["message"], (body, error)
    assert api.ok("GET", f"/api/v1/agents/{agent}/eval-runs")["runs"] == []


def test_a_published_version_that_does_not_exist_is_404(api):
    agent = api.agent(sleepy_spec(), publish=1)
    ds = api.dataset(cases(1))
    status, body = api.call(
        "POST",
        f"/api/v1/agents/{agent}/eval-runs",
        json={"dataset_id": ds, "candidate": "version", "version": 2},
    )
    error_of(status, body, 404, field="version")


def test_starting_on_cases_no_required_scorer_applies_to_is_refused_400(api):
    agent = api.agent(sleepy_spec())
    ds = api.ok("POST", "/api/v1/datasets", json={"name": "d"})["dataset_id"]
    # `equals` needs a reference or an equals check; none of these cases has either.
    api.ok(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={
            "scoring": {"required": ["equals"]},
            "cases": [{"case_id": "a", "input": "hi"}, {"case_id": "b", "input": "there"}],
        },
    )
    status, body = api.call(
        "POST", f"/api/v1/agents/{agent}/eval-runs", json={"dataset_id": ds, "candidate": "draft"}
    )
    error = error_of(status, body, 400, field="dataset_version")
    assert "no required scorer applies" in error["message"]
    assert api.ok("GET", "/api/v1/eval-runs")["runs"] == []


def test_an_unknown_scorer_is_400_naming_scoring_required_0(api):
    ds = api.ok("POST", "/api/v1/datasets", json={"name": "d"})["dataset_id"]
    status, body = api.call(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={"scoring": {"required": ["vibes"]}, "cases": cases(1)},
    )
    error = error_of(status, body, 400, field="scoring.required[0]")
    assert "vibes" in error["message"] and "equals" in error["message"]
    status, body = api.call(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={"scoring": {"required": []}, "cases": cases(1)},
    )
    error_of(status, body, 400, field="scoring.required")
    status, body = api.call("POST", f"/api/v1/datasets/{ds}/versions", json={"cases": cases(1)})
    error_of(status, body, 400, field="scoring")


def test_a_case_check_naming_an_unknown_scorer_is_400(api):
    ds = api.ok("POST", "/api/v1/datasets", json={"name": "d"})["dataset_id"]
    status, body = api.call(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={
            "scoring": {"required": ["regex"]},
            "cases": [{"case_id": "a", "input": "q", "checks": [{"scorer": "regex"}]}],
        },
    )
    error = error_of(status, body, 400)
    assert error["field"].startswith("cases[0].checks[0]")
    status, body = api.call(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={
            "scoring": {"required": ["equals"]},
            "cases": [{"case_id": "a", "input": "q", "checks": [{"scorer": "vibes"}]}],
        },
    )
    error = error_of(status, body, 400)
    assert error["field"].startswith("cases[0].checks[0]")
    assert api.ok("GET", f"/api/v1/datasets/{ds}")["latest_version"] is None


def test_an_unknown_environment_is_404(api):
    agent = api.agent(sleepy_spec())
    ds = api.dataset(cases(1))
    status, body = api.call(
        "POST",
        f"/api/v1/agents/{agent}/eval-runs",
        json={"dataset_id": ds, "candidate": "draft", "environment_id": "env_nope"},
    )
    error_of(status, body, 404, field="environment_id")
    assert api.ok("GET", "/api/v1/eval-runs")["runs"] == []


def test_a_duplicate_agent_or_dataset_id_in_one_organization_is_409(api):
    api.ok("POST", "/api/v1/agents", json={"name": "a", "spec": sleepy_spec(), "agent_id": "mine"})
    status, body = api.call(
        "POST", "/api/v1/agents", json={"name": "b", "spec": sleepy_spec(), "agent_id": "mine"}
    )
    error_of(status, body, 409, field="agent_id")
    api.ok("POST", "/api/v1/datasets", json={"name": "d", "dataset_id": f"ds-{api.org_id}"})
    status, body = api.call(
        "POST", "/api/v1/datasets", json={"name": "d", "dataset_id": f"ds-{api.org_id}"}
    )
    error_of(status, body, 409, field="dataset_id")


def test_a_wrong_method_or_media_type_is_refused_in_the_same_error_shape(api):
    status, body = api.call("DELETE", "/api/v1/agents")
    error = error_of(status, body, 405)
    assert error["code"] == "method_not_allowed"
    status, body = api.call(
        "POST",
        "/api/v1/agents",
        content=b'{"name": "a", "spec": {}}',
        headers={"Content-Type": "text/plain"},
    )
    error = error_of(status, body, 415)
    assert error["code"] == "unsupported_media_type" and "text/plain" in error["message"]
    assert error["field"] == "Content-Type" and "application/json" in error["message"]


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/agents/a/suites//results",
        "/api/v1/eval-runs//progress",
        "/api/v1/agents//promotions/x",
    ],
)
def test_an_empty_id_in_the_path_is_a_404_not_a_500(api, path):
    status, body = api.call("GET", path)
    assert status == 404 and body["error"]["field"], body
