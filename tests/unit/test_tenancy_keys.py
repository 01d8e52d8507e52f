"""Tenancy in every key (issue 9 scope 6, docs/architecture/tables.md): every table of tenant data,
and every index a tenant's listing reads, is keyed by the organization.

Two halves. The declarations: each model of `tables.ALL_MODELS` hashes on `org_id` or names its
org-composite hash key in `ORG_KEY`; each index does the same, or says in `SERVICE_WIDE` why it
lists every organization (the sweep, the ticks). The writes: rows of two organizations with the
very same ids go through the stores into moto's DynamoDB, and the raw items show `<org>#...` in
every declared key, two items where one id names two things, and reads that never cross over.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from pynamodb.attributes import UnicodeAttribute
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.models import Model

from assay_local.motoserver import MotoHandle, start_moto_server
from chalicelib.adapters import stores, tables
from chalicelib.domain.history import LatestRow
from chalicelib.domain.ids import check_tenant_id
from chalicelib.errors import InvalidInputError
from tests.fakes.ledger import an_arm, an_arm_result, an_outcome
from tests.support.models import models_kept

REGION = "us-east-1"
PREFIX = "tenancy-"
ORGS = ("org-a", "org-b")
MONTH = "2026-05"


# --- the declarations ------------------------------------------------------------------------


def _hash_key(attributes: dict[str, Any]) -> str:
    return next(name for name, attr in attributes.items() if attr.is_hash_key)


def key_problems(model: type[Model]) -> list[str]:
    """Why `model`'s keys do not carry the organization (empty: they do)."""
    problems = []
    table_hash = _hash_key(model.get_attributes())
    declared = getattr(model, "ORG_KEY", None)
    if table_hash != "org_id" and table_hash != declared:
        problems.append(
            f"{model.__name__}: hash key {table_hash!r} is neither org_id nor a declared ORG_KEY "
            f"(ORG_KEY = {declared!r})"
        )
    if declared is not None and declared not in model.get_attributes():
        problems.append(f"{model.__name__}: ORG_KEY {declared!r} is not an attribute")
    for name, index in model._indexes.items():  # noqa: SLF001 - PynamoDB keeps them there
        index_hash = _hash_key(index.Meta.attributes)
        if index_hash == "org_id" or index_hash == getattr(index, "ORG_KEY", None):
            continue
        if isinstance(getattr(index, "SERVICE_WIDE", None), str) and index.SERVICE_WIDE:
            continue
        problems.append(
            f"{model.__name__}.{name}: index hash key {index_hash!r} is neither org_id, a declared "
            "ORG_KEY, nor a SERVICE_WIDE index saying why it lists every organization"
        )
    return problems


def org_key_attributes(model: type[Model]) -> list[str]:
    """The attributes of `model`'s items that must start with `<org_id>#` (table and index keys)."""
    names = [model.ORG_KEY] if getattr(model, "ORG_KEY", None) else []
    names += [
        index.ORG_KEY
        for index in model._indexes.values()  # noqa: SLF001
        if getattr(index, "ORG_KEY", None) and index.ORG_KEY not in names
    ]
    return names


@pytest.mark.parametrize("model", tables.ALL_MODELS, ids=lambda m: m.__name__)
def test_every_table_and_index_is_keyed_by_the_organization(model):
    assert key_problems(model) == []


def test_a_table_keyed_by_a_tenant_chosen_id_alone_is_caught():
    class LeakyIndex(GlobalSecondaryIndex):
        class Meta:
            index_name = "by_agent"
            projection = AllProjection()

        agent_id = UnicodeAttribute(hash_key=True)

    class LeakyRow(Model):
        class Meta:
            table_name = "leaky"

        run_id = UnicodeAttribute(hash_key=True)
        agent_id = UnicodeAttribute()
        by_agent = LeakyIndex()

    problems = key_problems(LeakyRow)
    assert len(problems) == 2
    assert "hash key 'run_id'" in problems[0] and "LeakyRow.by_agent" in problems[1]


