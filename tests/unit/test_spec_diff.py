"""What changed between a run's two specs (seed 004 "In the console"), by hand."""

from __future__ import annotations

from chalicelib.domain.spec_diff import Change, SpecChange, spec_changes, text_lines


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
