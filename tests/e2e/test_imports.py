"""Bringing existing tests (issue 13 scope 3), through the HTTP API on the embedded stack: a
promptfoo test file and an Inspect dataset become dataset versions that an eval run grades; a
refused file names its line and field and leaves no dataset behind, and trying again works; a
file's rubrics grade through a judge that has them; a run's cases and a version's cases come in
pages that hold every case once; `assay import` does it all from the command line."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay_local import cli
from tests.e2e.conftest import sleepy_spec
from tests.support.fake_openai import FakeOpenAI
from tests.support.judges import grader_profile

PROMPTFOO = """\
description: greeting and arithmetic checks
prompts: ["{{input}}"]
providers: [openai:gpt-4o-mini]
defaultTest:
  assert:
    - type: not-icontains
      value: as an ai
tests:
  - description: greets in French
    vars:
      input: Say hello in French.
    assert:
      - type: icontains
        value: bonjour
  - description: adds
    vars:
      question: What is {{a}} + {{b}}?
      a: 2
      b: 2
      expected: "4"
    assert:
      - type: equals
        value: "{{expected}}"
  - description: lists colours
    vars:
      input: Name two primary colours as JSON.
    assert:
      - type: contains-json
        value: {type: array, minItems: 2}
      - type: contains-any
        value: [red, blue, yellow]
