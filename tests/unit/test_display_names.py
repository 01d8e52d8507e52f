"""The names a person gives things (`domain.display_names`): what a name may hold, and what two
names are compared by (docs/reference/limits.md, the row "names"). Every expected value is worked
out by hand from the Unicode categories: U+200B, U+200D, U+00AD, U+FEFF, U+202A and U+202C are
format characters (Cf); U+0000, U+0007, U+0009, U+000A, U+001B, U+007F and U+0085 are control
characters (Cc). U+FE00-U+FE0F and U+E0100-U+E01EF (variation selectors, Mn), U+034F (Mn),
U+115F, U+1160, U+3164 and U+FFA0 (Hangul fillers, Lo) and the tags U+E0020-U+E007F are
default-ignorable code points (Unicode's DerivedCoreProperties.txt) but not format characters;
U+2800 (braille blank) and U+FFFC (object replacement) are symbols (So); U+2028 and U+2029 are the
line (Zl) and paragraph (Zp) separators."""

from __future__ import annotations

import pytest

from chalicelib.domain.display_names import (
    code_points,
    comparison_key,
    is_default_ignorable,
    name_problem,
    of_category,
    without_format,
    without_invisible,
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


INVISIBLE_LOOK_ALIKES = [
    "Nightly\ufe0f",  # VARIATION SELECTOR-16
    "Night\ufe00ly",  # VARIATION SELECTOR-1
    "Night\u034fly",  # COMBINING GRAPHEME JOINER
    "Nightly\u3164",  # HANGUL FILLER
    "\u115fNightly",  # HANGUL CHOSEONG FILLER
    "Night\u1160ly",  # HANGUL JUNGSEONG FILLER
    "Nightly\uffa0",  # HALFWIDTH HANGUL FILLER (NFKC makes it U+1160)
    "Nightly\U000e0100",  # VARIATION SELECTOR-17
    "Nightly\U000e0041",  # TAG LATIN CAPITAL LETTER A
    "Night\u180bly",  # MONGOLIAN FREE VARIATION SELECTOR ONE
    "Night\u17b4ly",  # KHMER VOWEL INHERENT AQ
    "Nightly\u2800",  # BRAILLE PATTERN BLANK at the end: a space, trimmed
]
"""Names that read as "Nightly", each with a character that is default-ignorable but not a format
character (its category is Mn, Lo or So), or a braille blank."""


@pytest.mark.parametrize("look_alike", INVISIBLE_LOOK_ALIKES)
def test_default_ignorable_characters_are_left_out_of_the_comparison(look_alike):
    assert comparison_key(look_alike) == "nightly"
    assert name_problem(look_alike) is None  # kept as written


def test_a_braille_blank_inside_a_name_is_compared_as_a_space():
    assert comparison_key("Night\u2800ly") == "night ly" == comparison_key("Night  ly")


@pytest.mark.parametrize(
    ("ch", "ignorable"),
    [
        ("\u00ad", True),
        ("\u034f", True),
        ("\u061c", True),
        ("\u115f", True),
        ("\u1160", True),
        ("\u17b5", True),
        ("\u180f", True),
        ("\u200f", True),
        ("\u2065", True),  # reserved, inside 2060..206F
        ("\u3164", True),
        ("\ufe0f", True),
        ("\ufeff", True),
        ("\uffa0", True),
        ("\ufff8", True),
        ("\U0001bca3", True),
        ("\U0001d17a", True),
        ("\U000e0000", True),
        ("\U000e0fff", True),
        ("a", False),
        (" ", False),
        ("\u2800", False),
        ("\ufffc", False),
        ("\ufff9", False),  # INTERLINEAR ANNOTATION ANCHOR: Cf, not default-ignorable
        ("\u180a", False),
        ("\u1161", False),
        ("\ufe10", False),
        ("\U0001d17b", False),
        ("\U000e1000", False),
    ],
)
def test_default_ignorable_is_unicode_s_set_at_its_edges(ch, ignorable):
    assert is_default_ignorable(ch) is ignorable


def test_without_invisible_leaves_out_format_and_default_ignorable_characters():
    assert without_invisible("\u115fNight\u034fly\ufe0f\u3164") == "Nightly"
    assert without_invisible("\u2764\ufe0f Team\u200b") == "\u2764 Team"
    assert without_invisible("Night\u2800ly") == "Night\u2800ly"


@pytest.mark.parametrize(
    ("name", "found"),
    [
        ("\u3164", "U+3164"),
        ("\u2800", "U+2800"),
        ("\u200b", "U+200B"),
        (" \ufe0f\u115f ", "U+FE0F, U+115F"),
        ("\u2800 \u3164", "U+2800, U+3164"),
    ],
)
def test_a_name_that_is_blank_once_compared_is_refused(name, found):
    assert name_problem(name) == (
        f"must hold a character a person can see (found only {found} and spaces, which read as "
        "blank): leave the name empty or write one"
    )


@pytest.mark.parametrize("blank", ["", " ", "   "])
def test_a_name_of_spaces_only_is_blank_not_refused(blank):
    assert name_problem(blank) is None
    assert comparison_key(blank) == ""


@pytest.mark.parametrize(
    ("name", "found"),
    [("a\u2028b", "U+2028"), ("x\u2029y", "U+2029"), ("\u2028\u2029", "U+2028, U+2029")],
)
def test_a_line_or_paragraph_separator_is_refused(name, found):
    assert name_problem(name) == (
        f"must not contain line or paragraph separators (found {found}): a name is one line "
        "of text a person reads"
    )


@pytest.mark.parametrize("name", ["Nightly\ufffc", "\ufffc"])
def test_the_object_replacement_character_is_refused(name):
    assert name_problem(name) == (
        "must not contain the object replacement character (found U+FFFC): it stands for an "
        "embedded object a name cannot hold"
    )


def test_an_emoji_with_its_variation_selector_compares_as_the_emoji():
    assert comparison_key("Team \u2764\ufe0f") == comparison_key("team \u2764")
    assert name_problem("Team \u2764\ufe0f") is None
