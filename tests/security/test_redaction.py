"""Every recognized secret is redacted from everything kept or shown (issue 9 scope 7,
docs/reference/data-protection.md), through the HTTP API on the embedded stack.

Each secret pattern - and the organization's own stored secret value - is planted in every field
a run, a dataset, a judge, a suite and a notice keep: the answer, call arguments and results, a
crash's error, a provider's error, a scorer's reason (`contains` quoting the reference and the
answer), a judge's reason, `model`, `guardrail`, notices and their email, suite result reasons, and
dataset cases (input, reference, history, checks, expected calls, counter-example, note, metadata)
as saved and as read back. None of them appears in any response, in any DynamoDB item of those
tables, in the results bucket or in a sent email; the placeholders do. The agent is
`tests.support.leaky_agent`, whose spec carries its answer base64-encoded (so the spec itself holds
nothing recognizable).
"""

from __future__ import annotations

import json
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from chalicelib import names
from chalicelib.adapters import tables
from chalicelib.services import notifications, suites
from tests.support import leaky_agent
from tests.support.e2e import Api, wait_for
from tests.support.fake_openai import FakeOpenAI
from tests.support.judges import grader_profile

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
BEARER = "abc123def456ghi789jklmno"
BASIC_PASSWORD = "hunter2-Pa55word"
PEM_BODY = "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)

TOKENS = {
    "aws_access_key": "AKIAIOSFODNN7EXAMPLE",
    "aws_access_key (session)": "ASIAY34FZKBOKMUTVV7A",
    "openai_key": "sk-proj-Abc123Def456Ghi789Jkl012Mno345Pqr678",
    "anthropic_key": "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa-_AbCdEf",
    "github_token": "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "github_token (fine-grained)": (
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG"
    ),
    "google_api_key": "AIzaSyA1234567890abcdefghijklmnopqrstuv",
    "slack_token": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "slack_webhook": "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    "jwt": JWT,
}
CONTEXTS = {
    # kind -> (the secret, the text it is planted in)
    "aws_secret_key": (AWS_SECRET, f"aws_secret_access_key={AWS_SECRET}"),
    "bearer_token": (BEARER, f"Authorization: Bearer {BEARER}"),
    "basic_auth": (BASIC_PASSWORD, f"postgres://admin:{BASIC_PASSWORD}@db.internal:5432/app"),
    "private_key": (
        PEM_BODY,
        f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----",
    ),
}


@pytest.fixture
def api(new_api) -> Api:
    """A fresh organization whose user is nobody else's: its owner mail is told apart from other
    tests'."""
    return new_api(user_id=f"owner-{uuid.uuid4().hex[:10]}@example.com")


@pytest.fixture
def org_secret(api: Api) -> str:
    """The value of a secret the organization stored (`PUT /api/v1/secrets/deploy-key`)."""
    value = f"own-value-{uuid.uuid4().hex}"
    api.ok("PUT", "/api/v1/secrets/deploy-key", json={"value": value})
    return value


def planted(org_secret: str, *, short: bool = False) -> str:
    """One text holding every kind of secret (`short`: fewer, for fields that are cut at 500
    chars)."""
    parts = [f"{kind} {value}" for kind, value in TOKENS.items()]
    parts += [text for _, text in CONTEXTS.values()] + [f"own {org_secret}"]
    if short:
        parts = [parts[0], parts[2], parts[7], CONTEXTS["aws_secret_key"][1], f"own {org_secret}"]
    return " | ".join(parts)


def needles(org_secret: str) -> list[str]:
    """What must never be seen: each raw secret (without its context)."""
    return [*TOKENS.values(), *(secret for secret, _ in CONTEXTS.values()), org_secret]


def leaks(text: str, org_secret: str) -> list[str]:
    return [n for n in needles(org_secret) if n in text]


def as_text(value: Any) -> str:
    """JSON text of a response, plus its strings unescaped (a secret may hold `/` or `\\n`)."""
    out: list[str] = [json.dumps(value)]

    def walk(v: Any) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            for k, x in v.items():
                out.append(str(k))
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(value)
    return "\n".join(out)


@pytest.fixture
def aws(stack) -> Any:
    return lambda service: boto3.client(
        service, endpoint_url=stack.endpoint_url, region_name=stack.settings.aws_default_region
    )


KEPT_TABLES = (
    tables.AttemptRow,
    tables.RunRow,
    tables.DatasetCaseRow,
    tables.NotificationRow,
    tables.SuiteResultRow,
    tables.PromotionRow,
)
"""The tables holding what scope 7 lists (answers, calls, errors, reasons, cases, notices,
results)."""