"""


def create(api, dataset_id: str, **body: Any) -> tuple[int, Any]:
    return api.call(
        "POST", "/api/v1/datasets", json={"name": dataset_id, "dataset_id": dataset_id, **body}
    )


def states(api, run_id: str) -> dict[str, str]:
    view = api.ok("GET", f"/api/v1/eval-runs/{run_id}")
    return {r["case_id"]: r["state"] for r in view["results"]}


def test_a_promptfoo_file_is_imported_and_graded_by_its_assertions(api):
    status, body = create(api, "pf", source={"format": "promptfoo", "content": PROMPTFOO})
    assert status == 201, body
    version = body["version"]
    assert (body["latest_version"], version["case_count"], version["ungraded_cases"]) == (1, 3, 0)
    assert version["scoring"]["required"] == [
        "regex",
        "icontains",
        "equals",
        "json_schema",
        "contains",
    ]
    cases = api.ok("GET", "/api/v1/datasets/pf/versions/1/cases")["cases"]
    assert [c["case_id"] for c in cases] == ["adds", "greets in French", "lists colours"]
    adds = cases[0]
    # The vars' question is the input as written (vars are not rendered into it); the assertion's
    # {{expected}} was filled in.
    assert adds["input"] == "What is {{a}} + {{b}}?"
    assert [c["scorer"] for c in adds["checks"]] == ["regex", "equals"]
    assert adds["checks"][1]["value"] == "4"

    agent = api.agent(
        sleepy_spec(
            answers={
                "greets in French": "Bonjour !",
                "adds": "As an AI model: 4",
                "lists colours": 'Sure: ["red", "blue"]',
            }
        )
    )
    run = api.start(agent, "pf")
    assert api.wait(run["run_id"])["status"] == "completed"
    assert states(api, run["run_id"]) == {
        "greets in French": "passed",
        "adds": "failed",  # not-icontains "as an ai" from defaultTest, and not equal to 4
        "lists colours": "passed",
    }


INSPECT = "\n".join(
    json.dumps(sample)
    for sample in [
        {"id": "capital", "input": "Capital of France?", "target": ["Paris", "Paris, France"]},
        {
            "id": "colour",
            "input": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Pick the primary colour."},
            ],
            "choices": ["green", "red", "purple"],
            "target": "B",
            "metadata": {"tags": ["mc"]},
        },
        {"id": "sum", "input": "2+2?", "target": 4, "metadata": {"level": 1}},
    ]
)


def test_an_inspect_dataset_is_imported_with_its_targets_and_choices_graded(api):
    status, body = create(
        api,
        "insp",
        scoring={"required": ["icontains"]},
        source={"format": "inspect", "content": INSPECT},
    )
    assert status == 201, body
    assert body["version"]["scoring"]["required"] == ["icontains", "regex"]
    assert body["version"]["ungraded_cases"] == 0
    got = {
        c["case_id"]: c for c in api.ok("GET", "/api/v1/datasets/insp/versions/1/cases")["cases"]
    }
    assert got["capital"]["reference"] == "Paris"
    assert got["colour"]["history"] == [{"role": "system", "content": "Be brief."}]
    assert got["colour"]["input"].endswith("A) green\nB) red\nC) purple")
    assert (got["colour"]["reference"], got["colour"]["tags"]) == ("B", ["mc"])
    assert got["sum"]["metadata"] == {"level": 1} and got["sum"]["reference"] == "4"

    agent = api.agent(
        sleepy_spec(answers={"capital": "paris, france", "colour": "ANSWER: B", "sum": "five"})
    )
    run = api.start(agent, "insp")
    assert api.wait(run["run_id"])["status"] == "completed"
    assert states(api, run["run_id"]) == {"capital": "passed", "colour": "passed", "sum": "failed"}


def test_a_refused_file_creates_no_dataset_and_the_retry_succeeds(api):
    bad = PROMPTFOO.replace("type: equals", "type: python")
    status, body = create(api, "atomic", source={"format": "promptfoo", "content": bad})
    assert status == 400, body
    error = body["error"]
    assert (error["field"], error["line"], error["source_field"]) == (
        "source",
        22,
        "tests[1].assert[0].type",
    )
    assert "'python' is not supported" in error["message"]
    assert api.call("GET", "/api/v1/datasets/atomic")[0] == 404
    assert api.ok("GET", "/api/v1/datasets")["datasets"] == []

    status, body = create(api, "atomic", source={"format": "promptfoo", "content": PROMPTFOO})
    assert status == 201, body
    assert body["latest_version"] == 1
    # Now it exists with a version: creating it again is a conflict.
    status, body = create(api, "atomic", source={"format": "promptfoo", "content": PROMPTFOO})
    assert status == 409 and body["error"]["field"] == "dataset_id", body


def test_an_inspect_error_names_the_line_and_field(api):
    content = INSPECT + '\n{"id": "x", "input": [{"role": "robot", "content": "hi"}]}'
    status, body = create(api, "bad-insp", source={"format": "inspect", "content": content})
    assert status == 400, body
    assert (body["error"]["line"], body["error"]["source_field"]) == (4, "input[0].role")
    assert api.call("GET", "/api/v1/datasets/bad-insp")[0] == 404


def test_paging_a_run_s_cases_and_a_version_s_cases_sees_every_case_once(api):
    cases = [
        {
            "case_id": f"c{i:02d}",
            "input": f"q{i}",
            "reference": "42",
            "tags": ["odd"] if i % 2 else [],
        }
        for i in range(7)
    ]
    ds = api.dataset(cases)
    agent = api.agent(sleepy_spec(answers={"c03": "41", "c04": "41"}))
    run = api.start(agent, ds)
    api.wait(run["run_id"])

    def walk(path: str, **query: Any) -> tuple[list[str], int]:
        seen: list[str] = []
        pages = 0
        cursor = None
        while True:
            params = {**query, **({"cursor": cursor} if cursor else {})}
            body = api.ok("GET", path, params=params)
            seen += [c["case_id"] for c in body["cases"]]
            pages += 1
            cursor = body["next_cursor"]
            if cursor is None:
                return seen, pages

    path = f"/api/v1/eval-runs/{run['run_id']}/cases"
    assert walk(path, limit=3) == ([c["case_id"] for c in cases], 3)
    assert walk(path, limit=1, outcome="failed") == (["c03", "c04"], 2)
    assert walk(path, limit=2, tag="odd") == (["c01", "c03", "c05"], 2)
    whole = api.ok("GET", path)  # the default page holds a run this small whole
    assert (len(whole["cases"]), whole["next_cursor"]) == (7, None)
    assert set(whole["cases"][0]) == {
        "case_id",
        "expects",
        "outcome",
        "arms",
        "blocked_calls",
        "divergent_calls",
    }
    assert walk(f"/api/v1/datasets/{ds}/versions/1/cases", limit=4) == (
        [c["case_id"] for c in cases],
        2,
    )
    for bad in ({"cursor": "garbage"}, {"limit": 0}):
        status, body = api.call("GET", path, params=bad)
        assert status == 400 and body["error"]["field"] in ("cursor", "limit"), body


def test_the_paged_listings_are_documented(api):
    document = api.ok("GET", "/openapi.json")
    for path in (
        "/api/v1/eval-runs/{run_id}/cases",
        "/api/v1/datasets/{dataset_id}/versions/{version}/cases",
    ):
        names = {p["name"] for p in document["paths"][path]["get"]["parameters"]}
        assert {"limit", "cursor"} <= names, (path, names)
    source = document["components"]["schemas"]["Source"]["properties"]["format"]
    assert {"promptfoo", "inspect"} <= set(source["enum"])


# --- llm-rubric through a judge ---------------------------------------------------------------

RUBRIC = "The reply is polite."
RUBRIC_ID = "rubric-" + hashlib.sha256(RUBRIC.encode()).hexdigest()[:12]
RUBRIC_FILE = f"""\
- description: thanks
  vars: {{input: Say thanks.}}
  assert:
    - type: llm-rubric
      value: {RUBRIC}
