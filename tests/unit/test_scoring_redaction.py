"""A dataset's scoring settings are redacted by the rule a case's checks are, and graded in the
redacted space as a case's checks are (docs/reference/data-protection.md,
docs/reference/scorers.md); a secret recognized only after its name (an AWS secret access key) is
found in a JSON Schema's `const`, `enum` or `pattern` under a property of that name.

Every secret here is hand-written: it has the shape of a real one and belongs to nobody. Every
expected value is written out by hand.
"""

from __future__ import annotations

import json
import re
from typing import Any

from chalicelib.domain.models import AgentAnswer, Case, ScoringConfig
from chalicelib.domain.redaction import redact_value
from chalicelib.domain.redaction_patterns import (
    redact_case_patterns,
    redact_check_patterns,
    redact_pattern,
    redact_schema,
    redact_scoring_patterns,
)
from chalicelib.domain.scorers import grade

KEY = "AKIAIOSFODNN7EXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
"""An AWS secret access key: 40 letters, digits, `/` and `+`, recognized only after its name."""
OTHER_SECRET_KEY = "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY"
TOKEN = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
PLACED_KEY = "[REDACTED:aws_access_key]"
PLACED_SECRET = "[REDACTED:aws_secret_key]"


def test_the_hand_written_secrets_are_what_the_rules_need() -> None:
    assert len(SECRET_KEY) == len(OTHER_SECRET_KEY) == 40
    assert "\\+" in re.escape(SECRET_KEY)
    # On its own, after no name, a secret access key is not recognized: its name is what tells.
    assert redact_value({"const": SECRET_KEY}) == {"const": SECRET_KEY}
    assert redact_value({"aws_secret_access_key": SECRET_KEY}) == {
        "aws_secret_access_key": PLACED_SECRET
    }


# ---------------------------------------------------------------------------------------
# A schema's values under a property named after a secret
# ---------------------------------------------------------------------------------------


def test_a_const_under_a_secret_keys_name_is_read_after_that_name() -> None:
    schema = {
        "type": "object",
        "properties": {
            "aws_secret_access_key": {"const": SECRET_KEY},
            "region": {"const": "eu-west-1"},
        },
        "required": ["aws_secret_access_key"],
    }
    assert redact_schema(schema) == {
        "type": "object",
        "properties": {
            "aws_secret_access_key": {"const": PLACED_SECRET},
            "region": {"const": "eu-west-1"},
        },
        "required": ["aws_secret_access_key"],
    }
    assert schema["properties"]["aws_secret_access_key"] == {"const": SECRET_KEY}  # not in place


def test_the_name_is_read_as_the_redaction_rules_read_it() -> None:
    # Upper case, dashes, or `secret_key` alone: the names the rules recognize before a key.
    for name in ("AWS_SECRET_ACCESS_KEY", "aws-secret-access-key", "secret_key"):
        assert redact_schema({"properties": {name: {"const": SECRET_KEY}}}) == {
            "properties": {name: {"const": PLACED_SECRET}}
        }, name
    # A name that labels no secret leaves the value to the shape rules: this one is kept.
    assert redact_schema({"properties": {"checksum": {"const": SECRET_KEY}}}) == {
        "properties": {"checksum": {"const": SECRET_KEY}}
    }


def test_enum_default_examples_and_nested_subschemas_are_read_after_the_name() -> None:
    schema = {
        "properties": {
            "creds": {
                "type": "object",
                "properties": {
                    "aws_secret_access_key": {
                        "anyOf": [{"const": SECRET_KEY}, {"enum": [OTHER_SECRET_KEY, "none"]}],
                        "default": SECRET_KEY,
                        "examples": [OTHER_SECRET_KEY],
                    }
                },
            }
        },
        "$defs": {"secret_access_key": {"enum": [SECRET_KEY]}},
    }
    assert redact_schema(schema) == {
        "properties": {
            "creds": {
                "type": "object",
                "properties": {
                    "aws_secret_access_key": {
                        "anyOf": [{"const": PLACED_SECRET}, {"enum": [PLACED_SECRET, "none"]}],
                        "default": PLACED_SECRET,
                        "examples": [PLACED_SECRET],
                    }
                },
            }
        },
        "$defs": {"secret_access_key": {"enum": [PLACED_SECRET]}},
    }


def test_a_pattern_under_the_name_is_read_after_it_anchored_and_escaped() -> None:
    escaped = re.escape(SECRET_KEY)
    schema = {
        "properties": {
            "aws_secret_access_key": {"pattern": f"^{escaped}$"},
            "other": {"pattern": rf"\A{SECRET_KEY}\Z"},
            "AWS_SECRET_ACCESS_KEY": {"pattern": rf"\A{SECRET_KEY}\Z"},
        }
    }
    assert redact_schema(schema) == {
        "properties": {
            "aws_secret_access_key": {"pattern": f"^{PLACED_SECRET}$"},
            "other": {"pattern": rf"\A{SECRET_KEY}\Z"},
            "AWS_SECRET_ACCESS_KEY": {"pattern": rf"\A{PLACED_SECRET}\Z"},
        }
    }


def test_a_pattern_read_after_a_context_keeps_the_context_out() -> None:
    assert redact_pattern(re.escape(SECRET_KEY), context="aws_secret_access_key=") == PLACED_SECRET
    assert redact_pattern(re.escape(SECRET_KEY)) == re.escape(SECRET_KEY)
    # The secret a pattern names itself is found with or without a context.
    assert redact_pattern(f"id {KEY}", context="note=") == f"id {PLACED_KEY}"
    # The context is never returned, and the rest of the pattern stays as written.
    assert redact_pattern(r"^\d{4}$", context="aws_secret_access_key=") == r"^\d{4}$"