def stored(aws: Any, org_id: str) -> str:
    """Every item of `KEPT_TABLES` that names the organization, every results-bucket object under
    it or under `answers/`, and every sent email, as one text."""
    dynamodb, s3 = aws("dynamodb"), aws("s3")
    texts: list[str] = []
    for model in KEPT_TABLES:
        # Filtered by the server on the organization's key (every key of tenant data starts with
        # it): the other tests' items stay in moto, not in this test's memory.
        key = getattr(model, "ORG_KEY", None)
        where = (
            {
                "FilterExpression": "begins_with(#k, :org)",
                "ExpressionAttributeNames": {"#k": key},
                "ExpressionAttributeValues": {":org": {"S": f"{org_id}#"}},
            }
            if key
            else {
                "FilterExpression": "org_id = :org",
                "ExpressionAttributeValues": {":org": {"S": org_id}},
            }
        )
        for page in dynamodb.get_paginator("scan").paginate(
            TableName=tables.table_name(model), **where
        ):
            texts += [json.dumps(item) for item in page["Items"]]
    for prefix in (f"{org_id}/", "answers/"):
        for page in s3.get_paginator("list_objects_v2").paginate(
            Bucket=names.RESULTS_BUCKET, Prefix=prefix
        ):
            for obj in page.get("Contents", []):
                if "/recordings/" not in obj["Key"]:
                    texts.append(
                        s3.get_object(Bucket=names.RESULTS_BUCKET, Key=obj["Key"])["Body"]
                        .read()
                        .decode()
                    )
    return "\n".join(texts)


def sent_mail(stack) -> list[dict[str, Any]]:
    with urllib.request.urlopen(stack.endpoint_url + "/_assay/ses/sent", timeout=10) as reply:  # noqa: S310
        return json.loads(reply.read())


def assert_clean(text: str, org_secret: str, *kinds: str) -> None:
    assert not leaks(text, org_secret), leaks(text, org_secret)
    for kind in kinds:
        assert f"[REDACTED:{kind}]" in text, (kind, text[:2000])


ALL_KINDS = (
    "aws_access_key",
    "openai_key",
    "anthropic_key",
    "github_token",
    "google_api_key",
    "slack_token",
    "slack_webhook",
    "jwt",
    "aws_secret_key",
    "bearer_token",
    "basic_auth",
    "private_key",
    "secret",
)


def leaky_case(text: str, case_id: str = "c1", **extra: Any) -> dict[str, Any]:
    return {
        "case_id": case_id,
        "input": text,
        "reference": text,
        "history": [{"role": "user", "content": text}],
        "counter_example": text,
        "note": text,
        "metadata": {"source": text, "nested": {"token": text}},
        "expected_calls": [{"name": "deploy", "arguments": {"token": text}}],
        **extra,
    }


def run_of(api: Api, spec: dict[str, Any], ds: str) -> tuple[dict[str, Any], list[Any]]:
    """Run the draft of a new agent on `ds`; the run view and every other read of its results."""
    agent = api.agent(spec)
    run = api.start(agent, ds)
    api.wait(run["run_id"])
    rid = run["run_id"]
    view = api.ok("GET", f"/api/v1/eval-runs/{rid}")
    reads = [
        view,
        api.ok("GET", f"/api/v1/eval-runs/{rid}/cases"),
        api.ok("GET", f"/api/v1/eval-runs/{rid}/events?wait=0"),
        api.ok("GET", f"/api/v1/eval-runs/{rid}/progress"),
        api.ok("GET", "/api/v1/eval-runs"),
    ]
    return view, reads


def test_dataset_cases_are_kept_redacted_in_every_field_and_read_back_so(api, org_secret, aws):
    text = planted(org_secret)
    ds = api.ok("POST", "/api/v1/datasets", json={"name": "leaky"})["dataset_id"]
    created = api.ok(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={
            "scoring": {"required": ["contains"]},
            "cases": [
                leaky_case(text),
                leaky_case(text, "c2", checks=[{"scorer": "contains", "value": text}]),
            ],
        },
    )
    cases = api.ok("GET", f"/api/v1/datasets/{ds}/versions/1/cases")
    assert_clean(as_text([created, cases]), org_secret, *ALL_KINDS)
    got = {c["case_id"]: c for c in cases["cases"]}
    for field in ("input", "reference", "counter_example", "note"):
        assert (
            "[REDACTED:aws_access_key]" in got["c1"][field]
            and "[REDACTED:secret]" in got["c1"][field]
        ), field
    assert "[REDACTED:jwt]" in got["c1"]["history"][0]["content"]
    assert "[REDACTED:github_token]" in got["c1"]["metadata"]["nested"]["token"]
    assert "[REDACTED:private_key]" in got["c1"]["expected_calls"][0]["arguments"]["token"]
    assert "[REDACTED:openai_key]" in got["c2"]["checks"][0]["value"]
    assert got["c1"]["case_id"] == "c1"
    assert_clean(stored(aws, api.org_id), org_secret)


