"""What a suite's name is compared by (`suite_rules.name_key`) and how it is kept
(`suite_rules.shown_name`): docs/guides/suites.md, "A suite's name"."""

from __future__ import annotations

import pytest

from chalicelib.domain.suite_rules import name_key, name_taken, shown_name


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("Nightly", "nightly"),
        ("Nightly", "NIGHTLY"),
        ("Nightly", "  Nightly  "),
        ("Nightly run", "nightly   run"),
        ("Nightly run", "Nightly\trun"),
        ("Nightly", "\uff2e\uff49\uff47\uff48\uff54\uff4c\uff59"),  # full-width letters
        ("Straße", "STRASSE"),  # case folding, not lower()
        ("Ǆ", "ǆ"),  # a title-case digraph folds
        ("Nightly", "Night\u200bly"),  # a zero-width space
        ("Nightly", "\ufeffNightly"),  # a byte order mark
        ("Nightly", "Nig\u00adhtly"),  # a soft hyphen
        ("Nightly", "Nightly\u200d"),  # a zero-width joiner
        ("Nightly run", "Nightly\u200b \u200brun"),
    ],
)
def test_names_a_person_reads_as_one_are_one_name(one, other):
    assert name_key(one) == name_key(other)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("Nightly", "Nightly 2"),
        ("Nightly run", "Nightlyrun"),
        ("nightly", "nightIy"),  # a capital I is not an l
        ("résumé", "resume"),  # accents are kept
    ],
)
def test_names_that_read_differently_stay_apart(one, other):
    assert name_key(one) != name_key(other)


@pytest.mark.parametrize("blank", ["", " ", "\t \n", "\u200b", " \u2060 "])
def test_a_blank_name_has_no_key(blank):
    assert name_key(blank) == ""


def test_a_name_is_kept_as_given_without_the_spaces_at_its_ends():
    assert shown_name("  Nightly  Run ") == "Nightly  Run"
    assert shown_name("Nightly") == "Nightly"
    assert shown_name("   ") == ""


def test_a_taken_name_quotes_the_kept_suite_s_name_and_names_its_id():
    refused = name_taken("race0", "suite_1")
    assert refused.field == "name" and refused.details == {"suite_id": "suite_1"}
    assert refused.message == (
        "name: this agent already has a suite named 'race0' (suite_1); suite names are unique "
        "per agent, compared without case, surrounding spaces or invisible characters: choose "
        "another name"
    )
