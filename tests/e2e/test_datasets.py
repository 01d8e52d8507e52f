"""Datasets: immutable numbered versions of cases, given inline or imported (JSONL, CSV, GSM8K),
with case ids that stay the same across versions and cases nothing can grade counted up front."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.conftest import cases, sleepy_spec

GSM8K = Path(__file__).resolve().parents[2] / "examples" / "gsm8k"


def new_dataset(api, name: str = "d") -> str:
    status, body = api.call("POST", "/api/v1/datasets", json={"name": name})
    assert status == 201, body
    assert body["latest_version"] is None
    return body["dataset_id"]


def add_version(api, ds: str, **body) -> dict:
    status, resp = api.call("POST", f"/api/v1/datasets/{ds}/versions", json=body)
    assert status == 201, resp
    return resp


def listed_cases(api, ds: str, version: int | str) -> list[dict]:
    body = api.ok("GET", f"/api/v1/datasets/{ds}/versions/{version}/cases")
    return sorted(body["cases"], key=lambda c: c["case_id"])


def test_inline_cases_make_version_1_with_their_scoring(api):
    ds = new_dataset(api, "arithmetic")
    given = [
        {"case_id": "add", "input": "2+2?", "reference": "4", "tags": ["math", "easy"]},
        {
            "case_id": "mul",
            "input": "6*7?",
            "reference": "42",
            "split": "holdout",
            "note": "classic",
        },
        {
            "case_id": "json",
            "input": "a JSON object please",
            "checks": [{"scorer": "equals", "value": "{}"}],
        },
    ]
    body = add_version(api, ds, scoring={"required": ["equals"]}, cases=given)
    assert body["dataset_id"] == ds and body["name"] == "arithmetic" and body["latest_version"] == 1
    version = body["version"]
    assert (version["version"], version["case_count"], version["ungraded_cases"]) == (1, 3, 0)
    assert version["scoring"] == {"required": ["equals"], "settings": {}}
    assert version["created_by"] == api.user_id

    got = listed_cases(api, ds, 1)
    assert [c["case_id"] for c in got] == ["add", "json", "mul"]
    add, js, mul = got
    assert (add["input"], add["reference"], add["tags"], add["split"]) == (
        "2+2?",
        "4",
        ["math", "easy"],
        "train",
    )
    assert (mul["split"], mul["note"]) == ("holdout", "classic")
    assert js["checks"] == [{"scorer": "equals", "value": "{}"}] and js["reference"] is None
    assert api.ok("GET", f"/api/v1/datasets/{ds}")["version"]["version"] == 1
    assert [d["dataset_id"] for d in api.ok("GET", "/api/v1/datasets")["datasets"]] == [ds]


def test_versions_are_numbered_1_2_and_an_earlier_version_never_changes(api):
    ds = new_dataset(api)
    add_version(api, ds, scoring={"required": ["equals"]}, cases=cases(2))
    v2 = add_version(
        api,
        ds,
        scoring={"required": ["contains"]},
        cases=[
            {"case_id": "c000", "input": "question 0, reworded", "reference": "4"},
            {"case_id": "c009", "input": "new", "reference": "9"},
        ],
    )
    assert (v2["latest_version"], v2["version"]["version"]) == (2, 2)
    assert v2["version"]["scoring"]["required"] == ["contains"]

    v1_cases = listed_cases(api, ds, 1)
    assert [(c["case_id"], c["input"], c["reference"]) for c in v1_cases] == [
        ("c000", "question 0", "42"),
        ("c001", "question 1", "42"),
    ]
    assert [(c["case_id"], c["input"]) for c in listed_cases(api, ds, 2)] == [
        ("c000", "question 0, reworded"),
        ("c009", "new"),
    ]
    assert [c["case_id"] for c in listed_cases(api, ds, "latest")] == ["c000", "c009"]
    header = api.ok("GET", f"/api/v1/datasets/{ds}")
    assert header["latest_version"] == 2 and header["version"]["scoring"]["required"] == [
        "contains"
    ]

    # A run pinned to version 1 runs version 1's cases.
    agent = api.agent(sleepy_spec())
    run = api.start(agent, ds, dataset_version=1)
    assert run["dataset_version"] == 1
    api.wait(run["run_id"])
    results = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["results"]
    assert sorted(r["case_id"] for r in results) == ["c000", "c001"]


def test_jsonl_import_derives_stable_ids_and_keeps_extra_keys_as_metadata(api):
    ds = new_dataset(api)
    v1_source = (
        "\n".join(
            json.dumps(line)
            for line in [
                {
                    "question": "What is 2+2?",
                    "reference": 4,
                    "tags": "math;easy",
                    "difficulty": "low",
                },
                {"input": "What is the capital of France?", "reference": "Paris", "tags": ["geo"]},
                {
                    "case_id": "prime",
                    "input": "Name a prime above 10.",
                    "checks": [{"scorer": "regex", "pattern": "1[1379]"}],
                },
            ]
        )
        + "\n\n"
    )
    body = add_version(
        api, ds, scoring={"required": ["equals"]}, source={"format": "jsonl", "content": v1_source}
    )
    # `equals` has nothing to compare "prime" with: it has a regex check, but regex is not required.
    assert (body["version"]["case_count"], body["version"]["ungraded_cases"]) == (3, 1)

    # Ids derived as "case-" + the first 12 hex digits of sha256(input).
    v1 = {c["case_id"]: c for c in listed_cases(api, ds, 1)}
    assert set(v1) == {"case-52cb6b5e4a03", "case-115049a29853", "prime"}
    two = v1["case-52cb6b5e4a03"]
    assert (two["input"], two["reference"], two["tags"], two["metadata"]) == (
        "What is 2+2?",
        "4",
        ["math", "easy"],
        {"difficulty": "low"},
    )

    # Version 2: same questions in another order, new tags, one more case; the ids do not move.
    v2_source = "\n".join(
        json.dumps(line)
        for line in [
            {"input": "How many legs has a spider?", "reference": "8"},
            {
                "input": "What is the capital of France?",
                "reference": "Paris",
                "tags": ["geo", "europe"],
            },
            {"question": "What is 2+2?", "reference": "4"},
        ]
    )
    body = add_version(
        api, ds, scoring={"required": ["equals"]}, source={"format": "jsonl", "content": v2_source}
    )
    assert (
        body["version"]["version"],
        body["version"]["case_count"],
        body["version"]["ungraded_cases"],
    ) == (2, 3, 0)
    v2 = {c["case_id"]: c for c in listed_cases(api, ds, 2)}
    assert set(v2) == {"case-ed5d7c5128d7", "case-115049a29853", "case-52cb6b5e4a03"}
    assert v2["case-115049a29853"]["tags"] == ["geo", "europe"]
    assert v1["case-115049a29853"]["tags"] == ["geo"] == listed_cases(api, ds, 1)[0]["tags"]


def test_csv_import_reads_columns_and_leaves_empty_cells_absent(api):
    ds = new_dataset(api)
    content = (
        "case_id,input,reference,tags,difficulty\n"
        "add,What is 2+2?,4,math;easy,low\n"
        ',"What is the capital of France?",Paris,geo,\n'
        "nothing,Say anything,,,\n"
    )
    body = add_version(
        api, ds, scoring={"required": ["icontains"]}, source={"format": "csv", "content": content}
    )
    assert (body["version"]["case_count"], body["version"]["ungraded_cases"]) == (3, 1)
    got = {c["case_id"]: c for c in listed_cases(api, ds, 1)}
    assert set(got) == {"add", "case-115049a29853", "nothing"}
    assert (got["add"]["reference"], got["add"]["tags"], got["add"]["metadata"]) == (
        "4",
        ["math", "easy"],
        {"difficulty": "low"},
    )
    assert (got["case-115049a29853"]["reference"], got["case-115049a29853"]["metadata"]) == (
        "Paris",
        {},
    )
    assert got["nothing"]["reference"] is None


def test_gsm8k_import_of_the_first_five_problems(api):
    content = "".join(
        (GSM8K / "test.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[:5]
    )
    ds = new_dataset(api, "gsm8k")
    body = add_version(
        api,
        ds,
        scoring={"required": ["numeric_answer"]},
        source={"format": "gsm8k", "content": content},
    )
    assert (body["version"]["case_count"], body["version"]["ungraded_cases"]) == (5, 0)
    got = {c["case_id"]: c for c in listed_cases(api, ds, 1)}
    # "gsm8k-" + sha256(question)[:12]; reference = the number after "####".
    assert {k: v["reference"] for k, v in got.items()} == {
        "gsm8k-2b2e3f9639f6": "18",
        "gsm8k-de563650cee0": "3",
        "gsm8k-d3c6224db7dd": "70000",
        "gsm8k-94ff3611e184": "540",
        "gsm8k-d28df8f7b843": "20",
    }
    janet = got["gsm8k-2b2e3f9639f6"]
    assert janet["input"].startswith("Janet\u2019s ducks lay 16 eggs per day.")
    assert janet["metadata"]["solution"].endswith("#### 18")

    # The same problems again (3 of them, via `limit`) keep their ids in version 2.
    body = add_version(
        api,
        ds,
        scoring={"required": ["numeric_answer"]},
        source={"format": "gsm8k", "content": content, "limit": 3},
    )
    assert (body["version"]["version"], body["version"]["case_count"]) == (2, 3)
    assert sorted(c["case_id"] for c in listed_cases(api, ds, 2)) == [
        "gsm8k-2b2e3f9639f6",
        "gsm8k-d3c6224db7dd",
        "gsm8k-de563650cee0",
    ]


def test_a_bad_source_is_400_naming_the_line(api):
    ds = new_dataset(api)
    status, body = api.call(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={
            "scoring": {"required": ["equals"]},
            "source": {
                "format": "jsonl",
                "content": '{"input": "ok", "reference": "1"}\n{"input": \n',
            },
        },
    )
    assert status == 400, body
    assert body["error"]["field"] == "source" and body["error"]["line"] == 2
    status, body = api.call(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={"scoring": {"required": ["equals"]}, "source": {"format": "xml", "content": "<a/>"}},
    )
    assert status == 400 and body["error"]["field"] == "source.format", body
    status, body = api.call(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={
            "scoring": {"required": ["equals"]},
            "cases": cases(1),
            "source": {"format": "jsonl", "content": "{}"},
        },
    )
    assert status == 400 and body["error"]["field"] == "cases", body
    status, body = api.call(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={"scoring": {"required": ["equals"]}, "cases": [*cases(1), *cases(1)]},
    )
    assert status == 400 and body["error"]["field"] == "cases[1].case_id", body
    status, body = api.call(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={"scoring": {"required": ["equals"]}, "cases": [{"case_id": "x", "input": "   "}]},
    )
    assert status == 400 and body["error"]["field"] == "cases[0].input", body
    assert api.ok("GET", f"/api/v1/datasets/{ds}")["latest_version"] is None


def test_a_run_with_some_ungraded_cases_warns_and_records_them_ungraded(api):
    ds = new_dataset(api)
    body = add_version(
        api,
        ds,
        scoring={"required": ["equals"]},
        cases=[
            *cases(3),
            {"case_id": "open-1", "input": "tell me a story"},
            {"case_id": "open-2", "input": "and another"},
        ],
    )
    assert body["version"]["ungraded_cases"] == 2
    agent = api.agent(sleepy_spec(answers={"c002": "41"}))
    status, run = api.call(
        "POST", f"/api/v1/agents/{agent}/eval-runs", json={"dataset_id": ds, "candidate": "draft"}
    )
    assert status == 201, run
    assert run["warnings"] == [
        "2 cases have nothing to grade them. The result will be inconclusive."
    ]

    progress = api.wait(run["run_id"])
    assert progress["status"] == "completed"
    assert (progress["recorded"], progress["passed"], progress["failed"], progress["ungraded"]) == (
        5,
        2,
        1,
        2,
    )
    full = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    states = {r["case_id"]: r["state"] for r in full["results"]}
    assert states == {
        "c000": "passed",
        "c001": "passed",
        "c002": "failed",
        "open-1": "ungraded",
        "open-2": "ungraded",
    }
    for case_id in ("open-1", "open-2"):
        result = next(r for r in full["results"] if r["case_id"] == case_id)
        assert result["passed"] is False and result["scores"] == [] and result["answer"] == "42"
    outcome = full["outcome"]
    assert (
        outcome["total"],
        outcome["passed"],
        outcome["failed"],
        outcome["ungraded"],
        outcome["undecided"],
    ) == (5, 2, 1, 2, 2)


def test_a_run_with_every_case_graded_has_no_warning(api):
    ds = api.dataset(cases(1))
    agent = api.agent(sleepy_spec())
    run = api.start(agent, ds)
    assert run["warnings"] == []
    api.wait(run["run_id"])


def test_concurrent_imports_never_mix_their_cases_into_one_version(api):
    import threading

    ds = api.ok("POST", "/api/v1/datasets", json={"name": "race"})["dataset_id"]
    bodies = {
        side: [
            {"case_id": f"{side}{i:02d}", "input": f"{side} {i}", "reference": "1"}
            for i in range(20)
        ]
        for side in ("a", "b")
    }
    statuses: dict[str, int] = {}

    def post(side: str) -> None:
        statuses[side] = api.call(
            "POST",
            f"/api/v1/datasets/{ds}/versions",
            json={"scoring": {"required": ["equals"]}, "cases": bodies[side]},
        )[0]

    threads = [threading.Thread(target=post, args=(side,)) for side in bodies]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(statuses.values()) in ([201, 201], [201, 409])
    latest = api.ok("GET", f"/api/v1/datasets/{ds}")["latest_version"]
    for version in range(1, latest + 1):
        ids = sorted(
            c["case_id"]
            for c in api.ok("GET", f"/api/v1/datasets/{ds}/versions/{version}/cases")["cases"]
        )
        assert ids in (
            sorted(c["case_id"] for c in bodies["a"]),
            sorted(c["case_id"] for c in bodies["b"]),
        )


def test_the_list_gives_each_dataset_its_latest_version_s_cases_and_scoring(api, new_api):
    empty = new_dataset(api, "empty")
    grown = new_dataset(api, "grown")
    add_version(api, grown, scoring={"required": ["equals"]}, cases=cases(2))
    add_version(api, grown, scoring={"required": ["contains"]}, cases=cases(3))
    listed = {d["dataset_id"]: d for d in api.ok("GET", "/api/v1/datasets")["datasets"]}
    assert [d["name"] for d in api.ok("GET", "/api/v1/datasets")["datasets"]] == [
        "grown",
        "empty",
    ]  # newest first
    assert listed[empty]["latest_version"] is None and "version" not in listed[empty]
    latest = listed[grown]["version"]
    assert (listed[grown]["latest_version"], latest["version"], latest["case_count"]) == (2, 2, 3)
    assert latest["scoring"] == api.ok("GET", f"/api/v1/datasets/{grown}")["version"]["scoring"]
    assert latest["scoring"]["required"] == ["contains"]
    # a reader sees only the datasets they may open, each as the list gives it
    guest = new_api(org_id=api.org_id, user_id="guest@example.com", role="guest")
    api.ok(
        "PUT",
        f"/api/v1/members/{guest.user_id}/grants/dataset/{grown}",
        json={"permissions": ["datasets:view"]},
    )
    assert guest.ok("GET", "/api/v1/datasets")["datasets"] == [listed[grown]]


def test_a_version_whose_case_ids_do_not_fit_one_item_is_a_413_naming_cases(api):
    # 1,100 ids of 250 characters take 1,100 x 251 = 276,100 bytes: past the 262,144 a version
    # (and every run over it) keeps in one item. Before, DynamoDB's refusal surfaced as a 500.
    ds = api.ok("POST", "/api/v1/datasets", json={"name": "long ids"})["dataset_id"]
    cases = [
        {"case_id": f"{i:05d}" + "x" * 245, "input": "q", "reference": "a"} for i in range(1100)
    ]
    status, body = api.call(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={"scoring": {"required": ["equals"]}, "cases": cases},
    )
    assert status == 413 and body["error"]["field"] == "cases", body
    assert "276100 bytes" in body["error"]["message"]
    fits = api.ok(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={"scoring": {"required": ["equals"]}, "cases": cases[:1000]},  # 251,000 bytes
    )
    assert fits["version"]["case_count"] == 1000


def test_a_run_whose_case_ids_and_specs_do_not_fit_its_item_is_a_413_naming_the_dataset(api):
    # 1,000 ids of 250 characters (251,000 bytes) and three sides each keeping a copy of a
    # ~45,000-byte spec: past the 358,400 bytes a run's item is planned at (one side fits).
    ds = api.ok("POST", "/api/v1/datasets", json={"name": "long ids"})["dataset_id"]
    api.ok(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={
            "scoring": {"required": ["equals"]},
            "cases": [
                {"case_id": f"{i:05d}" + "x" * 245, "input": "q", "reference": "a"}
                for i in range(1000)
            ],
        },
    )
    for pid in ("small", "medium", "large"):
        api.ok("POST", "/api/v1/model-profiles", json={"model_profile_id": pid, "model": pid})
    big = {**sleepy_spec(), "notes": "n" * 45_000}
    agent = api.agent(big, publish=1)
    status, body = api.call(
        "POST",
        f"/api/v1/agents/{agent}/eval-runs",
        json={
            "dataset_id": ds,
            "candidate": "version",
            "version": 1,
            "model_profile_ids": ["small", "medium", "large"],
        },
    )
    assert status == 413 and body["error"]["field"] == "dataset_id", body
    # one side fits, and its item keeps everything to the end
    one = api.start(agent, ds, candidate="version", version=1)
    assert api.wait(one["run_id"])["status"] == "completed"
