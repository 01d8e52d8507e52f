"""Bad requests are 4xx, never 500 (issue 11 scope 8), through HTTP on the embedded stack.

What each now gets, in the API's error shape naming the field or parameter:
- `NaN`, `Infinity`, `-Infinity` (or a float that parses as one, `1e400`) anywhere in a body: 400,
  nothing stored - before, the draft kept it and every read answered invalid JSON;
- an integer of more than 38 digits anywhere in a body, a version number outside 1-2147483647 in a
  body or a path: 400 - before, a 42-digit version was published and every read of the agent's
  budget answered 500;
- a string with a lone surrogate (`"\\ud800"`): 400 - before, a 500 when it was stored;
- a body over the route's limit (1 MiB; 5 MiB for dataset versions and recordings): 413;
- a malformed live-updates cursor (`?after=zzz`), an unknown `?outcome=`, a `?limit=` out of its
  range: 400 naming the parameter - before, no attempts (a silent match), every case, or a 500;
- a path id holding `#` (`%23`) or longer than 200 characters: 400 naming it, before any store is
  asked.
"""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

from tests.support.e2e import Api, cases, sleepy_spec, wait_for


def _post(api: Api, method: str, path: str, text: str) -> tuple[int, Any]:
    return api.call(
        method, path, content=text.encode(), headers={"Content-Type": "application/json"}
    )


def _refused(reply: tuple[int, Any], status: int, field: str) -> dict[str, Any]:
    code, body = reply
    assert code == status, (code, body)
    assert set(body) == {"error"} and body["error"]["field"] == field, body
    return body["error"]


def _agent(api: Api, agent_id: str = "bot") -> str:
    api.ok(
        "POST", "/api/v1/agents", json={"name": "Bot", "agent_id": agent_id, "spec": sleepy_spec()}
    )
    return agent_id


# --- numbers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"])
def test_a_non_finite_number_in_a_body_is_a_400_naming_its_field_and_nothing_is_kept(api, constant):
    agent = _agent(api)
    spec = json.dumps(sleepy_spec()).replace('"42"', constant)  # options.answer
    error = _refused(
        _post(api, "PUT", f"/api/v1/agents/{agent}/draft", f'{{"spec": {spec}}}'),
        400,
        "spec.options.answer",
    )
    assert "finite" in error["message"] or "outside the range" in error["message"], error
    draft = api.ok("GET", f"/api/v1/agents/{agent}/draft")
    assert draft["spec"]["options"]["answer"] == "42", draft


def test_a_42_digit_version_number_is_refused_and_the_agent_stays_readable(api):
    agent = _agent(api)
    huge = "1" * 42
    _refused(
        _post(api, "POST", f"/api/v1/agents/{agent}/versions", f'{{"version": {huge}}}'),
        400,
        "version",
    )
    _refused(
        _post(api, "POST", f"/api/v1/agents/{agent}/versions", f'{{"version": {2**31}}}'),
        400,
        "version",
    )
    for path in ("", "/versions", "/budget", "/draft", "/eval-runs", "/suites", "/promotions"):
        api.ok("GET", f"/api/v1/agents/{agent}{path}")
    published = api.ok("POST", f"/api/v1/agents/{agent}/versions", json={"version": 2**31 - 1})
    assert published["version"] == 2**31 - 1, published
    assert api.ok("GET", f"/api/v1/agents/{agent}/versions/{2**31 - 1}")["version"] == 2**31 - 1


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/v1/agents/bot/versions/{n}"),
        ("GET", "/api/v1/judges/j/versions/{n}"),
        ("GET", "/api/v1/datasets/d/versions/{n}/cases"),
    ],
)
def test_a_version_number_in_a_path_beyond_the_bound_is_a_400_naming_version(api, method, path):
    for n in ("1" * 42, str(2**31), "0"):
        _refused(api.call(method, path.format(n=n)), 400, "version")


def test_an_integer_of_more_than_38_digits_anywhere_in_a_body_is_a_400_naming_its_field(api):
    spec = {**sleepy_spec(), "options": {"answer": "42", "n": "HUGE"}}
    text = json.dumps({"name": "Bot", "spec": spec}).replace('"HUGE"', "9" * 39)
    _refused(_post(api, "POST", "/api/v1/agents", text), 400, "spec.options.n")
    text = json.dumps({"name": "Bot", "spec": spec}).replace('"HUGE"', "9" * 38)
    assert _post(api, "POST", "/api/v1/agents", text)[0] == 201


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"dataset_id": "d", "version": 10**12}, "version"),
        ({"dataset_id": "d", "dataset_version": 10**12}, "dataset_version"),
        ({"dataset_id": "d", "candidate": 10**12}, "candidate"),
    ],
)
def test_a_run_s_version_numbers_are_bounded(api, body, field):
    agent = _agent(api)
    for path in (f"/api/v1/agents/{agent}/eval-runs", f"/api/v1/agents/{agent}/eval-runs/estimate"):
        _refused(api.call("POST", path, json=body), 400, field)