def test_an_answer_its_calls_model_guardrail_and_scorer_reasons_are_kept_redacted(
    api, org_secret, aws
):
    text, short = planted(org_secret), planted(org_secret, short=True)
    ds = api.dataset(
        [
            {"case_id": "c1", "input": "deploy it", "reference": f"expected {text}"},
            {"case_id": "c2", "input": "deploy it", "reference": "done"},
        ],
        required=["contains"],
    )
    payload = {
        "answer": f"Here you go: {text}",
        "calls": [
            {
                "name": "deploy",
                "arguments": {"token": text, "env": {"AWS_SECRET_ACCESS_KEY": AWS_SECRET}},
                "result": {"output": text},
            },
            {"name": "fetch", "arguments": {"url": CONTEXTS["basic_auth"][1]}, "result": text},
        ],
        "model": f"gpt-x {short}",
        "guardrail": f"blocked: {short}",
    }
    view, reads = run_of(api, leaky_agent.spec(payload), ds)
    attempts = {r["case_id"]: r for r in view["results"]}
    first = attempts["c1"]
    assert first["state"] == "failed", first
    assert "[REDACTED:aws_access_key]" in first["answer"] and "[REDACTED:secret]" in first["answer"]
    assert (
        first["calls"][0]["arguments"]["env"]["AWS_SECRET_ACCESS_KEY"]
        == "[REDACTED:aws_secret_key]"
    )
    assert "[REDACTED:basic_auth]" in first["calls"][1]["arguments"]["url"]
    assert "[REDACTED:jwt]" in first["calls"][0]["result"]["output"]
    assert (
        "[REDACTED:aws_access_key]" in first["model"] and "[REDACTED:secret]" in first["guardrail"]
    )
    contains = next(s for s in first["scores"] if s["scorer"] == "contains")
    assert (
        "[REDACTED:" in contains["reason"] and "[REDACTED:" in first["reason"]
    )  # quotes reference and answer
    assert_clean(as_text(reads), org_secret, *ALL_KINDS)
    assert_clean(stored(aws, api.org_id), org_secret)


def test_a_crash_s_error_and_a_provider_s_error_are_kept_redacted(api, org_secret, aws):
    short = planted(org_secret, short=True)
    ds = api.dataset([{"case_id": "c1", "input": "q", "reference": "42"}], required=["equals"])
    crashed, crash_reads = run_of(
        api, leaky_agent.spec({"error": f"tool failed: {short}", "crash": True}), ds
    )
    down, down_reads = run_of(
        api, leaky_agent.spec({"provider_error": f"upstream said {short}"}), ds
    )
    [crash] = crashed["results"]
    assert crash["crash"] is True and "[REDACTED:aws_access_key]" in crash["error"], crash
    assert "[REDACTED:secret]" in crash["reason"]
    [provider] = down["results"]
    assert provider["state"] == "incomplete" and "[REDACTED:aws_secret_key]" in provider["error"], (
        provider
    )
    assert "[REDACTED:secret]" in provider["reason"]
    assert_clean(
        as_text(crash_reads + down_reads), org_secret, "aws_access_key", "aws_secret_key", "secret"
    )
    assert_clean(stored(aws, api.org_id), org_secret)


@pytest.fixture
def judge_server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI({"rules": [], "default": {"status": 503, "error": "overloaded"}}) as server:
        yield server


