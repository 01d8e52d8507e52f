"""The secrets adapter (Secrets Manager) and the recordings adapter (S3) against moto's server over
HTTP.

What they must hold (issue 9 scope 1, 2): each organization's names live under its own prefix and
nowhere else; the caches spare a request per case attempt yet a write in this process is seen at
once; recordings are immutable while they exist and gone for good once deleted.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from assay_local.motoserver import MotoHandle
from chalicelib import names
from chalicelib.adapters.recording_bucket import OrgRecordings
from chalicelib.adapters.secrets_manager import OrgSecrets
from chalicelib.domain.models import CaseRequest
from chalicelib.domain.recording_format import sha256_hex
from chalicelib.errors import ConflictError

BUCKET = "assay-results"


class Ticks:
    """A monotonic clock the test moves by hand, seconds."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _ops(moto: MotoHandle, service: str) -> dict[str, int]:
    return {k: v for k, v in moto.requests().items() if k.startswith(service + ".")}


@pytest.fixture
def ticks() -> Ticks:
    return Ticks()


@pytest.fixture
def secrets(aws_client: Callable[..., Any], ticks: Ticks) -> OrgSecrets:
    return OrgSecrets(lambda: aws_client("secretsmanager"), "assay-", monotonic=ticks)


@pytest.fixture
def recordings(aws_client: Callable[..., Any], ticks: Ticks) -> OrgRecordings:
    aws_client("s3").create_bucket(Bucket=BUCKET)
    return OrgRecordings(lambda: aws_client("s3"), BUCKET, monotonic=ticks)


def _request(case_id: str, text: str = "q") -> CaseRequest:
    return CaseRequest(run_id="r", case_id=case_id, attempt=1, input=text)


# --- secrets ---------------------------------------------------------------------------------


def test_a_secret_is_stored_under_its_organization_prefix_and_tagged_with_it(secrets, aws_client):
    updated_at = secrets.put("org_a", "openai", "sk-a-value")
    described = aws_client("secretsmanager").describe_secret(SecretId="assay/org_a/openai")
    assert (
        described["Name"] == names.secret_name("assay-", "org_a", "openai") == "assay/org_a/openai"
    )
    assert {"Key": "assay:org", "Value": "org_a"} in described["Tags"]
    assert updated_at.endswith("Z") and updated_at[:4].isdigit()
    assert (
        aws_client("secretsmanager").get_secret_value(SecretId="assay/org_a/openai")["SecretString"]
        == "sk-a-value"
    )


def test_same_name_in_two_organizations_is_two_independent_secrets(secrets):
    secrets.put("org_a", "openai", "value-of-a")
    secrets.put("org_b", "openai", "value-of-b")
    assert secrets.get("org_a", "openai") == "value-of-a"
    assert secrets.get("org_b", "openai") == "value-of-b"
    secrets.delete("org_b", "openai")
    assert secrets.get("org_b", "openai") is None
    assert secrets.get("org_a", "openai") == "value-of-a"
    assert [m.name for m in secrets.list("org_a")] == ["openai"]
    assert secrets.list("org_b") == []


def test_listing_is_exactly_one_organization_and_one_segment_deep(secrets, aws_client):
    secrets.put("org_a", "k1", "v1")
    secrets.put("org_a", "k2", "v2")
    secrets.put("org_ab", "k3", "v3")  # a longer org id sharing the prefix "org_a"
    secrets.put("ORG_A", "k4", "v4")  # another organization by case only
    # Something put there by hand, deeper than one segment: never listed as org_a's.
    aws_client("secretsmanager").create_secret(Name="assay/org_a/deep/k5", SecretString="v5")
    assert [m.name for m in secrets.list("org_a")] == ["k1", "k2"]
    assert sorted(secrets.values("org_a")) == ["v1", "v2"]
    assert [m.name for m in secrets.list("org_ab")] == ["k3"]
    assert secrets.values("ORG_A") == ("v4",)