def test_a_declared_org_key_must_be_the_hash_key():
    class Mislabelled(Model):
        ORG_KEY = "run_key"

        class Meta:
            table_name = "mislabelled"

        run_id = UnicodeAttribute(hash_key=True)
        run_key = UnicodeAttribute()

    assert key_problems(Mislabelled) and "'run_id'" in key_problems(Mislabelled)[0]


def test_org_key_puts_the_organization_first_and_refuses_what_could_run_into_it():
    assert tables.org_key("acme", "agt_1", "nightly") == "acme#agt_1#nightly"
    assert tables.org_key("acme", "ds", 3) == "acme#ds#3"
    for bad in ("", "a#b"):
        with pytest.raises(ValueError):
            tables.org_key(bad, "x")


@pytest.mark.parametrize("value", ["a#b", "a/b", "#", "/x", "x/"])
def test_a_tenant_id_with_a_separator_is_a_400_naming_the_field(value):
    with pytest.raises(InvalidInputError) as err:
        check_tenant_id(value, "suite_id")
    assert err.value.field == "suite_id"


def test_ids_without_separators_are_kept_as_given():
    assert check_tenant_id("gsm8k-solver.v2_1", "agent_id") == "gsm8k-solver.v2_1"


# --- the writes ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def moto_tables() -> Iterator[tuple[MotoHandle, Any]]:
    """moto's server with every table of assay; the models are pointed back where they were
    after."""
    mp = pytest.MonkeyPatch()
    for name, value in (
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_DEFAULT_REGION", REGION),
    ):
        mp.setenv(name, value)
    with models_kept():
        handle = start_moto_server()
        try:
            from infra.resources import ensure_tables

            ensure_tables(handle.url, REGION, PREFIX)
            stores.reset_connections()
            ddb = boto3.session.Session().client(
                "dynamodb",
                endpoint_url=handle.url,
                region_name=REGION,
                aws_access_key_id="testing",
                aws_secret_access_key="testing",
            )
            yield handle, ddb
        finally:
            handle.stop()
            mp.undo()


def _judge_spec(org: str) -> dict[str, Any]:
    """A stored judge version whose one criterion names `org`."""
    return {
        "model_profile_id": "profile-1",
        "criteria": [{"criterion_id": "c", "text": f"graded for {org}"}],
        "runtime": {"runtime": "openai", "model": f"model-of-{org}"},
    }