# --- text ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "text", "field"),
    [
        ("PUT", "/api/v1/secrets/key", '{"value": "abc\\ud800def"}', "value"),
        (
            "POST",
            "/api/v1/recordings",
            '{"content": "{\\"answer\\": \\"\\udc00\\"}\\n"}',
            "content",
        ),
        ("POST", "/api/v1/agents", '{"name": "\\ud800", "spec": {}}', "name"),
        (
            "POST",
            "/api/v1/datasets/d/versions",
            '{"scoring": {}, "cases": [{"tags": ["\\ud800"]}]}',
            "cases[0].tags[0]",
        ),
    ],
)
def test_a_lone_surrogate_in_a_body_is_a_400_naming_its_field(api, method, path, text, field):
    error = _refused(_post(api, method, path, text), 400, field)
    assert "surrogate" in error["message"], error


def test_a_surrogate_pair_is_text_and_is_kept(api):
    _post(
        api,
        "POST",
        "/api/v1/agents",
        '{"name": "Bot \\ud83d\\ude00", "agent_id": "b", "spec": '
        + json.dumps(sleepy_spec())
        + "}",
    )
    assert api.ok("GET", "/api/v1/agents/b")["name"] == "Bot \U0001f600"


# --- sizes -----------------------------------------------------------------------------------


def test_a_body_over_1_mib_is_a_413_naming_the_body(api):
    big = {"name": "Bot", "spec": {**sleepy_spec(), "options": {"pad": "x" * (1024 * 1024)}}}
    error = _refused(api.call("POST", "/api/v1/agents", json=big), 413, "body")
    assert error["code"] == "payload_too_large" and str(1024 * 1024) in error["message"], error
    api.call("GET", "/api/v1/agents/nope")  # the server still answers
    assert api.ok("GET", "/api/v1/agents") == {"agents": []}


def test_a_spec_too_large_to_keep_on_a_run_is_a_413_naming_it_and_nothing_is_kept(api):
    def spec(pad: int) -> dict[str, Any]:
        return {**sleepy_spec(), "options": {"pad": "x" * pad}}

    big = spec(48 * 1024)
    error = _refused(
        api.call("POST", "/api/v1/agents", json={"name": "B", "spec": big}), 413, "spec"
    )
    assert error["code"] == "payload_too_large", error
    assert api.ok("GET", "/api/v1/agents") == {"agents": []}
    agent = api.agent(sleepy_spec())
    _refused(api.call("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": big}), 413, "spec")
    assert api.ok("GET", f"/api/v1/agents/{agent}/draft")["spec"] == sleepy_spec()
    # the largest spec it takes runs, paired, with a copy on each side
    largest = spec(48 * 1024 - len(json.dumps(spec(0))))
    assert len(json.dumps(largest).encode()) == 48 * 1024
    api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": largest})
    api.ok("POST", f"/api/v1/agents/{agent}/versions")
    api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": spec(48 * 1024 - 200)})
    ds = api.dataset(cases(1))
    run = api.start(agent, ds, paired_baseline=True)
    assert api.wait(run["run_id"])["status"] == "completed"


def test_a_dataset_version_takes_more_than_1_mib_and_at_most_5_mib(api):
    api.ok("POST", "/api/v1/datasets", json={"name": "D", "dataset_id": "d"})
    scoring = {"required": ["numeric_answer"]}
    two_mib = [{**c, "note": "x" * 20_000} for c in cases(100)]
    assert len(json.dumps({"scoring": scoring, "cases": two_mib})) > 1024 * 1024
    api.ok("POST", "/api/v1/datasets/d/versions", json={"scoring": scoring, "cases": two_mib})
    six_mib = [{**c, "note": "x" * 60_000} for c in cases(100)]
    _refused(
        api.call(
            "POST", "/api/v1/datasets/d/versions", json={"scoring": scoring, "cases": six_mib}
        ),
        413,
        "body",
    )


# --- query parameters and path ids -----------------------------------------------------------


@pytest.fixture
def ended_run(api) -> str:
    agent = _agent(api)
    api.ok("POST", "/api/v1/datasets", json={"name": "D", "dataset_id": "d"})
    api.ok(
        "POST",
        "/api/v1/datasets/d/versions",
        json={"scoring": {"required": ["numeric_answer"]}, "cases": cases(2)},
    )
    run = api.ok(
        "POST", f"/api/v1/agents/{agent}/eval-runs", json={"dataset_id": "d", "candidate": "draft"}
    )
    wait_for(lambda: api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["status"] == "completed")
    return run["run_id"]


