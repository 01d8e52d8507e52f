"""The names a person gives things, through the HTTP API (docs/reference/limits.md, the row
"names"): a name holding a control character (NUL, BEL, ESC, a line break, DEL, U+0085) is a 400
naming the field `name` and the characters as `U+XXXX`, and nothing is saved; so is one holding a
line or paragraph separator (U+2028, U+2029), or one that reads as blank (only invisible characters
or braille blanks). A name holding an invisible character (a zero-width joiner, a variation
selector) is kept as written. Suites' names are
`test_suite_names.py`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.e2e.conftest import Api, cases, sleepy_spec

HOSTILE = "Nightly\x00\x07\x1b[31m"
"""A name with NUL, BEL and an ANSI colour escape: refused, naming U+0000, U+0007 and U+001B."""

JOINED = "Ops\u200dBot"
"""A name with a zero-width joiner (a format character): kept as written."""


def _agent(api: Api, name: str) -> tuple[int, Any]:
    return api.call("POST", "/api/v1/agents", json={"name": name, "spec": sleepy_spec()})


def _draft(api: Api, name: str) -> tuple[int, Any]:
    agent = api.agent(sleepy_spec())
    return api.call("PUT", f"/api/v1/agents/{agent}/draft", json={"name": name})


def _dataset(api: Api, name: str) -> tuple[int, Any]:
    return api.call("POST", "/api/v1/datasets", json={"name": name})


def _judge(api: Api, name: str) -> tuple[int, Any]:
    return api.call("POST", "/api/v1/judges", json={"name": name})


def _model_profile(api: Api, name: str) -> tuple[int, Any]:
    body = {"model_profile_id": "cheap", "model": "m-small", "name": name}
    return api.call("POST", "/api/v1/model-profiles", json=body)


def _environment(api: Api, name: str) -> tuple[int, Any]:
    return api.call(
        "POST", "/api/v1/environments", json={"environment_id": "staging", "name": name}
    )


def _api_key(api: Api, name: str) -> tuple[int, Any]:
    return api.call("POST", "/api/v1/api-keys", json={"name": name, "scopes": ["runs:view"]})


def _evaluation(api: Api, name: str) -> tuple[int, Any]:
    body = {"agent_id": api.agent(sleepy_spec()), "dataset_id": api.dataset(cases(1)), "name": name}
    return api.call("POST", "/api/evaluations", json=body)


def _evaluation_renamed(api: Api, name: str) -> tuple[int, Any]:
    made = _evaluation(api, "Before")[1]
    return api.call("PATCH", f"/api/evaluations/{made['evaluation_id']}", json={"name": name})


SAVES: dict[str, Callable[[Api, str], tuple[int, Any]]] = {
    "agent": _agent,
    "agent draft": _draft,
    "dataset": _dataset,
    "judge": _judge,
    "model profile": _model_profile,
    "environment": _environment,
    "api key": _api_key,
    "evaluation": _evaluation,
    "evaluation renamed": _evaluation_renamed,
}


@pytest.mark.parametrize("what", sorted(SAVES))
def test_a_name_with_control_characters_is_refused_naming_the_field(api, what):
    status, body = SAVES[what](api, HOSTILE)
    assert status == 400, body
    error = body["error"]
    assert (error["code"], error["field"]) == ("invalid_input", "name"), error
    assert "control characters (found U+0000, U+0007, U+001B)" in error["message"], error
    assert "\x1b" not in error["message"] and "\x00" not in error["message"]


@pytest.mark.parametrize("name", ["Night\nly", "Nightly\t", "Night\x7fly", "Night\x85ly"])
def test_a_line_break_a_tab_del_and_a_c1_control_are_control_characters(api, name):
    status, body = _dataset(api, name)
    assert status == 400 and body["error"]["field"] == "name", body
    listed = api.ok("GET", "/api/v1/datasets")
    assert all(d["name"] != name for d in listed["datasets"])


@pytest.mark.parametrize("what", sorted(SAVES))
def test_a_name_with_a_format_character_is_kept_as_written(api, what):
    status, body = SAVES[what](api, JOINED)
    assert 200 <= status < 300, body
    assert body["name"] == JOINED, body


@pytest.mark.parametrize("what", sorted(SAVES))
@pytest.mark.parametrize("name", ["a\u2028b", "x\u2029y"])
def test_a_name_with_a_line_or_paragraph_separator_is_refused_naming_the_field(api, what, name):
    status, body = SAVES[what](api, name)
    assert status == 400, body
    error = body["error"]
    assert (error["code"], error["field"]) == ("invalid_input", "name"), error
    assert "line or paragraph separators (found U+202" in error["message"], error


@pytest.mark.parametrize("what", sorted(SAVES))
def test_a_name_that_reads_as_blank_is_refused_naming_the_field(api, what):
    status, body = SAVES[what](api, "\u3164\u2800")
    assert status == 400, body
    error = body["error"]
    assert (error["code"], error["field"]) == ("invalid_input", "name"), error
    assert "(found only U+3164, U+2800 and spaces, which read as blank)" in error["message"]


@pytest.mark.parametrize("what", sorted(SAVES))
def test_a_name_with_a_variation_selector_is_kept_as_written(api, what):
    status, body = SAVES[what](api, "Team \u2764\ufe0f")
    assert 200 <= status < 300, body
    assert body["name"] == "Team \u2764\ufe0f", body