def _write_everything(org: str) -> None:
    """One row of every table for `org`, through the stores, with ids both organizations share."""
    from chalicelib.domain import records

    now = "2026-05-01T00:00:00Z"
    stores.OrganizationStore().ensure(org, concurrency_limit=3, now_iso=now)
    from chalicelib.adapters.stores.access import ApiKeyStore, MemberStore
    from chalicelib.domain.access import ApiKey, Member

    MemberStore().add_first(Member(org, "user-1", "admin", added_at=now, updated_at=now))
    ApiKeyStore().create(
        ApiKey(org, "key-1", "ci", frozenset({"runs:view"}), "user-1", now, "0" * 64)
    )
    agents = stores.AgentStore()
    agents.create(
        records.Agent(
            org_id=org,
            agent_id="agent-1",
            name=f"{org}'s",
            draft_spec={"runtime": "recorded"},
            draft_spec_hash="h",
            draft_updated_at=now,
            created_at=now,
        )
    )
    assert agents.publish(
        records.AgentVersion(
            org_id=org,
            agent_id="agent-1",
            version=1,
            spec={"owner": org},
            spec_hash=f"h-{org}",
            published_at=now,
        )
    )
    stores.ModelProfileStore().create(
        records.ModelProfile(org_id=org, model_profile_id="profile-1", model="m", created_at=now)
    )
    stores.SpendStore().charge(org, "agent-1", MONTH, 7 if org == ORGS[0] else 11, judge=False)
    from chalicelib.adapters.stores.usage import UsageStore
    from chalicelib.domain.agent_runs import AgentRun

    UsageStore().report(
        org,
        MONTH,
        [
            AgentRun(
                agent_run_id="ar_" + "0" * 24,
                org_id=org,
                agent_id="agent-1",
                surface="production",
                started_at=now,
                started_ms=1,
                cost_micros=5,
                key="k-1",
            )
        ],
    )
    judges = stores.JudgeStore()
    header = records.Judge(judge_id="judge-1", version=0, org_id=org, name=org, created_at=now)
    judges.create(header)
    assert judges.publish(
        header,
        records.Judge(
            judge_id="judge-1",
            version=1,
            org_id=org,
            created_at=now,
            spec=_judge_spec(org),
            rubric_hash="r",
        ),
    )
    stores.EnvironmentStore().create(
        records.Environment(org_id=org, environment_id="prod", created_at=now)
    )
    from chalicelib.adapters.stores.connections import ConnectionStore

    ConnectionStore().create(
        records.Connection(
            org_id=org, connection_id="shop", kind="http", url="https://a.test", created_at=now
        )
    )
    datasets = stores.DatasetStore()
    ds_header = records.Dataset(dataset_id="ds-1", version=0, org_id=org, name=org, created_at=now)
    datasets.create(ds_header)
    datasets.add_version(
        records.Dataset(dataset_id="ds-1", version=1, org_id=org, created_at=now, case_count=1),
        [
            records.DatasetCase(
                case_id="case-1", case={"case_id": "case-1", "input": f"question of {org}"}
            )
        ],
    )
    suites = stores.SuiteStore()
    suites.create(
        records.Suite(
            agent_id="agent-1",
            suite_id="suite-1",
            org_id=org,
            dataset_id="ds-1",
            owner=f"owner@{org}",
            created_at=now,
            updated_at=now,
        )
    )
    assert suites.add_result(
        records.SuiteResultEntry(
            suite_id="suite-1",
            started_key=f"{now}#run-1",
            result_id="run-1",
            org_id=org,
            agent_id="agent-1",
            trigger={},
            run_id="run-1",
            result="passed",
            started_at=now,
        )
    )
    assert stores.PromotionStore().create_waiting(
        records.Promotion(
            agent_id="agent-1",
            promotion_id="p0001",
            org_id=org,
            environment_id="prod",
            version=1,
            status="waiting",
            created_at=now,
        )
    )
    stores.NotificationStore().add(
        "u",
        records.Notification(
            notification_id="n0001", org_id=org, kind="k", title=org, created_at=now
        ),
    )
    stores.EvaluationStore().create(
        records.Evaluation(
            org_id=org,
            evaluation_id="evaluation-1",
            agent_id="agent-1",
            dataset_id="ds-1",
            created_at=now,
        )
    )
    runs = stores.RunStore()
    run = records.Run(
        run_id="run-1",
        org_id=org,
        agent_id="agent-1",
        dataset_id="ds-1",
        dataset_version=1,
        created_at=now,
        status="running",
        phase="finalizing",
        candidate="version",
        resolved_version=1,
        spec_hash="h",
        arms=(an_arm(version=1, spec={"model": "m"}),),
        case_ids_text="case-1",
        scoring={},
        tasks_total=1,
        expected=1,
        heartbeat_at_ms=0,
        evaluation_id="evaluation-1",
    )
    runs.create(run)
    outcome = runs.record_attempt(
        runs.get(org, "run-1"),
        records.Attempt(
            run_id="run-1",
            attempt_key="candidate#case-1#001",
            recorded_key="0000000000001#candidate#case-1#001",
            arm_id="candidate",
            case_id="case-1",
            attempt=1,
            state="passed",
            answer=f"answer of {org}",
            recorded_at=now,
        ),
        counters={"recorded": 1},
        lane=0,
        claim=None,
        release_slot=False,
        now_ms=1,
    )
    assert outcome.written
    from chalicelib.adapters.stores.tool_sessions import ToolSessionStore

    sessions = ToolSessionStore()
    session = records.ToolSession(
        org_id=org,
        run_id="run-1",
        session_id="session-1",
        attempt_key="candidate#case-1#001",
        token_sha256="0" * 64,
        until_ms=1_800_000_000_000,
        box={"tools": []},
    )
    sessions.create(session)
    assert sessions.append(session, '{"name": "lookup"}', frozenset())
    # Completing it writes the evaluation index's key and the agent's history rows.
    assert runs.complete(
        runs.get(org, "run-1"),
        an_outcome(total=1, passed=1, arms={"candidate": an_arm_result(cases=1)}),
        now,
    )
    from chalicelib.adapters.stores.review import ReviewStore
    from chalicelib.domain.review_items import ReviewAudit, ReviewItem
    from chalicelib.services.ports.review import Decision, Mark, Sent, StaleRun

    review = ReviewStore()
    item = ReviewItem(
        item_id="ri00000000000010000000000000000",
        org_id=org,
        dataset_id="ds-1",
        dataset_version=1,
        case_id="case-1",
        agent_id="agent-1",
        run_id="run-1",
        arm_id="candidate",
        attempt_key="candidate#case-1#001",
        answered_at_ms=1,
        reason="judge_failed",
        sent_at=now,
        answer=f"answer of {org}",
    )
    assert review.send(item, None, 10) is Sent.SENT
    decided = replace(item, state="decided", verdict="pass", decided_by="u", version=1)
    audit = ReviewAudit(
        audit_id="a1",
        org_id=org,
        dataset_id="ds-1",
        item_id=item.item_id,
        action="decide",
        by="u",
        at=now,
        state_before="waiting",
        state_after="decided",
    )
    assert review.decide(
        Decision(
            item,
            decided,
            audit,
            "run-1",
            item.attempt_key,
            {"verdict": "pass"},
            [StaleRun("run-1", None)],
            [],
            Mark.RELEASE,
        )
    )