# ---------------------------------------------------------------------------------------
# The one rule for a check's parameters and a scorer's settings
# ---------------------------------------------------------------------------------------


def test_a_checks_parameters_and_a_scorers_settings_go_through_one_rule() -> None:
    regex = {"pattern": f"key={re.escape(KEY)}", "flags": "i"}
    assert redact_check_patterns("regex", regex) == {"pattern": f"key={PLACED_KEY}", "flags": "i"}
    schema = {"schema": {"properties": {"aws_secret_access_key": {"const": SECRET_KEY}}}}
    assert redact_check_patterns("json_schema", schema) == {
        "schema": {"properties": {"aws_secret_access_key": {"const": PLACED_SECRET}}}
    }
    # Other scorers' parameters are left to the text rules (`redact_value`).
    assert redact_check_patterns("contains", {"value": KEY}) == {"value": KEY}


def test_the_scoring_settings_regex_and_schema_are_redacted_the_rest_kept() -> None:
    escaped = re.escape(SECRET_KEY)
    scoring = {
        "required": ["regex", "json_schema", "judge"],
        "settings": {
            "regex": {"pattern": f"aws_secret_access_key={escaped}", "flags": "i"},
            "json_schema": {
                "schema": {
                    "properties": {
                        "aws_secret_access_key": {"const": SECRET_KEY},
                        "token": {"pattern": re.escape(TOKEN)},
                    }
                }
            },
            "judge": {"judge_id": "jd_1", "version": 2},
            "numeric_answer": {"tolerance": 0.5},
        },
    }
    assert redact_scoring_patterns(scoring) == {
        "required": ["regex", "json_schema", "judge"],
        "settings": {
            "regex": {"pattern": f"aws_secret_access_key={PLACED_SECRET}", "flags": "i"},
            "json_schema": {
                "schema": {
                    "properties": {
                        "aws_secret_access_key": {"const": PLACED_SECRET},
                        "token": {"pattern": "[REDACTED:github_token]"},
                    }
                }
            },
            "judge": {"judge_id": "jd_1", "version": 2},
            "numeric_answer": {"tolerance": 0.5},
        },
    }
    assert scoring["settings"]["regex"]["pattern"] == f"aws_secret_access_key={escaped}"
    assert redact_scoring_patterns({"required": ["equals"]}) == {"required": ["equals"]}


# ---------------------------------------------------------------------------------------
# Grading with scoring settings kept redacted
# ---------------------------------------------------------------------------------------


def _kept_scoring(scorer: str, settings: dict[str, Any]) -> ScoringConfig:
    """A scoring config with one scorer's settings, as a dataset version keeps it."""
    raw = redact_scoring_patterns({"required": [scorer], "settings": {scorer: settings}})
    return ScoringConfig.model_validate({**raw, "settings": redact_value(raw["settings"])})


CASE = Case(case_id="c1", input="q")


def test_a_settings_regex_kept_redacted_passes_any_key_of_its_kind() -> None:
    scoring = _kept_scoring("regex", {"pattern": f"^key={re.escape(KEY)}$"})
    assert scoring.settings["regex"]["pattern"] == f"^key={PLACED_KEY}$"

    other_key = "AKIAI44QH8DHBEXAMPLE"
    for answer in (f"key={KEY}", f"key={other_key}"):
        result = grade(CASE, AgentAnswer(answer=answer), scoring)
        assert result.state == "passed", result
        assert result.scores[0].reason == (f"/^key={PLACED_KEY}$/ matched 'key={PLACED_KEY}'")

    failed = grade(CASE, AgentAnswer(answer=f"key={TOKEN}"), scoring)
    assert failed.state == "failed"
    assert failed.scores[0].reason == (
        f"no match for /^key={PLACED_KEY}$/ (the answer is not quoted: the pattern holds a "
        "secret, compared by its kind with the answer's secrets redacted)"
    )


def test_a_settings_schema_const_kept_redacted_passes_the_answer_holding_a_secret_key() -> None:
    scoring = _kept_scoring(
        "json_schema",
        {
            "schema": {
                "type": "object",
                "properties": {"aws_secret_access_key": {"const": SECRET_KEY}},
                "required": ["aws_secret_access_key"],
            }
        },
    )
    assert scoring.settings["json_schema"]["schema"]["properties"] == {
        "aws_secret_access_key": {"const": PLACED_SECRET}
    }

    for secret in (SECRET_KEY, OTHER_SECRET_KEY):
        answer = AgentAnswer(answer=json.dumps({"aws_secret_access_key": secret}))
        result = grade(CASE, answer, scoring)
        assert result.state == "passed", result
        assert result.scores[0].reason == (
            "answer matches the schema (secrets compared by their kind, with the answer's "
            "secrets redacted)"
        )

    wrong = AgentAnswer(answer=json.dumps({"aws_secret_access_key": "not-a-key"}))
    failed = grade(CASE, wrong, scoring)
    assert failed.state == "failed"
    assert failed.scores[0].reason == (
        f"answer does not match the schema at $.aws_secret_access_key: '{PLACED_SECRET}' was "
        "expected (secrets compared by their kind, with the answer's secrets redacted)"
    )


def test_a_cases_schema_check_reads_a_const_after_its_propertys_name_too() -> None:
    case = {
        "case_id": "c1",
        "input": "q",
        "checks": [
            {
                "scorer": "json_schema",
                "schema": {"properties": {"aws_secret_access_key": {"const": SECRET_KEY}}},
            }
        ],
    }
    assert redact_case_patterns(case)["checks"] == [
        {
            "scorer": "json_schema",
            "schema": {"properties": {"aws_secret_access_key": {"const": PLACED_SECRET}}},
        }
    ]
