"""What changed between a run's two specs (docs/guides/console.md), by hand."""

from __future__ import annotations

import json

from chalicelib.domain import spec_diff
from chalicelib.domain.spec_diff import Change, SpecChange, text_lines


def spec_changes(before, after) -> list[SpecChange]:
    found = spec_diff.spec_changes(before, after)
    assert found.left_out == 0
    return found.changes


def test_equal_specs_have_no_changes_whatever_their_key_order() -> None:
    assert spec_changes({"a": 1, "b": [1, 2]}, {"b": [1, 2], "a": 1}) == []


def test_keys_added_removed_and_changed_are_named_by_path_in_key_order() -> None:
    before = {"model": "m3", "options": {"temperature": 0.2, "seed": 7}, "tools": ["add"]}
    after = {"model": "m4", "options": {"temperature": 0.2, "top_p": 0.9}, "tools": ["add", "mul"]}
    assert spec_changes(before, after) == [
        SpecChange("model", Change.CHANGED, "m3", "m4"),
        SpecChange("options.seed", Change.REMOVED, before=7),
        SpecChange("options.top_p", Change.ADDED, after=0.9),
        SpecChange("tools[1]", Change.ADDED, after="mul"),
    ]


def test_a_key_that_is_not_a_plain_name_is_quoted() -> None:
    [change] = spec_changes({"headers": {"x id": "1"}}, {"headers": {"x id": "2"}})
    assert change.path == 'headers["x id"]'


def test_values_of_another_type_differ_even_when_python_calls_them_equal() -> None:
    [change] = spec_changes({"n": 1}, {"n": True})
    assert (change.path, change.before, change.after) == ("n", 1, True)
    assert spec_changes({"n": 1}, {"n": 1.0})[0].change == Change.CHANGED


def test_a_map_replaced_by_a_value_is_one_change() -> None:
    assert spec_changes({"tools": {"a": 1}}, {"tools": None}) == [
        SpecChange("tools", Change.CHANGED, {"a": 1}, None)
    ]


def test_a_prompt_of_several_lines_carries_its_changed_lines() -> None:
    before = {"prompt": "You are terse.\nAnswer with a number.\nShow no work.\nBe exact."}
    after = {"prompt": "You are terse.\nAnswer with a number.\nShow your work.\nBe exact."}
    [change] = spec_changes(before, after)
    assert change.lines == (
        "@@ -1,4 +1,4 @@",
        " You are terse.",
        " Answer with a number.",
        "-Show no work.",
        "+Show your work.",
        " Be exact.",
    )
    assert change.as_json()["lines"] == list(change.lines)


def test_a_one_line_text_has_no_lines_of_diff() -> None:
    [change] = spec_changes({"prompt": "a"}, {"prompt": "b"})
    assert change.lines == ()


def test_the_diff_keeps_two_lines_of_context() -> None:
    before = "\n".join(f"line {i}" for i in range(10))
    after = before.replace("line 5", "LINE 5")
    assert text_lines(before, after) == (
        "@@ -4,5 +4,5 @@",
        " line 3",
        " line 4",
        "-line 5",
        "+LINE 5",
        " line 6",
        " line 7",
    )


def test_two_whole_specs_that_are_not_maps_are_compared_as_values() -> None:
    assert spec_changes(None, {"a": 1}) == [SpecChange("(spec)", Change.CHANGED, None, {"a": 1})]


def test_a_key_of_other_letters_is_quoted_as_written() -> None:
    [change] = spec_changes({"h": {"é 😀": 1}}, {"h": {"é 😀": 2}})
    assert change.path == 'h["é 😀"]'


def test_past_max_changes_the_rest_are_counted_not_listed() -> None:
    n = spec_diff.MAX_CHANGES + 7
    found = spec_diff.spec_changes(list(range(n)), [i + 1 for i in range(n)])
    assert len(found.changes) == spec_diff.MAX_CHANGES and found.left_out == 7
    assert found.changes[-1].path == f"[{spec_diff.MAX_CHANGES - 1}]"


def test_a_long_value_and_a_long_key_are_cut() -> None:
    long = "x" * (spec_diff.MAX_VALUE_CHARS + 10)
    key = "k" * (spec_diff.MAX_KEY_CHARS + 5)
    [change] = spec_changes({key: long}, {key: 1})
    assert change.path == '["' + "k" * spec_diff.MAX_KEY_CHARS + '…"]'  # quoted: not the key
    assert change.cut and change.after == 1
    assert change.before == ('"' + long)[: spec_diff.MAX_VALUE_CHARS] + "…"
    assert change.as_json()["cut"] is True


def test_a_text_past_max_text_lines_gets_no_line_diff() -> None:
    many = "\n".join(str(i) for i in range(spec_diff.MAX_TEXT_LINES + 1))
    [change] = spec_changes({"p": many}, {"p": many + "!"})
    assert change.lines == () and change.cut  # and its values are cut, being that long
    few = "\n".join(str(i) for i in range(spec_diff.MAX_TEXT_LINES - 1))
    assert spec_changes({"p": few}, {"p": few + "!"})[0].lines


def test_a_diff_of_many_changed_lines_stops_at_max_diff_lines() -> None:
    before = "\n".join(f"a{i}" for i in range(1_500))
    after = "\n".join(f"b{i}" for i in range(1_500))
    [change] = spec_changes({"p": before}, {"p": after})
    assert len(change.lines) == spec_diff.MAX_DIFF_LINES + 1 and change.lines[-1] == "…"
    assert change.cut


def test_past_max_diff_chars_the_rest_are_counted_and_a_long_line_is_cut() -> None:
    line = "y" * 3_000  # longer than a diff line; the values near MAX_VALUE_CHARS
    texts = {f"p{i:03d}": f"a\n{line}{i}" for i in range(400)}
    found = spec_diff.spec_changes(texts, {k: v + "!" for k, v in texts.items()})
    assert found.changes[0].lines[-1] == "+" + line[: spec_diff.MAX_LINE_CHARS - 1] + "…"
    assert found.changes[0].cut
    listed = sum(len(json.dumps(c.as_json(), ensure_ascii=False)) for c in found.changes)
    assert spec_diff.MAX_DIFF_CHARS <= listed < spec_diff.MAX_DIFF_CHARS + 10_000
    assert len(found.changes) + found.left_out == 400 and found.left_out > 0