@pytest.fixture(scope="module")
def written(moto_tables) -> dict[type[Model], list[dict[str, Any]]]:
    """Every raw item of every table after both organizations wrote the same ids."""
    _, ddb = moto_tables
    for org in ORGS:
        _write_everything(org)
    out = {}
    for model in tables.ALL_MODELS:
        items: list[dict[str, Any]] = []
        for page in ddb.get_paginator("scan").paginate(
            TableName=tables.table_name(model)
        ):  # tests only
            items += page["Items"]
        out[model] = items
    return out


@pytest.mark.parametrize("model", tables.ALL_MODELS, ids=lambda m: m.__name__)
def test_the_stores_write_the_organization_first_in_every_declared_key(model, written):
    items = written[model]
    assert items, f"the test wrote no {model.__name__}: add it to _write_everything"
    for item in items:
        org = item["org_id"]["S"] if "org_id" in item else item[model.ORG_KEY]["S"].split("#", 1)[0]
        assert org in ORGS
        for name in org_key_attributes(model):
            if name in item or name == getattr(model, "ORG_KEY", None):  # sparse index keys
                assert item[name]["S"].startswith(f"{org}#"), (model.__name__, name, item[name])


@pytest.mark.parametrize("model", tables.ALL_MODELS, ids=lambda m: m.__name__)
def test_the_same_ids_in_two_organizations_are_two_items(model, written):
    per_org = {org: 0 for org in ORGS}
    for item in written[model]:
        org = item["org_id"]["S"] if "org_id" in item else item[model.ORG_KEY]["S"].split("#", 1)[0]
        per_org[org] += 1
    assert per_org[ORGS[0]] == per_org[ORGS[1]] >= 1, per_org


def test_spend_keys_name_the_organization_and_its_agent(written):
    keys = sorted(item["key"]["S"] for item in written[tables.SpendRow])
    assert keys == sorted(
        f"{org}#{kind}#{MONTH}" for org in ORGS for kind in ("org", "agent#agent-1")
    )
    a, b = (stores.SpendStore().read(org, "agent-1", MONTH) for org in ORGS)
    # 7 (or 11) charged by an eval, and a production run of 5 reported
    assert (a.agent_spent_micros, a.org_spent_micros, b.agent_spent_micros, b.org_spent_micros) == (
        12,
        12,
        16,
        16,
    )


