"""The names a person gives things (`domain.display_names`): what a name may hold, and what two
names are compared by (docs/reference/limits.md, the row "names"). Every expected value is worked
out by hand from the Unicode categories: U+200B, U+200D, U+00AD, U+FEFF, U+202A and U+202C are
format characters (Cf); U+0000, U+0007, U+0009, U+000A, U+001B, U+007F and U+0085 are control
characters (Cc)."""

from __future__ import annotations

import pytest

from chalicelib.domain.display_names import (
    code_points,
    comparison_key,
    name_problem,
    of_category,
    without_format,
)


@pytest.mark.parametrize(
    "look_alike",
    [
        "Night\u200bly",
        "Nightly\u200b",
        "\ufeffNightly",
        "Nig\u00adhtly",
        "Nightly\u200d",
        "\u202aNightly\u202c",
        " NIGHT\u200bLY ",
    ],
)
def test_format_characters_are_left_out_of_the_comparison(look_alike):
    assert comparison_key(look_alike) == "nightly"


def test_a_format_character_between_letters_does_not_join_the_words_around_it_to_spaces():
    # "Nightly\u200b run": the space stays one space, the zero-width space goes
    assert comparison_key("Nightly\u200b run") == "nightly run"
    assert comparison_key("Nightly\u200brun") == "nightlyrun"


def test_a_format_character_inside_a_combining_sequence_does_not_keep_it_apart():
    # "e", ZWSP, COMBINING ACUTE ACCENT: without the ZWSP NFKC composes U+00E9
    assert comparison_key("caf" + "e\u200b\u0301") == "caf\u00e9"
    assert comparison_key("caf" + "e\u200b\u0301") == comparison_key("CAFÉ")


@pytest.mark.parametrize("invisible", ["\u200b", "\ufeff \u200d", "\u00ad\t"])
def test_a_name_made_only_of_invisible_characters_and_spaces_has_no_key(invisible):
    assert comparison_key(invisible) == ""


def test_without_format_keeps_everything_else_as_written():
    assert without_format("\ufeffNig\u00adhtly\u200d") == "Nightly"
    assert without_format("\U0001f469\u200d\U0001f4bb Team") == "\U0001f469\U0001f4bb Team"
    assert without_format("Ａ b\tc") == "Ａ b\tc"


def test_of_category_lists_each_character_in_order():
    assert of_category("a\x00b\x1b\x00", "Cc") == ["\x00", "\x1b", "\x00"]
    assert of_category("a\u200bb\u00ad", "Cf") == ["\u200b", "\u00ad"]
    assert of_category("plain", "Cc") == []


def test_code_points_name_each_character_once_in_order():
    assert code_points(["\x00", "\x1b", "\x00", "\x07"]) == "U+0000, U+001B, U+0007"
    assert code_points("\U0001f4bb") == "U+1F4BB"
    assert code_points([]) == ""


def test_a_name_with_control_characters_is_refused_naming_them():
    assert name_problem("Nightly\x00\x07\x1b[31m") == (
        "must not contain control characters (found U+0000, U+0007, U+001B): a name is one "
        "line of text a person reads"
    )


@pytest.mark.parametrize(
    ("name", "found"),
    [
        ("Night\nly", "U+000A"),
        ("Nightly\t", "U+0009"),
        ("Night\x7fly", "U+007F"),
        ("Night\x85ly", "U+0085"),
        ("\r\n", "U+000D, U+000A"),
    ],
)
def test_every_control_character_is_one(name, found):
    assert f"(found {found})" in (name_problem(name) or "")


@pytest.mark.parametrize(
    "name",
    ["", "Nightly", "Night\u200bly", "\U0001f469\u200d\U0001f4bb Team", "résumé", "Ｎｉｇｈｔ"],
)
def test_a_name_without_control_characters_is_one(name):
    assert name_problem(name) is None
