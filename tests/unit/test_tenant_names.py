"""Names of the organization's secrets and recordings (issue 9): one path segment under the
organization's prefix, and the ARN pattern the IAM policy grants."""

from __future__ import annotations

import fnmatch

import pytest

from chalicelib import names
from chalicelib.domain.identity import is_org_id
from chalicelib.domain.ids import is_valid_name, name_problem
from infra.resources import (
    secret_arn_pattern,
    secret_name_prefix,
    secret_policy_statements,
)


@pytest.mark.parametrize(
    "name", ["openai", "OPENAI_KEY", "gw.prod-1", "a", "x" * 64, "v1.2", ".env"]
)
def test_plain_names_are_taken(name):
    assert name_problem(name) is None and is_valid_name(name)


@pytest.mark.parametrize(
    "name",
    ["", "a/b", "../x", "..", ".", "...", "a..b", "a#b", "a b", "café", "x" * 65, "a\nb", None, 7],
)
def test_names_that_are_not_one_plain_segment_are_refused(name):
    assert name_problem(name) is not None and not is_valid_name(name)


@pytest.mark.parametrize(
    "org_id, safe",
    [
        ("org_a", True),
        ("dev@assay.local", True),
        ("", False),
        ("a/b", False),
        ("a#b", False),
        ("a..b", False),
        (" a", False),
        ("a\n", False),
        ("x" * 101, False),
    ],
)
def test_only_org_ids_that_keep_to_one_segment_prefix_a_name(org_id, safe):
    assert is_org_id(org_id) is safe


def test_secret_names_follow_the_resource_prefix():
    assert secret_name_prefix("assay-") == "assay"
    assert secret_name_prefix("staging-assay-") == "staging-assay"
    assert secret_name_prefix("") == "assay"
    assert names.secret_name("assay-", "org_a", "openai") == "assay/org_a/openai"
    assert names.org_secret_prefix("assay-", "org_a") == "assay/org_a/"


def test_recording_keys_are_under_the_organization_prefix():
    assert names.recording_key("org_a", "gsm8k-6b") == "org_a/recordings/gsm8k-6b.jsonl"
    assert names.recording_key("org_a", "x").startswith(names.org_recordings_prefix("org_a"))


def test_the_policy_pattern_covers_every_secret_of_the_stack_and_no_other():
    pattern = secret_arn_pattern("assay-")
    assert pattern == "arn:*:secretsmanager:*:*:secret:assay/*"
    # Secrets Manager appends "-" and six random characters to a secret's ARN.
    own = (
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:"
        f"{names.secret_name('assay-', 'org_a', 'openai')}-AbC123"
    )
    assert fnmatch.fnmatchcase(own, pattern)
    for other in (
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-AbC123",
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:assay-other/x-AbC123",
    ):
        assert not fnmatch.fnmatchcase(other, pattern)
    statements = secret_policy_statements("assay-")
    assert statements[0]["Resource"] == [pattern]
    assert "secretsmanager:GetSecretValue" in statements[0]["Action"]
    assert set(statements[1]["Action"]) == {
        "secretsmanager:ListSecrets",
        "secretsmanager:BatchGetSecretValue",
    }