def test_a_malformed_live_updates_cursor_is_a_400_naming_after(api, ended_run):
    for path in (f"/api/v1/eval-runs/{ended_run}/events", f"/api/evaluations/stream/{ended_run}"):
        for after in ("zzz", "123#x", "9" * 13):
            _refused(api.call("GET", path, params={"after": after, "wait": 0}), 400, "after")
        everything = api.ok("GET", path, params={"wait": 0})
        assert len(everything["events"]) == 2, everything
        again = api.ok("GET", path, params={"after": everything["cursor"], "wait": 0})
        assert again["events"] == [], again


def test_an_unknown_outcome_filter_is_a_400_naming_outcome(api, ended_run):
    _refused(api.call("GET", f"/api/v1/eval-runs/{ended_run}/cases?outcome=bogus"), 400, "outcome")
    passed = api.ok("GET", f"/api/v1/eval-runs/{ended_run}/cases?outcome=passed")
    assert len(passed["cases"]) == 2, passed


@pytest.mark.parametrize("limit", ["0", "-1", "201", "1" * 40, "lots"])
def test_a_listing_limit_out_of_its_range_is_a_400_naming_limit(api, limit):
    agent = _agent(api)
    api.ok("POST", "/api/v1/datasets", json={"name": "D", "dataset_id": "d"})
    api.ok(
        "POST",
        "/api/v1/datasets/d/versions",
        json={"scoring": {"required": ["numeric_answer"]}, "cases": cases(1)},
    )
    api.ok("POST", "/api/v1/environments", json={"environment_id": "production"})
    api.ok("POST", f"/api/v1/agents/{agent}/suites", json={"dataset_id": "d", "suite_id": "s"})
    for path in (
        f"/api/v1/agents/{agent}/suites/s/results",
        "/api/v1/eval-runs",
        f"/api/v1/agents/{agent}/eval-runs",
        "/api/v1/datasets/d/eval-runs",
    ):
        _refused(api.call("GET", path, params={"limit": limit}), 400, "limit")


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/api/v1/agents/a%23b", "agent_id"),
        ("/api/v1/agents/%23/versions", "agent_id"),
        ("/api/v1/datasets/org%23x/eval-runs", "dataset_id"),
        ("/api/v1/eval-runs/run%23/cases", "run_id"),
        ("/api/v1/agents/bot/suites/s%23s", "suite_id"),
        ("/api/v1/agents/" + "x" * 201, "agent_id"),
        ("/api/v1/secrets/" + "x" * 300, "name"),
    ],
)
def test_a_path_id_with_a_hash_or_too_long_is_a_400_naming_it(api, path, field):
    _agent(api)
    error = _refused(api.call("GET", path), 400, field)
    assert "#" in error["message"] or "longer than 200" in error["message"], error


def _raw_request(stack, head: str) -> str:
    """Send `head` (a request line and headers, no body) to the API; the reply's text."""
    host, port = stack.api_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as conn:
        conn.sendall(head.encode() + b"\r\n\r\n")
        reply = b""
        while chunk := conn.recv(65536):
            reply += chunk
    return reply.decode()


@pytest.mark.parametrize(
    ("length", "status", "code"),
    [(str(10 * 1024 * 1024 + 1), 413, "payload_too_large"), ("lots", 400, "bad_request")],
)
def test_the_gateway_refuses_a_body_over_10_mib_or_an_unreadable_length_before_reading_it(
    stack, api, length, status, code
):
    token = api.http.headers["Authorization"]
    reply = _raw_request(
        stack,
        f"POST /api/v1/agents HTTP/1.1\r\nHost: x\r\nAuthorization: {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}",
    )
    head, _, body = reply.partition("\r\n\r\n")
    assert head.startswith(f"HTTP/1.1 {status} ") or head.startswith(f"HTTP/1.0 {status} "), head
    assert json.loads(body)["error"]["code"] == code, body


def test_a_case_too_large_for_one_item_is_a_400_naming_it(api):
    api.ok("POST", "/api/v1/datasets", json={"name": "D", "dataset_id": "d"})
    scoring = {"required": ["numeric_answer"]}
    big = [*cases(1), {"case_id": "big", "input": "x" * 300_000, "reference": "1"}]
    error = _refused(
        api.call("POST", "/api/v1/datasets/d/versions", json={"scoring": scoring, "cases": big}),
        400,
        "cases[1]",
    )
    assert "at most 262144" in error["message"], error
    content = json.dumps({"case_id": "big", "input": "x" * 300_000, "reference": "1"}) + "\n"
    error = _refused(
        api.call(
            "POST",
            "/api/v1/datasets/d/versions",
            json={"scoring": scoring, "source": {"format": "jsonl", "content": content}},
        ),
        400,
        "source",
    )
    assert "line 1" in error["message"] and "at most 262144" in error["message"], error
