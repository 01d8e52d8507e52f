"""Text from outside made safe to keep (issue 11, scope 6): NUL, lone surrogates and bytes that are
not UTF-8 become U+FFFD; everything else is kept as it came."""

from __future__ import annotations

import json

import pytest

from chalicelib.domain.text import (
    REPLACEMENT,
    clean_text,
    clean_value,
    cut_utf8,
    json_of_bytes,
    utf8_length,
)


def test_a_lone_surrogate_from_a_json_escape_becomes_the_replacement_character():
    text = json.loads('"6 \\ud800 7 \\udfff"')  # what an agent's JSON escape decodes to
    with pytest.raises(UnicodeEncodeError):
        text.encode("utf-8")
    assert clean_text(text) == "6 \ufffd 7 \ufffd"
    assert clean_text(text).encode("utf-8") == b"6 \xef\xbf\xbd 7 \xef\xbf\xbd"


def test_nul_becomes_the_replacement_character():
    assert clean_text("a\x00b\x00") == f"a{REPLACEMENT}b{REPLACEMENT}"


def test_a_surrogate_pair_held_as_two_code_points_is_joined_into_its_character():
    assert clean_text("smile \ud83d\ude00 and \ud83d alone") == "smile \U0001f600 and \ufffd alone"


def test_clean_text_keeps_ordinary_text_as_it_is():
    text = "zażółć gęślą jaźń 😀 \t\n\r ok"
    assert clean_text(text) is text


def test_every_string_of_a_json_value_is_cleaned_keys_too_and_nan_is_kept_as_null():
    value = {"q\ud800": ["x\x00", {"n": float("nan"), "inf": float("inf")}], "k": 1, "f": 0.5}
    assert clean_value(value) == {
        "q\ufffd": ["x\ufffd", {"n": None, "inf": None}],
        "k": 1,
        "f": 0.5,
    }


def test_a_body_with_bytes_that_are_not_utf8_is_read_with_replacement_characters():
    body = b'{"answer": "caf\xe9 \xff 42", "model": "m"}'
    with pytest.raises(UnicodeDecodeError):
        json.loads(body)
    assert json_of_bytes(body) == {"answer": "caf\ufffd \ufffd 42", "model": "m"}


def test_a_body_that_is_not_json_is_still_refused():
    with pytest.raises(ValueError):
        json_of_bytes(b"<html>\xff</html>")


def test_utf8_length_counts_bytes_not_characters():
    assert utf8_length("aé😀") == 1 + 2 + 4


@pytest.mark.parametrize(
    "limit, expected",
    [(7, "aé😀"), (6, "aé"), (3, "aé"), (2, "a"), (1, "a"), (0, "")],
)
def test_cut_utf8_never_splits_a_character(limit, expected):
    assert cut_utf8("aé😀", limit) == expected
