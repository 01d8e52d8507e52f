"""The organization's secrets and recordings through the HTTP API on the embedded stack (issue 9
scope 1, 2).

Attacks and what they now get:
- read a secret's value back through any route: no route returns it (every route walked);
- read, list, overwrite or delete another organization's secret or recording of the same name:
  404, and the other organization's own same-named one is independent;
- names with `/`, `..`, `#` (path steps, key separators): 400 naming `name` / `recording_id`;
- oversized or empty values: 400 naming `value`, never echoing it; a recording over 5 MiB: 413
  naming `content`;
- a recording with a bad line: 400 naming the line number, never its content;
- S3 keys and Secrets Manager names stay under the organization's prefix (read from moto);
- a recording deleted is gone for good (API, bucket, cache, and a run that names it);
- a key written into an agent spec (`api_key`, `options.token`, a key in the system prompt, the
  organization's own stored secret pasted in), a model profile's settings or a judge spec, by the
  API or a `version_published` event: 400 (or a malformed event) naming the field and the kind,
  never the value, and nothing is stored.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import boto3
import pytest

from chalicelib import names
from chalicelib.domain.ids import MAX_RECORDING_BYTES
from tests.support.e2e import Api, signed, wait_for

RECORDING = (
    "\n".join(
        json.dumps(line)
        for line in [
            {"case_id": "c1", "input": "What is 2+2?", "answer": "4"},
            {"case_id": "c2", "input": "What is 3+3?", "answer": "6"},
        ]
    )
    + "\n"
)


def _aws(stack, service: str) -> Any:
    return boto3.session.Session().client(
        service,
        endpoint_url=stack.endpoint_url,
        region_name=stack.settings.aws_default_region,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def _value() -> str:
    """A value no response could hold by chance."""
    return f"sv-{uuid.uuid4().hex}{uuid.uuid4().hex}"


def _error(body: Any) -> dict[str, Any]:
    assert isinstance(body, dict) and isinstance(body.get("error"), dict), body
    return body["error"]


# --- write-only ------------------------------------------------------------------------------


def test_no_route_ever_returns_a_secret_value(api: Api, stack):
    value = _value()
    assert value not in json.dumps(api.ok("PUT", "/api/v1/secrets/openai", json={"value": value}))
    # Something for the routes to read: an agent, a dataset, a finished run, a recording.
    ds = api.dataset([{"case_id": "c1", "input": "q", "reference": "42"}])
    agent = api.agent(
        {"runtime": "python", "entrypoint": "bench.agents:sleepy", "options": {"answer": "42"}},
        publish=1,
    )
    run = api.start(agent, ds)
    api.wait(run["run_id"])
    api.ok("POST", "/api/v1/recordings", json={"recording_id": "rec", "content": RECORDING})
    fill = {
        "agent_id": agent,
        "dataset_id": ds,
        "run_id": run["run_id"],
        "name": "openai",
        "recording_id": "rec",
        "version": "1",
        "arm_id": "candidate",
    }
    # The value really is stored: the walk below finds nothing although there is something to find.
    assert (
        _aws(stack, "secretsmanager").get_secret_value(
            SecretId=names.secret_name(stack.settings.assay_resource_prefix, api.org_id, "openai")
        )["SecretString"]
        == value
    )
    routes = sorted(stack.app.routes.items())
    seen = 0
    order = {"GET": 0, "POST": 1, "PUT": 1, "PATCH": 1, "DELETE": 2}  # reads first, deletes last
    calls = [(order.get(method, 1), path, method) for path, methods in routes for method in methods]
    for _, path, method in sorted(calls):
        url = re.sub(r"\{(\w+)\}", lambda m: fill.get(m.group(1), "x"), path)
        kwargs = {} if method in ("GET", "DELETE") else {"json": {}}
        status, body = api.call(method, url, **kwargs)
        text = body if isinstance(body, str) else json.dumps(body)
        assert value not in text, f"{method} {url} -> {status} returned the secret's value"
        seen += 1
    assert seen >= 5 * 50


def test_the_secret_routes_give_names_and_times_only(api: Api):
    value = _value()
    put = api.ok("PUT", "/api/v1/secrets/openai", json={"value": value})
    assert set(put) == {"name", "updated_at"} and put["name"] == "openai"
    assert api.ok("GET", "/api/v1/secrets/openai") == put
    assert api.ok("GET", "/api/v1/secrets") == {"secrets": [put]}
    status, body = api.call("DELETE", "/api/v1/secrets/openai")
    assert (status, body) == (204, "")
    assert api.call("GET", "/api/v1/secrets/openai")[0] == 404
    assert api.ok("GET", "/api/v1/secrets") == {"secrets": []}


# --- tenancy ---------------------------------------------------------------------------------


def test_another_organization_cannot_read_list_overwrite_or_delete_a_secret(new_api, container):
    a, b = new_api(), new_api()
    a_value, b_value = _value(), _value()
    a_put = a.ok("PUT", "/api/v1/secrets/openai", json={"value": a_value})
    for method in ("GET", "DELETE"):
        status, body = b.call(method, "/api/v1/secrets/openai")
        assert status == 404 and _error(body)["field"] == "name", (method, body)
    assert b.ok("GET", "/api/v1/secrets") == {"secrets": []}
    # B's PUT of the same name makes B's own secret; A's is untouched.
    assert b.call("PUT", "/api/v1/secrets/openai", json={"value": b_value})[0] == 200
    assert container.secrets.get(a.org_id, "openai") == a_value
    assert container.secrets.get(b.org_id, "openai") == b_value
    assert a.ok("GET", "/api/v1/secrets/openai") == a_put
    assert b.call("DELETE", "/api/v1/secrets/openai")[0] == 204
    assert a.ok("GET", "/api/v1/secrets") == {"secrets": [a_put]}
    assert container.secrets.get(a.org_id, "openai") == a_value
    assert (
        a_value not in container.secrets.values(b.org_id)
        and container.secrets.values(b.org_id) == ()
    )


def test_another_organization_cannot_read_list_overwrite_or_delete_a_recording(new_api, container):
    a, b = new_api(), new_api()
    a_meta = a.ok("POST", "/api/v1/recordings", json={"recording_id": "gsm", "content": RECORDING})
    for method in ("GET", "DELETE"):
        status, body = b.call(method, "/api/v1/recordings/gsm")
        assert status == 404 and _error(body)["field"] == "recording_id", (method, body)
    assert b.ok("GET", "/api/v1/recordings") == {"recordings": []}
    # The same id with other content: B's own recording (201), never a 409 that tells A's exists.
    other = RECORDING.replace('"4"', '"5"')
    status, body = b.call(
        "POST", "/api/v1/recordings", json={"recording_id": "gsm", "content": other}
    )
    assert status == 201, body
    assert body["sha256"] != a_meta["sha256"]
    assert a.ok("GET", "/api/v1/recordings/gsm") == a_meta
    assert b.call("DELETE", "/api/v1/recordings/gsm")[0] == 204
    assert a.ok("GET", "/api/v1/recordings/gsm") == a_meta
    from chalicelib.domain.models import CaseRequest

    ask = CaseRequest(run_id="r", case_id="c1", attempt=1, input="What is 2+2?")
    assert container.recordings.load(a.org_id, "gsm").find(ask)["answer"] == "4"
    assert container.recordings.load(b.org_id, "gsm") is None


def test_keys_and_names_are_under_the_organization_prefix(new_api, stack):
    a, b = new_api(), new_api()
    for api in (a, b):
        api.ok("POST", "/api/v1/recordings", json={"recording_id": "gsm", "content": RECORDING})
        api.ok("PUT", "/api/v1/secrets/openai", json={"value": _value()})
    s3 = _aws(stack, "s3")
    keys = [
        o["Key"]
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=names.RESULTS_BUCKET)
        for o in page.get("Contents", [])
    ]
    for api in (a, b):
        mine = [k for k in keys if k.startswith(f"{api.org_id}/")]
        assert mine == [f"{api.org_id}/recordings/gsm.jsonl"]
    assert all("/" in k and k.split("/", 1)[0] not in ("", "recordings") for k in keys)
    sm = _aws(stack, "secretsmanager")
    root = names.secret_name_prefix(stack.settings.assay_resource_prefix)
    listed = [s for page in sm.get_paginator("list_secrets").paginate() for s in page["SecretList"]]
    for api in (a, b):
        secret = next(s for s in listed if s["Name"] == f"{root}/{api.org_id}/openai")
        assert {"Key": "assay:org", "Value": api.org_id} in secret["Tags"]


# --- names and sizes -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["a%2Fb", "%2E%2E", "a..b", "a%23b", "%23", "a%20b", "x" * 65, "caf%C3%A9"]
)
def test_secret_names_with_path_steps_or_separators_are_refused(api: Api, name):
    for method, kwargs in (("PUT", {"json": {"value": "v"}}), ("GET", {}), ("DELETE", {})):
        status, body = api.call(method, f"/api/v1/secrets/{name}", **kwargs)
        assert status == 400 and _error(body)["field"] == "name", (method, name, body)
    assert api.ok("GET", "/api/v1/secrets") == {"secrets": []}


def test_a_slash_in_a_secret_name_is_another_path_that_no_route_serves(api: Api):
    status, body = api.call("PUT", "/api/v1/secrets/a/b", json={"value": "v"})
    assert status == 404 and "error" in body
    assert api.ok("GET", "/api/v1/secrets") == {"secrets": []}


@pytest.mark.parametrize("rid", ["a/b", "../x", "..", "a#b", "", "x" * 65, " gsm"])
def test_recording_ids_with_path_steps_or_separators_are_refused(api: Api, rid):
    status, body = api.call(
        "POST", "/api/v1/recordings", json={"recording_id": rid, "content": RECORDING}
    )
    assert status == 400 and _error(body)["field"] == "recording_id", (rid, body)
    assert api.ok("GET", "/api/v1/recordings") == {"recordings": []}


def test_secret_values_must_be_non_empty_text_of_at_most_16_kib(api: Api):
    big = "k" * (16 * 1024 + 1)
    for value in (big, "", 123, None, ["v"], {"v": 1}):
        status, body = api.call("PUT", "/api/v1/secrets/openai", json={"value": value})
        assert status == 400 and _error(body)["field"] == "value", (str(value)[:20], body)
        assert big[:64] not in json.dumps(body)
    status, body = api.call("PUT", "/api/v1/secrets/openai", json={})
    assert status == 400 and _error(body)["field"] == "value", body
    status, body = api.call("PUT", "/api/v1/secrets/openai", json={"value": "v", "extra": 1})
    assert status == 400 and _error(body)["field"] == "extra", body
    assert api.ok("GET", "/api/v1/secrets") == {"secrets": []}
    # Exactly 16 KiB (in UTF-8 bytes) is taken; one multi-byte character more is not.
    assert api.call("PUT", "/api/v1/secrets/openai", json={"value": "k" * 16 * 1024})[0] == 200
    status, body = api.call(
        "PUT", "/api/v1/secrets/openai", json={"value": "k" * (16 * 1024 - 1) + "é"}
    )
    assert status == 400 and _error(body)["field"] == "value"


def test_a_recording_over_5_mib_is_refused_with_413_naming_content(api: Api):
    line = json.dumps({"case_id": "c", "answer": "x" * 1000}) + "\n"
    content = line * (MAX_RECORDING_BYTES // len(line) + 1)
    status, body = api.call(
        "POST", "/api/v1/recordings", json={"recording_id": "big", "content": content}
    )
    assert status == 413 and _error(body)["field"] == "content", body
    assert api.call("GET", "/api/v1/recordings/big")[0] == 404


@pytest.mark.parametrize(
    "bad, line",
    [
        ('{"case_id": "c3", "answer": "TOP-SECRET-LINE-TEXT"', 3),  # not JSON
        ('["TOP-SECRET-LINE-TEXT"]', 3),  # not an object
        ('{"case_id": "TOP-SECRET-LINE-TEXT"}', 3),  # no answer
        ('{"answer": "TOP-SECRET-LINE-TEXT"}', 3),  # neither case_id nor input
    ],
)
def test_a_recording_with_a_bad_line_names_the_line_without_echoing_it(api: Api, bad, line):
    content = RECORDING + bad + "\n"
    status, body = api.call(
        "POST", "/api/v1/recordings", json={"recording_id": "bad", "content": content}
    )
    error = _error(body)
    assert status == 400 and error["field"] == "content", body
    assert f"line {line}" in error["message"]
    assert "TOP-SECRET" not in json.dumps(body)
    assert api.call("GET", "/api/v1/recordings/bad")[0] == 404


@pytest.mark.parametrize("content", ["", "\n\n", 42, None, ["a"]])
def test_a_recording_must_be_jsonl_text_with_a_line(api: Api, content):
    status, body = api.call(
        "POST", "/api/v1/recordings", json={"recording_id": "r", "content": content}
    )
    assert status == 400 and _error(body)["field"] == "content", body


# --- immutability and deletion ---------------------------------------------------------------


def test_a_recording_is_immutable_while_it_exists(api: Api):
    status, first = api.call(
        "POST", "/api/v1/recordings", json={"recording_id": "gsm", "content": RECORDING}
    )
    assert status == 201
    assert set(first) == {"recording_id", "lines", "bytes", "sha256", "uploaded_at", "uploaded_by"}
    assert (first["lines"], first["bytes"]) == (2, len(RECORDING.encode()))
    status, again = api.call(
        "POST", "/api/v1/recordings", json={"recording_id": "gsm", "content": RECORDING}
    )
    assert (status, again) == (200, first)
    status, body = api.call(
        "POST",
        "/api/v1/recordings",
        json={"recording_id": "gsm", "content": RECORDING.replace('"4"', '"5"')},
    )
    assert status == 409 and _error(body)["field"] == "recording_id", body
    # Without an id, the content names it: the same text is the same recording.
    status, derived = api.call("POST", "/api/v1/recordings", json={"content": RECORDING})
    assert status == 201 and derived["recording_id"] == f"rec-{first['sha256'][:20]}"
    assert api.call("POST", "/api/v1/recordings", json={"content": RECORDING})[0] == 200
    listed = api.ok("GET", "/api/v1/recordings")["recordings"]
    assert [r["recording_id"] for r in listed] == sorted(["gsm", derived["recording_id"]])


def test_a_recording_deleted_is_gone_for_good(api: Api, stack, container):
    api.ok("POST", "/api/v1/recordings", json={"recording_id": "gsm", "content": RECORDING})
    ds = api.dataset([{"case_id": "c1", "input": "What is 2+2?", "reference": "4"}])
    agent = api.agent({"runtime": "recorded", "recording_id": "gsm"}, publish=1)
    run = api.start(agent, ds, candidate="version", version=1)
    assert api.wait(run["run_id"])["status"] == "completed"
    assert api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["outcome"]["passed"] == 1

    assert api.call("DELETE", "/api/v1/recordings/gsm")[0] == 204
    assert api.call("GET", "/api/v1/recordings/gsm")[0] == 404
    assert api.call("DELETE", "/api/v1/recordings/gsm")[0] == 404
    assert api.ok("GET", "/api/v1/recordings") == {"recordings": []}
    s3 = _aws(stack, "s3")
    versions = s3.list_object_versions(Bucket=names.RESULTS_BUCKET, Prefix=f"{api.org_id}/")
    assert versions.get("Versions", []) == [] and versions.get("DeleteMarkers", []) == []
    assert container.recordings.load(api.org_id, "gsm") is None
    # A version that names it now has nothing to replay: the case fails, nothing is answered from
    # a cache; a draft that names it cannot be evaluated at all.
    again = api.start(agent, ds, candidate="version", version=1)
    assert api.wait(again["run_id"])["status"] == "completed"
    status, body = api.call(
        "POST", f"/api/v1/agents/{agent}/eval-runs", json={"dataset_id": ds, "candidate": "draft"}
    )
    assert status == 400 and body["error"]["problems"][0]["field"] == "spec.recording_id"
    outcome = api.ok("GET", f"/api/v1/eval-runs/{again['run_id']}")["outcome"]
    assert outcome["passed"] == 0
    # The id is free again, for any content.
    status, _ = api.call(
        "POST",
        "/api/v1/recordings",
        json={"recording_id": "gsm", "content": RECORDING.replace('"4"', '"5"')},
    )
    assert status == 201


def test_a_secret_put_in_the_api_is_what_a_runtime_reads_for_its_organization_only(
    new_api, container
):
    a, b = new_api(), new_api()
    value = _value()
    a.ok("PUT", "/api/v1/secrets/openai", json={"value": value})
    assert wait_for(lambda: container.secrets.get(a.org_id, "openai")) == value
    assert container.secrets.get(b.org_id, "openai") is None
    assert value in container.secrets.values(a.org_id)
    a.ok("DELETE", "/api/v1/secrets/openai")
    assert container.secrets.get(a.org_id, "openai") is None
    assert value not in container.secrets.values(a.org_id)


# --- secrets written into configuration -----------------------------------------------------------

GITHUB = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
OPENAI = "sk-proj-Abc123Def456Ghi789Jkl012Mno345Pqr678"


def refused_naming(
    api: Api, method: str, path: str, body: dict[str, Any], field: str, secret: str
) -> None:
    status, error = api.call(method, path, json=body)
    assert status == 400, (status, error)
    assert error["error"]["field"] == field, error
    assert secret not in json.dumps(error) and "secrets" in error["error"]["message"]


def test_a_key_written_into_a_spec_settings_or_judge_is_refused_naming_where(api: Api, container):
    own = _value()
    api.ok("PUT", "/api/v1/secrets/openai", json={"value": own})
    base = {"runtime": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"}
    sleepy = {"runtime": "python", "entrypoint": "bench.agents:sleepy"}
    for spec, field, secret in [
        ({**base, "api_key": OPENAI}, "spec.api_key", OPENAI),
        ({**base, "system_prompt": f"call the tool with {OPENAI}"}, "spec.system_prompt", OPENAI),
        ({**sleepy, "options": {"token": GITHUB}}, "spec.options.token", GITHUB),
        (
            {**sleepy, "options": {"answer": "42", "extra": ["x", f"pw {own}"]}},
            "spec.options.extra[1]",
            own,
        ),
    ]:
        refused_naming(api, "POST", "/api/v1/agents", {"name": "a", "spec": spec}, field, secret)
    assert api.ok("GET", "/api/v1/agents")["agents"] == []  # nothing was stored
    agent = api.agent({**sleepy, "options": {"answer": "42"}})
    refused_naming(
        api,
        "PUT",
        f"/api/v1/agents/{agent}/draft",
        {"spec": {**sleepy, "options": {"k": GITHUB}}},
        "spec.options.k",
        GITHUB,
    )
    assert GITHUB not in json.dumps(api.ok("GET", f"/api/v1/agents/{agent}/draft"))
    # A model profile's settings and a judge spec are stored and shown too.
    refused_naming(
        api,
        "POST",
        "/api/v1/model-profiles",
        {
            "model_profile_id": "p",
            "model": "m",
            "settings": {"base_url": "http://127.0.0.1:9/v1", "system_prompt": f"key: {own}"},
        },
        "settings.system_prompt",
        own,
    )
    api.ok(
        "POST",
        "/api/v1/model-profiles",
        json={
            "model_profile_id": "grader",
            "model": "m",
            "settings": {"base_url": "http://127.0.0.1:9/v1"},
        },
    )
    judge = api.ok("POST", "/api/v1/judges", json={"name": "quality"})["judge_id"]
    refused_naming(
        api,
        "POST",
        f"/api/v1/judges/{judge}/versions",
        {
            "model_profile_id": "grader",
            "threshold": 4,
            "prompt_version": "1",
            "instructions": f"use {OPENAI} to look things up",
            "criteria": [{"criterion_id": "c", "text": "Correct."}],
        },
        "instructions",
        OPENAI,
    )
    # The publish pipeline's event is refused the same way (it can never be processed).
    from chalicelib.services import agent_events

    event = {
        "type": "version_published",
        "org_id": api.org_id,
        "agent_id": agent,
        "version": 1,
        "spec": {**sleepy, "options": {"token": GITHUB}},
    }
    with pytest.raises(agent_events.MalformedEventError, match=r"spec\.options\.token") as caught:
        agent_events.handle(container, signed(api, event))
    assert GITHUB not in str(caught.value)
    assert api.ok("GET", f"/api/v1/agents/{agent}")["latest_version"] is None
