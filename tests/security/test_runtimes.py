"""What a tenant's spec may make the service do, driven through the HTTP API on the embedded stack
(issue 9 scope 1-4): credentials, server files, imports, Lambda functions and network addresses.

Attacks and what they now get:
- an `openai` agent, a model profile or a judge naming `api_key_env: ASSAY_JWT_SECRET` (or
  `AWS_SECRET_ACCESS_KEY`) with the tenant's own server as `base_url`: 400 naming `spec.api_key_env`
  / `settings.api_key_env` at save (a profile stored before the rule: 400 when a judge is published
  on it or an arm runs on it); a legitimate eval against a loopback listener shows it never sees the
  signing secret, an AWS key or any value of the service's environment, and exactly the
  organization's secret when `api_key_secret` names one; a literal credential in a header: 400
  naming the headers;
- `recorded` with a `recording` path (`/etc/passwd`, `../../x`, a file that exists, one that does
  not): the same 400 naming `spec.recording`, whatever the file;
- `python` with `os:getcwd`, `subprocess:run`, attribute walks (`bench.agents:os.system`), names the
  module imported (`bench.agents:defaultdict`), dunder and private names: 400 naming
  `spec.entrypoint`; with `ASSAY_PYTHON_AGENT_MODULES` empty: 400 naming `spec.runtime` and the
  setting;
- `lambda` with a name outside `ASSAY_LAMBDA_FUNCTION_PREFIX`, an ARN, another account's function:
  400 naming `spec.function_name`; with the prefix empty: 400 naming the setting;
- a dataset whose `json_schema` check (or setting) has a `$ref` to a URL, a file or another schema:
  400 naming its `schema` field, and nothing is fetched;
- `http`/`openai` agents, model profiles and judges at link-local, metadata, unspecified,
  IPv4-mapped, hex-written addresses, or names resolving to them: 400 naming the URL field and the
  address class at save; a name re-pointed at the metadata address, or loopback after the operator
  turned private networks off, after the spec was saved: the attempt fails "egress refused" and
  nothing is connected; a redirect from a 127.0.0.1 agent to a refused address: refused, never
  followed.

Nothing here sends traffic anywhere but 127.0.0.1: every name resolves through the stub resolver,
and every allowed destination is a listener on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from chalicelib.domain.records import ModelProfile
from tests.support.e2e import Api

CASES = [
    {"case_id": "c1", "input": "What is 6 times 7?", "reference": "42"},
    {"case_id": "c2", "input": "And 40 plus 2?", "reference": "42"},
]


class Listener:
    """A tiny HTTP server on 127.0.0.1 that records every request it gets (path, headers, body).

    It answers like an OpenAI-compatible endpoint on `.../chat/completions` ("42", or a judge's
    grades when asked to grade) and like an `http` agent elsewhere; any path under `/bounce` answers
    307 to `redirect_to`.
    """

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.redirect_to = ""
        listener = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                listener.requests.append(
                    {
                        "path": self.path,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "body": raw.decode("utf-8", "replace"),
                    }
                )
                if self.path.startswith("/bounce"):
                    self._reply(307, b"", location=listener.redirect_to)
                    return
                if self.path.endswith("/chat/completions"):
                    content = (
                        json.dumps(
                            {"grades": [{"criterion_id": "correct", "score": 5, "reason": "right"}]}
                        )
                        if "ANSWER:" in raw.decode("utf-8", "replace")
                        else "42"
                    )
                    payload = {
                        "id": "x",
                        "model": "listener-model",
                        "usage": {"prompt_tokens": 5, "completion_tokens": 1},
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": content},
                            }
                        ],
                    }
                else:
                    payload = {"answer": "42"}
                self._reply(200, json.dumps(payload).encode())

            def _reply(self, status: int, data: bytes, location: str | None = None) -> None:
                self.send_response(status)
                if location is not None:
                    self.send_header("location", location)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    def seen(self) -> str:
        """Everything every request carried (headers and bodies), as one text."""
        return json.dumps(self.requests)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


@pytest.fixture
def fresh(listener: Listener) -> Listener:
    listener.requests.clear()
    listener.redirect_to = ""
    return listener


def refused(
    api: Api, method: str, path: str, body: dict[str, Any], field: str, *words: str
) -> dict[str, Any]:
    """The error of a 400 that names `field` and says each of `words`."""
    status, got = api.call(method, path, json=body)
    assert status == 400, (status, got)
    error = got["error"]
    assert error["field"] == field, error
    for word in words:
        assert word in error["message"], error
    return error


def save_agent(api: Api, spec: dict[str, Any], field: str, *words: str) -> dict[str, Any]:
    return refused(api, "POST", "/api/v1/agents", {"name": "a", "spec": spec}, field, *words)


def results(api: Api, run_id: str) -> list[dict[str, Any]]:
    return api.ok("GET", f"/api/v1/eval-runs/{run_id}")["results"]


def run(api: Api, agent: str, ds: str, **body: Any) -> list[dict[str, Any]]:
    started = api.start(agent, ds, **body)
    api.wait(started["run_id"])
    return results(api, started["run_id"])


def secret(api: Api, name: str) -> str:
    value = f"org-secret-{uuid.uuid4().hex}"
    api.ok("PUT", f"/api/v1/secrets/{name}", json={"value": value})
    return value


def judged_dataset(api: Api, judge_id: str) -> str:
    ds = api.ok("POST", "/api/v1/datasets", json={"name": "judged"})["dataset_id"]
    api.ok(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={
            "scoring": {"required": ["judge"], "settings": {"judge": {"judge_id": judge_id}}},
            "cases": CASES,
        },
    )
    return ds


def publish_judge(api: Api, profile: str) -> tuple[int, Any]:
    judge = api.ok("POST", "/api/v1/judges", json={"name": "quality"})["judge_id"]
    status, body = api.call(
        "POST",
        f"/api/v1/judges/{judge}/versions",
        json={
            "model_profile_id": profile,
            "threshold": 4,
            "prompt_version": "1",
            "criteria": [
                {"criterion_id": "correct", "text": "The answer says what the reference says."}
            ],
        },
    )
    return status, {"judge_id": judge, **(body if isinstance(body, dict) else {"body": body})}


# --- (a) credentials are the organization's secrets, never the environment -----------------------


@pytest.mark.parametrize(
    "variable", ["ASSAY_JWT_SECRET", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID"]
)
def test_api_key_env_is_refused_in_an_agent_a_model_profile_and_a_draft(api, fresh, variable):
    spec = {
        "runtime": "openai",
        "base_url": f"{fresh.url}/v1",
        "model": "m",
        "api_key_env": variable,
    }
    save_agent(api, spec, "spec.api_key_env", "api_key_secret")
    agent = api.agent({"runtime": "openai", "base_url": f"{fresh.url}/v1", "model": "m"})
    refused(
        api,
        "PUT",
        f"/api/v1/agents/{agent}/draft",
        {"spec": spec},
        "spec.api_key_env",
        "api_key_secret",
    )
    refused(
        api,
        "POST",
        "/api/v1/model-profiles",
        {
            "model_profile_id": "p",
            "model": "m",
            "settings": {"base_url": f"{fresh.url}/v1", "api_key_env": variable},
        },
        "settings.api_key_env",
        "api_key_secret",
    )
    assert fresh.requests == []


def test_a_profile_stored_before_the_rule_cannot_carry_api_key_env_into_a_judge_or_an_arm(
    api, container, fresh
):
    legacy = ModelProfile(
        org_id=api.org_id,
        model_profile_id="legacy",
        name="legacy",
        model="m",
        settings={"base_url": f"{fresh.url}/v1", "api_key_env": "ASSAY_JWT_SECRET"},
        created_at="2026-01-01T00:00:00+00:00",
        created_by="old",
    )
    container.model_profiles.create(legacy)
    status, body = publish_judge(api, "legacy")
    assert status == 400 and body["error"]["field"] == "settings.api_key_env", body
    agent = api.agent({"runtime": "openai", "base_url": f"{fresh.url}/v1", "model": "m"})
    ds = api.dataset(CASES)
    refused(
        api,
        "POST",
        f"/api/v1/agents/{agent}/eval-runs",
        {"dataset_id": ds, "candidate": "draft", "model_profile_ids": ["legacy"]},
        "spec.api_key_env",
    )
    assert fresh.requests == []


@pytest.mark.parametrize(
    "settings",
    [
        {"runtime": "python"},
        {"entrypoint": "os:getcwd"},
        {"recording": "/etc/passwd"},
        {"recording_id": "r"},
        {"function_name": "assay-agent-x"},
        {"inline": {"c1": "x"}},
    ],
)
def test_a_model_profile_holds_connection_settings_only(api, settings):
    key = next(iter(settings))
    refused(
        api,
        "POST",
        "/api/v1/model-profiles",
        {"model_profile_id": "p", "model": "m", "settings": settings},
        f"settings.{key}",
        "connection keys",
    )


@pytest.mark.parametrize(
    ("headers", "field"),
    [
        ({"Authorization": "Bearer literal-token"}, "spec.headers"),
        ({"X-Api-Key": "sk-abcdefghijklmnopqrstuvwxyz0123"}, "spec.headers"),
        ({"X-Aws": "AKIAIOSFODNN7EXAMPLE"}, "spec.headers"),
    ],
)
def test_a_literal_credential_in_a_header_is_refused_at_save(api, fresh, headers, field):
    save_agent(
        api, {"runtime": "http", "url": f"{fresh.url}/ask", "headers": headers}, field, "secret"
    )
    save_agent(
        api,
        {
            "runtime": "openai",
            "base_url": f"{fresh.url}/v1",
            "model": "m",
            "extra_headers": headers,
        },
        "spec.extra_headers",
        "secret",
    )


def _environment_values(stack) -> set[str]:
    """Every value of the service's environment an agent must never see; the API's public address
    (`ASSAY_PUBLIC_URL`) is left out: an `http` agent is given its tool gateway under it."""
    public = os.environ.get("ASSAY_PUBLIC_URL")
    values = {v for k, v in os.environ.items() if len(v) >= 8 and k != "ASSAY_PUBLIC_URL"}
    values |= {
        stack.settings.assay_jwt_secret,
        os.environ.get("AWS_SECRET_ACCESS_KEY", ""),
        os.environ.get("AWS_ACCESS_KEY_ID", ""),
    }
    return {v for v in values if v and v != public}


def test_a_legitimate_eval_sends_the_listener_its_secrets_and_nothing_of_the_environment(
    api, stack, fresh
):
    key, gateway, judge_key = (
        secret(api, "openai"),
        secret(api, "gateway"),
        secret(api, "judge-key"),
    )
    ds = api.dataset(CASES)
    openai_agent = api.agent(
        {
            "runtime": "openai",
            "base_url": f"{fresh.url}/v1",
            "model": "m",
            "api_key_secret": "openai",
            "extra_headers": {"X-Team": "evals", "X-Gateway": {"secret": "gateway"}},
        }
    )
    http_agent = api.agent(
        {
            "runtime": "http",
            "url": f"{fresh.url}/ask",
            "headers": {"Authorization": {"secret": "openai", "prefix": "Bearer "}},
        }
    )
    api.ok(
        "POST",
        "/api/v1/model-profiles",
        json={
            "model_profile_id": "grader",
            "model": "judge-m",
            "settings": {"base_url": f"{fresh.url}/judge/v1", "api_key_secret": "judge-key"},
        },
    )
    status, judge = publish_judge(api, "grader")
    assert status in (200, 201), judge
    for agent, dataset in (
        (openai_agent, ds),
        (http_agent, ds),
        (http_agent, judged_dataset(api, judge["judge_id"])),
    ):
        assert {r["state"] for r in run(api, agent, dataset)} == {"passed"}

    seen = fresh.seen()
    for value in _environment_values(stack):
        assert value not in seen, "the listener saw a value of the service's environment"
    assert "AKIA" not in seen and "ASIA" not in seen
    paths = {r["path"] for r in fresh.requests}
    assert paths == {"/v1/chat/completions", "/ask", "/judge/v1/chat/completions"}
    auth = {(r["path"], r["headers"].get("authorization")) for r in fresh.requests}
    assert auth == {
        ("/v1/chat/completions", f"Bearer {key}"),
        ("/ask", f"Bearer {key}"),
        ("/judge/v1/chat/completions", f"Bearer {judge_key}"),
    }
    assert {
        r["headers"].get("x-gateway") for r in fresh.requests if r["path"] == "/v1/chat/completions"
    } == {gateway}


def test_a_secret_the_organization_lacks_fails_as_missing_credentials_without_a_request(
    api, new_api, fresh
):
    other = new_api()
    secret(other, "openai")  # another organization's secret of that name is not this one's
    agent = api.agent(
        {
            "runtime": "openai",
            "base_url": f"{fresh.url}/v1",
            "model": "m",
            "api_key_secret": "openai",
        }
    )
    # a publish, as a draft's start, refuses a secret its organization lacks, whoever else has one
    status, refused = api.call("POST", f"/api/v1/agents/{agent}/versions")
    assert status == 400, refused
    assert [p["field"] for p in refused["error"]["problems"]] == ["spec.api_key_secret"]
    # a version published while the secret was there, run after it was removed
    secret(api, "openai")
    api.ok("POST", f"/api/v1/agents/{agent}/versions")
    api.ok("DELETE", "/api/v1/secrets/openai")
    got = run(api, agent, api.dataset(CASES), candidate="version")
    assert {r["state"] for r in got} == {"incomplete"}
    for r in got:
        assert "credentials missing: secret openai is not set in this organization" in r["error"]
        assert "environment" not in r["error"]
    assert fresh.requests == []


# --- (b) recordings are uploads, never paths ------------------------------------------------------


def test_a_recording_path_gets_the_same_400_whether_the_file_exists(api, tmp_path: Path):
    existing = tmp_path / "answers.jsonl"
    existing.write_text(json.dumps({"case_id": "c1", "answer": "42"}) + "\n")
    messages = set()
    for path in (
        "/etc/passwd",
        "../../x",
        str(existing),
        str(tmp_path / "missing.jsonl"),
        "~/.aws/credentials",
    ):
        error = save_agent(
            api,
            {"runtime": "recorded", "recording": path},
            "spec.recording",
            "POST /api/v1/recordings",
            "recording_id",
        )
        messages.add(error["message"])
    assert len(messages) == 1
    assert str(tmp_path) not in messages.pop()


# --- (c) python entrypoints only under the operator's modules -------------------------------------


@pytest.mark.parametrize(
    "entrypoint",
    [
        "os:getcwd",
        "subprocess:run",
        "builtins:eval",
        "importlib:import_module",
        "chalicelib.config:get_settings",
        "bench.agents:os.system",
        "bench.agents:time.sleep",
        "bench.agents:threading.Thread",
        "bench.agents:defaultdict",
        "bench.agents:__builtins__",
        "bench.agents:__loader__",
        "bench.agents:_enter",
        "bench.agentsx:sleepy",
        "bench:agents",
        "tests.support.e2e:httpx.Client",
        "tests.support.e2e:time",
    ],
)
def test_a_python_entrypoint_outside_the_operators_modules_is_refused(api, entrypoint):
    save_agent(api, {"runtime": "python", "entrypoint": entrypoint}, "spec.entrypoint")


def test_the_refusal_does_not_tell_whether_an_unlisted_module_exists(api):
    first = save_agent(api, {"runtime": "python", "entrypoint": "json:loads"}, "spec.entrypoint")
    second = save_agent(
        api, {"runtime": "python", "entrypoint": "no_such_module_xyz:loads"}, "spec.entrypoint"
    )
    assert first["message"].replace("json", "<m>") == second["message"].replace(
        "no_such_module_xyz", "<m>"
    )


def test_with_no_modules_allowed_python_is_refused_naming_the_setting(api, operator):
    saved = api.agent({"runtime": "python", "entrypoint": "bench.agents:sleepy"})
    ds = api.dataset(CASES)
    operator(assay_python_agent_modules="")
    save_agent(
        api,
        {"runtime": "python", "entrypoint": "bench.agents:sleepy"},
        "spec.runtime",
        "ASSAY_PYTHON_AGENT_MODULES",
    )
    refused(
        api,
        "POST",
        f"/api/v1/agents/{saved}/eval-runs",
        {"dataset_id": ds, "candidate": "draft"},
        "spec.runtime",
        "ASSAY_PYTHON_AGENT_MODULES",
    )


# --- (d) lambda functions only under the operator's prefix ----------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "my-agent",
        "assay-api-handler",
        "assay-agent",
        "arn:aws:lambda:us-east-1:123456789012:function:assay-agent-x",
        "arn:aws:lambda:us-east-1:999999999999:function:assay-agent-x:live",
        "999999999999:function:assay-agent-x",
        "assay-agent-x:$LATEST",
    ],
)
def test_a_lambda_function_outside_the_prefix_is_refused(api, name):
    save_agent(api, {"runtime": "lambda", "function_name": name}, "spec.function_name")


def test_with_no_prefix_lambda_is_refused_naming_the_setting(api, operator):
    api.agent({"runtime": "lambda", "function_name": "assay-agent-mine", "qualifier": "live"})
    operator(assay_lambda_function_prefix="")
    save_agent(
        api,
        {"runtime": "lambda", "function_name": "assay-agent-mine"},
        "spec.runtime",
        "ASSAY_LAMBDA_FUNCTION_PREFIX",
    )


# --- (e) egress -----------------------------------------------------------------------------------

LITERALS = [
    ("http://169.254.169.254/latest/meta-data/iam/security-credentials/", "cloud metadata address"),
    ("http://[fd00:ec2::254]/latest/meta-data/", "cloud metadata address"),
    ("http://[::ffff:169.254.169.254]/", "cloud metadata address"),
    ("http://[::ffff:a9fe:a9fe]/", "cloud metadata address"),
    ("http://[64:ff9b::a9fe:a9fe]/", "cloud metadata address"),
    ("http://169.254.170.2/v2/credentials", "link-local address"),
    ("http://[fe80::1]/", "link-local address"),
    ("http://0.0.0.0:8080/", "unspecified address"),
    ("http://0xa9fea9fe/", "169.254.169.254"),
    ("http://0x7f.1/", "127.0.0.1"),
    ("http://2130706433/", "127.0.0.1"),
]


def _url_specs(url: str) -> list[tuple[dict[str, Any], str]]:
    return [
        ({"runtime": "http", "url": url}, "spec.url"),
        ({"runtime": "openai", "base_url": url, "model": "m"}, "spec.base_url"),
    ]


@pytest.mark.parametrize(("url", "words"), LITERALS)
def test_a_literal_refused_address_is_a_400_for_agents_profiles_and_judges(
    api, resolver, url, words
):
    stub = resolver({})
    for spec, field in _url_specs(url):
        save_agent(api, spec, field, words)
    for key in ("base_url", "url"):
        refused(
            api,
            "POST",
            "/api/v1/model-profiles",
            {"model_profile_id": "p", "model": "m", "settings": {key: url}},
            f"settings.{key}",
            words,
        )
    assert stub.asked == []


@pytest.mark.parametrize(
    ("address", "words"),
    [
        ("169.254.169.254", "cloud metadata address"),
        ("fd00:ec2::254", "cloud metadata address"),
        ("::ffff:169.254.169.254", "cloud metadata address"),
        ("169.254.1.1", "link-local address"),
        ("fe80::5", "link-local address"),
    ],
)
def test_a_name_resolving_to_a_refused_address_is_a_400_at_save(api, resolver, address, words):
    stub = resolver({"agent.test": ["127.0.0.1", address]})
    for spec, field in _url_specs("http://agent.test/v1"):
        save_agent(api, spec, field, "agent.test resolves to", words)
    refused(
        api,
        "POST",
        "/api/v1/model-profiles",
        {"model_profile_id": "p", "model": "m", "settings": {"base_url": "https://agent.test/v1"}},
        "settings.base_url",
        words,
    )
    assert ("agent.test", 80) in stub.asked


def test_private_addresses_need_the_operator(api, resolver, operator, fresh):
    resolver({"intranet.test": ["10.1.2.3"]})
    api.agent({"runtime": "http", "url": "http://intranet.test/ask"})  # allowed on this stack
    operator(assay_allow_private_network=False)
    for url in (
        "http://intranet.test/ask",
        f"{fresh.url}/ask",
        "http://[::1]/",
        "http://192.168.1.1/",
    ):
        save_agent(api, {"runtime": "http", "url": url}, "spec.url", "ASSAY_ALLOW_PRIVATE_NETWORK")
    assert fresh.requests == []


def _paused(stack):
    class Paused:
        def __enter__(self):
            stack.pause_pollers()

        def __exit__(self, *exc):
            stack.resume_pollers()

    return Paused()


def test_a_name_re_pointed_at_the_metadata_address_after_saving_is_refused_when_asked(
    api, stack, resolver, fresh
):
    stub = resolver({"agent.test": ["127.0.0.1"]})
    ds = api.dataset(CASES)
    http_agent = api.agent({"runtime": "http", "url": f"http://agent.test:{fresh.port}/ask"})
    openai_agent = api.agent(
        {"runtime": "openai", "base_url": f"http://agent.test:{fresh.port}/v1", "model": "m"}
    )
    assert {r["state"] for r in run(api, http_agent, ds)} == {"passed"}
    assert len(fresh.requests) == 2
    fresh.requests.clear()
    for agent in (http_agent, openai_agent):
        with _paused(stack):
            started = api.start(agent, ds)
            stub.names["agent.test"] = [
                "169.254.169.254"
            ]  # the tenant's DNS now answers the metadata address
        api.wait(started["run_id"])
        stub.names["agent.test"] = ["127.0.0.1"]
        got = results(api, started["run_id"])
        assert {(r["state"], r["crash"]) for r in got} == {("failed", True)}
        for r in got:
            assert "egress refused" in r["error"] and "cloud metadata address" in r["error"]
    assert fresh.requests == []
    assert stub.asked


def test_loopback_is_refused_when_asked_after_the_operator_turned_private_networks_off(
    api, stack, operator, fresh
):
    ds = api.dataset(CASES)
    agent = api.agent({"runtime": "http", "url": f"{fresh.url}/ask"})
    with _paused(stack):
        started = api.start(agent, ds)
        operator(assay_allow_private_network=False)
    api.wait(started["run_id"])
    got = results(api, started["run_id"])
    assert {(r["state"], r["crash"]) for r in got} == {("failed", True)}
    assert all("egress refused" in r["error"] and "loopback address" in r["error"] for r in got)
    assert fresh.requests == []


@pytest.mark.parametrize(
    "target",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/",
        "http://[::ffff:169.254.169.254]/",
        "http://meta.test/latest/",
    ],
)
def test_a_redirect_to_a_refused_address_is_refused_and_never_followed(
    api, resolver, fresh, target
):
    stub = resolver({"meta.test": ["169.254.169.254"]})
    fresh.redirect_to = target
    ds = api.dataset(CASES[:1])
    for spec in (
        {"runtime": "http", "url": f"{fresh.url}/bounce/ask"},
        {"runtime": "openai", "base_url": f"{fresh.url}/bounce/v1", "model": "m"},
    ):
        [r] = run(api, api.agent(spec), ds)
        assert (r["state"], r["crash"]) == ("failed", True)
        assert "egress refused" in r["error"]
    assert [r["path"] for r in fresh.requests] == ["/bounce/ask", "/bounce/v1/chat/completions"]
    assert all(host == "meta.test" for host, _ in stub.asked)


def test_a_judge_whose_name_is_re_pointed_at_the_metadata_address_grades_nothing(
    api, resolver, fresh
):
    stub = resolver({"judge.test": ["127.0.0.1"]})
    api.ok(
        "POST",
        "/api/v1/model-profiles",
        json={
            "model_profile_id": "grader",
            "model": "judge-m",
            "settings": {"base_url": f"http://judge.test:{fresh.port}/v1"},
        },
    )
    status, judge = publish_judge(api, "grader")
    assert status in (200, 201), judge
    stub.names["judge.test"] = ["169.254.169.254"]
    agent = api.agent(
        {"runtime": "python", "entrypoint": "bench.agents:sleepy", "options": {"answer": "42"}}
    )
    got = run(api, agent, judged_dataset(api, judge["judge_id"]))
    scores = [s for r in got for s in r["scores"] if s["scorer"] == "judge"]
    assert scores and all("egress refused" in (s.get("reason") or "") for s in scores), scores
    assert fresh.requests == []


def test_a_judge_profile_at_a_refused_address_is_refused_at_save(api, resolver):
    resolver({"meta.test": ["169.254.169.254"]})
    for url in (
        "http://169.254.169.254/v1",
        "http://meta.test/v1",
        "http://[::ffff:169.254.169.254]/v1",
    ):
        refused(
            api,
            "POST",
            "/api/v1/model-profiles",
            {"model_profile_id": "grader", "model": "m", "settings": {"base_url": url}},
            "settings.base_url",
            "cloud metadata address",
        )


# --- a dataset's JSON schemas never fetch --------------------------------------------------------


@pytest.mark.parametrize("ref", ["{url}/schema.json", "file:///etc/passwd", "other.json"])
def test_a_json_schema_check_referring_outside_itself_is_refused_and_nothing_is_fetched(
    api, fresh, ref
):
    ref = ref.format(url=fresh.url)
    ds = api.ok("POST", "/api/v1/datasets", json={"name": "schemas"})["dataset_id"]
    cases = [
        {
            "case_id": "c1",
            "input": "a person?",
            "checks": [{"scorer": "json_schema", "schema": {"$ref": ref}}],
        }
    ]
    for scoring in (
        {"required": ["json_schema"]},
        {"required": ["json_schema"], "settings": {"json_schema": {"schema": {"$ref": ref}}}},
    ):
        status, error = api.call(
            "POST", f"/api/v1/datasets/{ds}/versions", json={"scoring": scoring, "cases": cases}
        )
        assert status == 400, (status, error)
        assert error["error"]["field"].endswith(".schema") and ref in error["error"]["message"]
    assert fresh.requests == []