def test_listing_pages_through_more_than_one_page(secrets):
    for i in range(23):
        secrets.put("org_many", f"s{i:02d}", f"value-{i:02d}")
    assert [m.name for m in secrets.list("org_many")] == [f"s{i:02d}" for i in range(23)]
    # BatchGetSecretValue gives at most 20 per page: 23 values take two pages.
    assert sorted(secrets.values("org_many")) == [f"value-{i:02d}" for i in range(23)]


def test_put_replaces_the_value_and_moves_updated_at(secrets):
    first = secrets.put("org_a", "openai", "old")
    second = secrets.put("org_a", "openai", "new")
    assert secrets.get("org_a", "openai") == "new"
    assert secrets.values("org_a") == ("new",)
    assert second >= first
    assert secrets.meta("org_a", "openai").updated_at == second


def test_get_is_cached_for_its_ttl_and_a_change_elsewhere_is_seen_after_it(
    secrets, aws_client, moto, ticks
):
    secrets.put("org_a", "openai", "v1")
    moto.reset_counts()
    for _ in range(50):  # fifty case attempts
        assert secrets.get("org_a", "openai") == "v1"
    assert _ops(moto, "secretsmanager") == {}
    # Another process (another Lambda) rotates the value: seen once the TTL has passed.
    aws_client("secretsmanager").put_secret_value(SecretId="assay/org_a/openai", SecretString="v2")
    assert secrets.get("org_a", "openai") == "v1"
    ticks.t += secrets.ttl_seconds + 1
    assert secrets.get("org_a", "openai") == "v2"


def test_an_absent_secret_is_remembered_briefly_and_a_put_here_is_seen_at_once(
    secrets, aws_client, moto, ticks
):
    assert secrets.get("org_a", "later") is None
    moto.reset_counts()
    assert secrets.get("org_a", "later") is None
    assert _ops(moto, "secretsmanager") == {}
    aws_client("secretsmanager").create_secret(
        Name="assay/org_a/later", SecretString="made-elsewhere"
    )
    ticks.t += secrets.missing_ttl_seconds + 0.1
    assert secrets.get("org_a", "later") == "made-elsewhere"
    secrets.put("org_a", "later", "made-here")
    assert secrets.get("org_a", "later") == "made-here"


def test_values_are_cached_and_refreshed_by_put_and_delete_in_this_process(secrets, moto):
    secrets.put("org_a", "k1", "v1")
    assert secrets.values("org_a") == ("v1",)
    moto.reset_counts()
    assert secrets.values("org_a") == ("v1",)
    assert _ops(moto, "secretsmanager") == {}
    secrets.put("org_a", "k2", "v2")
    assert sorted(secrets.values("org_a")) == ["v1", "v2"]
    secrets.delete("org_a", "k1")
    assert secrets.values("org_a") == ("v2",)


def test_a_deleted_secret_is_gone_at_once_with_no_recovery_window(secrets, aws_client):
    secrets.put("org_a", "openai", "v")
    secrets.delete("org_a", "openai")
    assert secrets.meta("org_a", "openai") is None
    assert secrets.get("org_a", "openai") is None
    listed = aws_client("secretsmanager").list_secrets(IncludePlannedDeletion=True)["SecretList"]
    assert [s["Name"] for s in listed] == []
    # The name is free again straight away.
    secrets.put("org_a", "openai", "again")
    assert secrets.get("org_a", "openai") == "again"


@pytest.mark.parametrize(
    "org_id, name",
    [
        ("org_a/../org_b", "openai"),
        ("org_a", "../openai"),
        ("org_a", "a/b"),
        ("org_a", "a#b"),
        ("", "openai"),
        ("org_a", ""),
        ("org#a", "openai"),
        ("org_a", ".."),
    ],
)
def test_names_that_could_leave_the_organization_prefix_own_nothing(
    secrets, aws_client, org_id, name
):
    aws_client("secretsmanager").create_secret(Name="assay/org_b/openai", SecretString="b-value")
    assert secrets.get(org_id, name) is None
    assert secrets.meta(org_id, name) is None
    with pytest.raises(ValueError):
        secrets.put(org_id, name, "x")
    if "/" in org_id or "#" in org_id or not org_id:
        assert secrets.list(org_id) == [] and secrets.values(org_id) == ()
    assert (
        aws_client("secretsmanager").get_secret_value(SecretId="assay/org_b/openai")["SecretString"]
        == "b-value"
    )