- description: refuses
  vars: {{input: Refuse politely.}}
  assert:
    - type: llm-rubric
      value: {RUBRIC}
"""


def grades(score: int) -> dict[str, Any]:
    return {"grades": [{"criterion_id": RUBRIC_ID, "score": score, "reason": f"tone {score}"}]}


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAI]:
    script = {
        "rules": [{"contains": "ANSWER:\nGo away", "answer": grades(1)}],
        "default": {"answer": grades(5)},
    }
    with FakeOpenAI(script) as server:
        yield server


def test_llm_rubric_assertions_are_graded_by_a_judge_that_has_their_criteria(api, fake):
    grader_profile(api, fake.base_url)
    judge = api.ok("POST", "/api/v1/judges", json={"name": "tone"})["judge_id"]
    api.ok(
        "POST",
        f"/api/v1/judges/{judge}/versions",
        json={"model_profile_id": "grader", "criteria": [{"criterion_id": "x", "text": "Other."}]},
    )
    source = {"format": "promptfoo", "content": RUBRIC_FILE}
    scoring = {"required": [], "settings": {"judge": {"judge_id": judge}}}
    status, body = create(api, "rubrics", source=source)
    assert status == 400 and body["error"]["field"] == "scoring.settings.judge", body
    status, body = create(api, "rubrics", source=source, scoring=scoring)
    assert status == 400 and body["error"]["field"] == "scoring.settings.judge", body
    [wanted] = body["error"]["criteria"]
    assert wanted == {"criterion_id": RUBRIC_ID, "text": RUBRIC, "tags": [RUBRIC_ID]}
    assert api.call("GET", "/api/v1/datasets/rubrics")[0] == 404

    api.ok(
        "POST",
        f"/api/v1/judges/{judge}/versions",
        json={"model_profile_id": "grader", "criteria": [wanted]},
    )
    status, body = create(api, "rubrics", source=source, scoring=scoring)
    assert status == 201, body
    assert body["version"]["scoring"]["required"] == ["judge"]
    agent = api.agent(sleepy_spec(answers={"thanks": "Thank you!", "refuses": "Go away"}))
    run = api.start(agent, "rubrics")
    assert api.wait(run["run_id"])["status"] == "completed"
    assert states(api, run["run_id"]) == {"thanks": "passed", "refuses": "failed"}


# --- the command line -----------------------------------------------------------------------------


def test_assay_import_tells_the_format_and_creates_with_the_version_or_not_at_all(
    api, tmp_path: Path, capsys
):
    url = str(api.http.base_url).rstrip("/")
    token = api.http.headers["Authorization"].removeprefix("Bearer ")
    remote = ["--url", url, "--token", token]
    tests = tmp_path / "promptfooconfig.yaml"
    tests.write_text(PROMPTFOO.replace("type: equals", "type: webhook"), encoding="utf-8")
    assert (
        cli.main(["import", "cli-pf", str(tests), "--create", "From CLI", *remote]) == 3
    )  # an API refusal (`assay.gate`)
    assert "tests[1].assert[0].type" in capsys.readouterr().err
    assert api.call("GET", "/api/v1/datasets/cli-pf")[0] == 404

    tests.write_text(PROMPTFOO, encoding="utf-8")
    capsys.readouterr()
    assert (
        cli.main(["import", "cli-pf", str(tests), "--create", "From CLI", "--json", *remote]) == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert (out["dataset_id"], out["name"], out["version"]["case_count"]) == (
        "cli-pf",
        "From CLI",
        3,
    )

    samples = tmp_path / "samples.jsonl"
    samples.write_text(INSPECT, encoding="utf-8")
    assert (
        cli.main(["import", "cli-pf", str(samples), "--scorer", "icontains", "--json", *remote])
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert (out["latest_version"], out["version"]["scoring"]["required"]) == (
        2,
        ["icontains", "regex"],
    )
