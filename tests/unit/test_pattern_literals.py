"""The literal texts a regex pattern spells however it writes them (`pattern_literals`), and a
reference pattern spelling a secret so kept as its placeholders (`redaction_patterns`), with
hand-made values.
"""

from __future__ import annotations

import re

import pytest

from chalicelib.domain.pattern_literals import MAX_VARIANTS, literal_texts
from chalicelib.domain.redaction_patterns import (
    hidden_secrets,
    redact_check_patterns,
    redact_pattern,
    redact_scoring_patterns,
)

KEY = "AKIAZ3Q7M2P9X4K8LW5R"
TAIL = "Z3Q7M2P9X4K8LW5R"
ORG = "orgvalue-Qx7Lm2Pz9Wk3Hh"
PLACED_KEY = "[REDACTED:aws_access_key]"


def texts(pattern: str, flags: int = 0) -> set[str]:
    read = literal_texts(pattern, flags)
    assert read is not None
    return set(read.texts)


@pytest.mark.parametrize(
    "pattern",
    [
        r"\U00000041KIA",
        r"\N{LATIN CAPITAL LETTER A}KIA",
        r"\101KIA",
        "[A]KIA",
        "(?:A)KIA",
        "(A)KIA",
        "A{1}KIA",
        "A(?#a comment)KIA",
        "(?x) A K I A  # verbose",
        "(?-i:AKIA)",
        "A()KIA",
        r"\bAKIA\b",
    ],
)
def test_every_spelling_of_a_text_reads_as_the_text(pattern: str) -> None:
    assert texts(pattern) == {"AKIA"}


def test_optional_parts_and_alternatives_give_each_text() -> None:
    assert texts("A?KIA") == {"AKIA", "KIA"}
    assert texts("AK(?:I|J)A") == {"AKIA", "AKJA"}
    assert texts("[Aa]KIA") == {"AKIA", "aKIA"}
    assert texts("(?:AB){3}C") == {"ABABABC"}
    assert texts("(?:AB){1,5}C") == {"ABC", "ABABC"}  # the first counts only
    # A lookaround's text is a text of its own; the texts around it run on through it.
    assert texts("(?<=AKIA)Z3Q7") == {"AKIA", "Z3Q7"}
    assert texts("AK(?=I)IA") == {"AKIA", "I"}


def test_a_part_that_is_not_literal_ends_a_text() -> None:
    assert texts(r"AKIA\dZ3") == {"AKIA", "Z3"}
    assert texts("AKIA.Z3") == {"AKIA", "Z3"}
    assert texts("AKIA[A-Z]Z3") == {"AKIA", "Z3"}
    assert texts(r"^\d+ apples$") == {" apples"}


def test_ignoring_case_is_noticed_wherever_it_is_set() -> None:
    for pattern, flags in (("(?i)akia", 0), ("(?i:akia)", 0), ("akia", re.IGNORECASE)):
        read = literal_texts(pattern, flags)
        assert read is not None and read.ignorecase, pattern
    read = literal_texts("akia")
    assert read is not None and not read.ignorecase


def test_reading_is_bounded() -> None:
    many = "[Aa]" * 12  # 4096 spellings: kept to a bounded number of texts
    read = literal_texts(many)
    assert read is not None and 0 < len(read.texts) <= 2 * MAX_VARIANTS * 12
    assert literal_texts("A{100000}") is not None
    assert literal_texts("(unclosed") is None


@pytest.mark.parametrize(
    "pattern",
    [
        r"\U00000041KIA" + TAIL,
        r"\N{LATIN CAPITAL LETTER A}KIA" + TAIL,
        r"\101KIA" + TAIL,
        "[A]KIA" + TAIL,
        "(?:A)KIA" + TAIL,
        "(A)KIA" + TAIL,
        "A{1}KIA" + TAIL,
        "A?KIA" + TAIL,
        "A(?#c)KIA" + TAIL,
        "(?x) A K I A " + " ".join(TAIL) + "  # key",
        "(?-i:AKIA)" + TAIL,
        "AKIA()" + TAIL,
        "(?i)" + KEY.lower(),
        "^key: [A]KIA" + TAIL + "$",
    ],
)
def test_a_pattern_spelling_a_key_is_kept_as_its_placeholder(pattern: str) -> None:
    assert redact_pattern(pattern) == PLACED_KEY
    assert hidden_secrets(pattern) == ["aws_access_key"]


@pytest.mark.parametrize(
    "pattern",
    ["orgvalue[-]Qx7Lm2Pz9Wk3Hh", r"orgvalue\055Qx7Lm2Pz9Wk3Hh", "(?i)ORGVALUE-QX7LM2PZ9WK3HH"],
)
def test_a_pattern_spelling_a_stored_value_is_kept_as_its_placeholder(pattern: str) -> None:
    assert redact_pattern(pattern, [ORG]) == "[REDACTED:secret]"
    assert redact_pattern(pattern) == pattern  # not known: nothing to find


def test_several_secrets_are_kept_in_order() -> None:
    pattern = "[A]KIA" + TAIL + "|orgvalue[-]Qx7Lm2Pz9Wk3Hh"
    assert redact_pattern(pattern, [ORG]) == PLACED_KEY + r"[\s\S]*[REDACTED:secret]"


def test_a_pattern_spelling_no_secret_is_kept_as_written() -> None:
    for pattern in (
        r"^\d+ apples$",
        "AKIA[A-Z0-9]{16}",
        "(?<=AKIA)[A-Z0-9]{16}",
        "(?<=orgvalue-).{14}",
        "[A]KIA" + TAIL[:-1] + "?",  # one character short of a key at most
        "(unclosed",
    ):
        assert redact_pattern(pattern, [ORG]) == pattern, pattern


def test_a_checks_flags_are_read_with_its_pattern() -> None:
    spaced = " ".join(KEY)
    assert redact_check_patterns("regex", {"pattern": spaced}) == {"pattern": spaced}
    assert redact_check_patterns("regex", {"pattern": spaced, "flags": "x"}) == {
        "pattern": PLACED_KEY,
        "flags": "x",
    }
    lower = {"pattern": KEY.lower(), "flags": ["IGNORECASE"]}
    assert redact_check_patterns("regex", lower)["pattern"] == PLACED_KEY
    scoring = {"required": ["regex"], "settings": {"regex": {"pattern": "[A]KIA" + TAIL}}}
    kept = redact_scoring_patterns(scoring)
    assert kept["settings"]["regex"]["pattern"] == PLACED_KEY


def test_a_schema_pattern_spelling_a_secret_is_kept_as_its_placeholder() -> None:
    schema = {"properties": {"k": {"pattern": "^[A]KIA" + TAIL + "$"}}}
    kept = redact_check_patterns("json_schema", {"schema": schema})
    assert kept["schema"]["properties"]["k"]["pattern"] == PLACED_KEY