def test_the_name_root_follows_the_resource_prefix(aws_client):
    store = OrgSecrets(lambda: aws_client("secretsmanager"), "staging-")
    store.put("org_a", "openai", "v")
    assert (
        aws_client("secretsmanager").describe_secret(SecretId="staging/org_a/openai")["Name"]
        == "staging/org_a/openai"
    )
    assert store.get("org_a", "openai") == "v"


def test_no_client_is_built_before_first_use():
    built = []
    store = OrgSecrets(lambda: built.append(1), "assay-")
    recs = OrgRecordings(lambda: built.append(1), BUCKET)
    assert store.get("org_a", "a/b") is None and recs.load("org_a", "a/b") is None
    assert built == []


# --- recordings ------------------------------------------------------------------------------


GSM = (
    "\n".join(
        json.dumps(line)
        for line in [
            {"case_id": "c1", "input": "What is 2+2?", "answer": "4"},
            {"case_id": "c2", "input": "What is 3+3?", "answer": "6"},
        ]
    )
    + "\n"
)


def test_a_recording_is_stored_under_the_organization_prefix_with_its_metadata(
    recordings, aws_client
):
    meta, created = recordings.put("org_a", "gsm", GSM, lines=2, uploaded_by="dev@assay.local")
    assert created
    assert (meta.recording_id, meta.lines, meta.bytes, meta.sha256, meta.uploaded_by) == (
        "gsm",
        2,
        len(GSM.encode()),
        sha256_hex(GSM),
        "dev@assay.local",
    )
    assert meta.uploaded_at.endswith("Z")
    keys = [o["Key"] for o in aws_client("s3").list_objects_v2(Bucket=BUCKET)["Contents"]]
    assert keys == ["org_a/recordings/gsm.jsonl"] == [names.recording_key("org_a", "gsm")]
    assert aws_client("s3").get_object(Bucket=BUCKET, Key=keys[0])["Body"].read().decode() == GSM


def test_the_same_content_again_is_a_no_op_and_other_content_a_conflict(recordings):
    first, _ = recordings.put("org_a", "gsm", GSM, lines=2, uploaded_by="u1")
    again, created = recordings.put("org_a", "gsm", GSM, lines=2, uploaded_by="u2")
    assert not created and again == first  # still u1's upload
    other = GSM.replace('"4"', '"5"')
    with pytest.raises(ConflictError) as refused:
        recordings.put("org_a", "gsm", other, lines=2, uploaded_by="u2")
    assert refused.value.field == "recording_id"
    assert recordings.load("org_a", "gsm").find(_request("c1")).get("answer") == "4"


def test_recordings_of_the_same_id_in_two_organizations_are_independent(recordings):
    recordings.put("org_a", "gsm", GSM, lines=2, uploaded_by="a")
    other = GSM.replace('"4"', '"5"')
    _, created = recordings.put("org_b", "gsm", other, lines=2, uploaded_by="b")
    assert created
    assert recordings.load("org_a", "gsm").find(_request("c1"))["answer"] == "4"
    assert recordings.load("org_b", "gsm").find(_request("c1"))["answer"] == "5"
    recordings.delete("org_b", "gsm")
    assert recordings.load("org_b", "gsm") is None and recordings.meta("org_b", "gsm") is None
    assert recordings.load("org_a", "gsm").find(_request("c1"))["answer"] == "4"
    assert [m.recording_id for m in recordings.list("org_a")] == ["gsm"]
    assert recordings.list("org_b") == []


def test_listing_is_the_organization_prefix_only_and_pages(recordings, aws_client):
    for i in range(3):
        recordings.put("org_a", f"r{i}", GSM, lines=2, uploaded_by="a")
    recordings.put("org_ab", "r9", GSM, lines=2, uploaded_by="a")
    aws_client("s3").put_object(Bucket=BUCKET, Key="org_a/answers/x.txt", Body=b"an answer")
    aws_client("s3").put_object(Bucket=BUCKET, Key="org_a/recordings/deep/x.jsonl", Body=b"{}")
    listed = recordings.list("org_a")
    assert [m.recording_id for m in listed] == ["r0", "r1", "r2"]
    assert all(m.bytes == len(GSM.encode()) and m.uploaded_at.endswith("Z") for m in listed)