def test_a_judge_s_reason_is_kept_redacted_and_grading_again_reads_the_redacted_answer(
    api, org_secret, aws, judge_server
):
    short = planted(org_secret, short=True)
    grader_profile(api, judge_server.base_url)
    judge = api.ok("POST", "/api/v1/judges", json={"name": "quality"})["judge_id"]
    api.ok(
        "POST",
        f"/api/v1/judges/{judge}/versions",
        json={
            "model_profile_id": "grader",
            "threshold": 4,
            "prompt_version": "1",
            "criteria": [
                {"criterion_id": "correct", "text": "The answer says what the reference says."}
            ],
        },
    )
    ds = api.ok("POST", "/api/v1/datasets", json={"name": "judged"})["dataset_id"]
    api.ok(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={
            "scoring": {"required": ["judge"], "settings": {"judge": {"judge_id": judge}}},
            "cases": [{"case_id": "c1", "input": "deploy it", "reference": "done"}],
        },
    )
    # First the judge is down: the answer is incomplete (its error kept redacted too)...
    judge_server.set_script(
        {"rules": [], "default": {"status": 503, "error": f"overloaded {short}"}}
    )
    view, reads = run_of(api, leaky_agent.spec({"answer": f"done, with {short}"}), ds)
    [attempt] = view["results"]
    assert attempt["state"] == "incomplete", attempt
    # ...and the judge read the original answer in memory (its prompt held the secrets).
    asked = json.dumps([r["body"] for r in judge_server.requests()])
    assert TOKENS["aws_access_key"] in asked and org_secret in asked
    # Up again, with a reason quoting every secret: grading again reads the kept, redacted answer.
    judge_server.reset()
    judge_server.set_script(
        {
            "rules": [],
            "default": {
                "answer": {
                    "grades": [
                        {
                            "criterion_id": "correct",
                            "score": 5,
                            "reason": f"it says done; it also leaked {short}",
                        }
                    ]
                }
            },
        }
    )
    again = api.ok("POST", f"/api/v1/eval-runs/{view['run_id']}/grade-again", json={})
    asked = json.dumps([r["body"] for r in judge_server.requests()])
    assert asked and not leaks(asked, org_secret) and "[REDACTED:aws_access_key]" in asked
    graded = api.ok("GET", f"/api/v1/eval-runs/{view['run_id']}")
    [attempt] = graded["results"]
    score = next(s for s in attempt["scores"] if s["scorer"] == "judge")
    assert score["passed"] is True and "[REDACTED:aws_access_key]" in score["reason"], score
    assert_clean(as_text([*reads, again, graded]), org_secret, "aws_access_key", "secret")
    assert_clean(stored(aws, api.org_id), org_secret)


def test_notices_their_email_and_suite_result_reasons_are_kept_redacted(
    api, org_secret, aws, stack, container
):
    short = planted(org_secret, short=True)
    # A crashing version guarded by a suite whose name holds secrets: its failed result tells the
    # owner.
    agent = api.agent(
        leaky_agent.spec({"error": f"tool failed: {short}", "crash": True}), publish=1
    )
    ds = api.dataset([{"case_id": "c1", "input": "q", "reference": "42"}], required=["equals"])
    api.ok("POST", "/api/v1/environments", json={"environment_id": "production"})
    sid = api.ok(
        "POST",
        f"/api/v1/agents/{agent}/suites",
        json={"dataset_id": ds, "name": f"deploy {TOKENS['aws_access_key']} {org_secret}"},
    )["suite_id"]
    try:
        api.ok("POST", f"/api/v1/agents/{agent}/suites/{sid}/run")
        [notice] = wait_for(
            lambda: [
                n for n in api.ok("GET", "/api/v1/notifications")["notifications"] if n["emailed"]
            ]
        )
        assert (
            "[REDACTED:aws_access_key]" in notice["title"] and "[REDACTED:secret]" in notice["body"]
        ), notice
        mail = [m for m in sent_mail(stack) if m["destinations"]["ToAddresses"] == [api.user_id]]
        assert mail and all("[REDACTED:" in m["subject"] for m in mail)
        # A result whose reasons hold secrets (e.g. a failed run's reason) is kept without them.
        row = next(r for r in container.suites.of_org(api.org_id) if r.suite_id == sid)
        suites.record(  # keeping a result by hand, as the end of a run does
            container,
            row,
            {"kind": "manual", "version": 1},
            None,
            suites.SuiteDecision(
                suites.SuiteResult.ERROR, [f"the eval run failed: {short}"], [], [], None
            ),
            started="2026-01-01T00:00:00.000Z",
        )
        results = api.ok("GET", f"/api/v1/agents/{agent}/suites/{sid}/results")
        assert any(
            "[REDACTED:aws_secret_key]" in " ".join(r["reasons"]) for r in results["results"]
        ), results
        notices = api.ok("GET", "/api/v1/notifications")
        mails = [m for m in sent_mail(stack) if m["destinations"]["ToAddresses"] == [api.user_id]]
        assert_clean(
            as_text([notice, results, notices, mails]), org_secret, "aws_access_key", "secret"
        )
        assert_clean(stored(aws, api.org_id), org_secret)
        # The notice center redacts whatever it is given, whoever sends it.
        direct = notifications.notify(
            container,
            api.org_id,
            api.user_id,
            kind="suite_result",
            title=f"t {short}",
            body=f"b {planted(org_secret)}",
            links={"x": short},
        )
        assert_clean(
            as_text([direct.title, direct.body, direct.links]),
            org_secret,
            "aws_access_key",
            "secret",
        )
    finally:
        for row in container.suites.of_org(api.org_id):
            suites.pause(container, row, "test over")
