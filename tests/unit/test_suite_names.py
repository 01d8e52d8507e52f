"""What a suite's name is compared by (`suite_rules.name_key`) and how it is kept
(`suite_rules.shown_name`): docs/guides/suites.md, "A suite's name"."""

from __future__ import annotations

import pytest

from chalicelib.domain.suite_rules import name_key, shown_name


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


@pytest.mark.parametrize("blank", ["", " ", "\t \n"])
def test_a_blank_name_has_no_key(blank):
    assert name_key(blank) == ""


def test_a_name_is_kept_as_given_without_the_spaces_at_its_ends():
    assert shown_name("  Nightly  Run ") == "Nightly  Run"
    assert shown_name("Nightly") == "Nightly"
    assert shown_name("   ") == ""