def test_load_parses_once_and_revalidates_without_a_body_after_its_age(recordings, moto, ticks):
    recordings.put("org_a", "gsm", GSM, lines=2, uploaded_by="a")
    moto.reset_counts()
    first = recordings.load("org_a", "gsm")
    for _ in range(50):
        assert recordings.load("org_a", "gsm") is first
    assert _ops(moto, "s3") == {"s3.GET": 1}
    ticks.t += recordings.revalidate_seconds + 1
    assert recordings.load("org_a", "gsm") is first  # a 304: unchanged, not parsed again
    assert _ops(moto, "s3") == {"s3.GET": 2}


def test_a_recording_deleted_elsewhere_is_gone_after_the_revalidation_age(
    recordings, aws_client, ticks
):
    recordings.put("org_a", "gsm", GSM, lines=2, uploaded_by="a")
    assert recordings.load("org_a", "gsm") is not None
    aws_client("s3").delete_object(Bucket=BUCKET, Key="org_a/recordings/gsm.jsonl")
    ticks.t += recordings.revalidate_seconds + 1
    assert recordings.load("org_a", "gsm") is None


def test_a_recording_deleted_here_is_gone_at_once_and_its_id_free_again(recordings, aws_client):
    recordings.put("org_a", "gsm", GSM, lines=2, uploaded_by="a")
    assert recordings.load("org_a", "gsm") is not None
    recordings.delete("org_a", "gsm")
    assert recordings.load("org_a", "gsm") is None
    assert recordings.meta("org_a", "gsm") is None
    assert aws_client("s3").list_objects_v2(Bucket=BUCKET).get("Contents", []) == []
    other = GSM.replace('"4"', '"5"')
    _, created = recordings.put("org_a", "gsm", other, lines=2, uploaded_by="a")
    assert created and recordings.load("org_a", "gsm").find(_request("c1"))["answer"] == "5"


def test_the_cache_is_bounded_by_bytes_least_recently_used_first(aws_client, moto):
    aws_client("s3").create_bucket(Bucket=BUCKET)
    store = OrgRecordings(lambda: aws_client("s3"), BUCKET, max_cached_bytes=len(GSM.encode()) * 2)
    for rid in ("r1", "r2", "r3"):
        store.put("org_a", rid, GSM, lines=2, uploaded_by="a")
    store.load("org_a", "r1")
    store.load("org_a", "r2")
    store.load("org_a", "r1")  # r2 is now the least recently used
    store.load("org_a", "r3")  # evicts r2
    moto.reset_counts()
    store.load("org_a", "r1")
    store.load("org_a", "r3")
    assert _ops(moto, "s3") == {}
    store.load("org_a", "r2")
    assert _ops(moto, "s3") == {"s3.GET": 1}


def test_uploaded_by_keeps_any_user_id_through_s3_metadata(recordings):
    meta, _ = recordings.put("org_a", "gsm", GSM, lines=2, uploaded_by="zoë müller / ops")
    assert meta.uploaded_by == "zoë müller / ops"


@pytest.mark.parametrize(
    "org_id, rid",
    [
        ("org_a", "../org_b/gsm"),
        ("org_a/..", "gsm"),
        ("org_a", "a/b"),
        ("", "gsm"),
        ("org_a", ".."),
    ],
)
def test_recording_ids_that_could_leave_the_prefix_own_nothing(recordings, aws_client, org_id, rid):
    recordings.put("org_b", "gsm", GSM, lines=2, uploaded_by="b")
    assert recordings.load(org_id, rid) is None and recordings.meta(org_id, rid) is None
    with pytest.raises(ValueError):
        recordings.put(org_id, rid, GSM, lines=2, uploaded_by="x")
    recordings.delete(org_id, rid)
    assert recordings.meta("org_b", "gsm") is not None
