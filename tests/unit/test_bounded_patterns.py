"""A tool's schema patterns are the tenant's: matching them is bounded (domain.bounded_patterns),
so a pattern that backtracks for ever refuses the arguments instead of taking the service's time.
These tests assert what is answered, never how long it took: a test that hung would be stopped by
pytest's own timeout."""

from __future__ import annotations

from chalicelib.domain.tools import argument_problem, parse_tools


def tool(parameters: dict) -> object:
    (declared,) = parse_tools([{"name": "t", "parameters": parameters}])
    return declared


def test_an_ordinary_pattern_is_checked_as_json_schema_says():
    t = tool(
        {"type": "object", "properties": {"sku": {"type": "string", "pattern": "^[A-Z]{3}-\\d+$"}}}
    )
    assert argument_problem(t, {"sku": "ABC-12"}) is None
    assert (
        argument_problem(t, {"sku": "abc"})
        == "arguments.sku: 'abc' does not match '^[A-Z]{3}-\\\\d+$'"
    )


def test_a_backtracking_pattern_refuses_the_arguments_instead_of_hanging():
    t = tool({"type": "object", "properties": {"q": {"type": "string", "pattern": "^(a|aa)+$"}}})
    problem = argument_problem(t, {"q": "a" * 5000 + "!"})
    assert problem is not None and "took too long" in problem


def test_many_slow_matches_share_one_budget():
    t = tool(
        {
            "type": "object",
            "properties": {
                "qs": {"type": "array", "items": {"type": "string", "pattern": "^(a|aa)+$"}}
            },
        }
    )
    problem = argument_problem(t, {"qs": ["a" * 3000 + "!"] * 200})
    assert problem is not None and "too long" in problem


def test_pattern_properties_are_bounded_and_still_descend():
    t = tool(
        {
            "type": "object",
            "patternProperties": {"^x_": {"type": "integer"}, "^(b|bb)+$": {"type": "string"}},
        }
    )
    assert argument_problem(t, {"x_1": 3}) is None
    assert (
        argument_problem(t, {"x_1": "three"}) == "arguments.x_1: 'three' is not of type 'integer'"
    )
    problem = argument_problem(t, {"b" * 5000 + "!": 1})
    assert problem is not None and "took too long" in problem