def test_reads_by_the_same_ids_never_cross_organizations(written):
    agents, runs, suites, datasets = (
        stores.AgentStore(),
        stores.RunStore(),
        stores.SuiteStore(),
        stores.DatasetStore(),
    )
    for org in ORGS:
        assert agents.get_version(org, "agent-1", 1).spec == {"owner": org}
        assert [v.spec_hash for v in agents.list_versions(org, "agent-1")] == [f"h-{org}"]
        assert runs.get_for_org(org, "run-1").org_id == org
        assert [r.org_id for r in runs.list_by_agent(org, "agent-1")] == [org]
        assert [r.org_id for r in runs.list_by_dataset(org, "ds-1")] == [org]
        assert [r.org_id for r in runs.list_by_org(org)] == [org]
        assert [a.answer for a in runs.attempts(org, "run-1")] == [f"answer of {org}"]
        assert [a.answer for a in runs.attempts_after(org, "run-1", "", 10)] == [f"answer of {org}"]
        [latest] = runs.history(org, [("agent-1", "latest#v1")]).values()
        assert isinstance(latest, LatestRow)
        assert [r.run_id for r in latest.results.values()] == ["run-1"]
        assert runs.active(org) == []
        assert suites.get(org, "agent-1", "suite-1").owner == f"owner@{org}"
        assert [r.org_id for r in suites.results(org, "agent-1", "suite-1")] == [org]
        assert stores.JudgeStore().get(org, "judge-1", 1).spec == _judge_spec(org)
        assert stores.PromotionStore().get(org, "agent-1", "p0001").org_id == org
        assert datasets.get_case(org, "ds-1", 1, "case-1")["input"] == f"question of {org}"


def test_deleting_one_organization_s_suite_results_leaves_the_other_s(written):
    suites = stores.SuiteStore()
    suites.delete_results(ORGS[1], "agent-1", "suite-1")
    assert suites.results(ORGS[1], "agent-1", "suite-1") == []
    assert [r.run_id for r in suites.results(ORGS[0], "agent-1", "suite-1")] == ["run-1"]


def test_a_listing_cursor_of_another_organization_is_not_a_page_start(written):
    a = ORGS[0]
    start = {
        "run_key": {"S": f"{a}#run-1"},
        "agent_key": {"S": f"{a}#agent-1"},
        "created_at": {"S": "2026-05-01T00:00:00Z"},
    }  # the shape of the agent listing's last key
    assert stores.RunStore.is_page_start(start, a, agent_id="agent-1")
    assert (
        list(stores.RunStore().list_by_agent(a, "agent-1", start=start)) == []
    )  # nothing after its only run
    assert not stores.RunStore.is_page_start(start, ORGS[1], agent_id="agent-1")
    assert not stores.RunStore.is_page_start(start, a, dataset_id="agent-1")
    assert not stores.RunStore.is_page_start(
        {**start, "run_key": {"S": f"{ORGS[1]}#run-1"}}, a, agent_id="agent-1"
    )


def test_process_caches_are_keyed_by_organization(written):
    from chalicelib.services import judges

    datasets = stores.DatasetStore()
    c = SimpleNamespace(judges=stores.JudgeStore())
    for _ in range(2):  # the second round reads the caches warm
        for org in ORGS:
            assert datasets.get_case(org, "ds-1", 1, "case-1")["input"] == f"question of {org}"
            assert datasets.cases(org, "ds-1", 1)[0]["input"] == f"question of {org}"
            resolved = judges.resolve(c, org, {"judge_id": "judge-1", "version": 1})
            assert resolved.model == f"model-of-{org}"
            assert resolved.spec.criteria[0].text == f"graded for {org}"
    assert {key for key in judges._versions if key[1:] == ("judge-1", 1)} == {  # noqa: SLF001
        (org, "judge-1", 1) for org in ORGS
    }


def test_an_agent_listing_before_a_time_holds_only_the_runs_created_before_it(written):
    runs = stores.RunStore()
    for org in ORGS:
        later = runs.list_by_agent(org, "agent-1", before="2026-05-01T00:00:01Z")
        assert [(r.org_id, r.run_id) for r in later] == [(org, "run-1")]
        assert list(runs.list_by_agent(org, "agent-1", before="2026-05-01T00:00:00Z")) == []
