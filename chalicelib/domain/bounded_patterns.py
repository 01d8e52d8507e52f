"""Checking a call's arguments against a tool's schema without letting a tenant's regular
expression take the service's time (docs/guides/tools.md).

A tool's `parameters` is the tenant's: a `pattern` such as `^(a|aa)+$` backtracks for ever on a
long enough string, and Python's `re` cannot be interrupted. The validator here is JSON schema
2020-12 with `pattern` and `patternProperties` matched by the `regex` module under a timeout:
each match at most `PATTERN_TIMEOUT_S`, and one validation's matches together at most
`PATTERN_BUDGET_S`; past either, the match fails with a message saying so (the arguments are
refused, nothing hangs).

Pure: no I/O (the budget is per thread, set by `bounded_validator`'s caller through
`PatternBudget`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

__all__ = ["PATTERN_BUDGET_S", "PATTERN_TIMEOUT_S", "PatternBudget", "bounded_validator"]

PATTERN_TIMEOUT_S = 0.05
"""The longest one `pattern` match may take, in seconds."""

PATTERN_BUDGET_S = 0.5
"""The longest all the matches of one validation may take together, in seconds."""

_local = threading.local()


class PatternBudget:
    """The time one validation's pattern matches may take together (`PATTERN_BUDGET_S`), for the
    thread that validates: `with PatternBudget(): ...`."""

    def __enter__(self) -> PatternBudget:
        _local.left = PATTERN_BUDGET_S
        return self

    def __exit__(self, *_: object) -> None:
        _local.left = None


def _search(pattern: str, text: str) -> tuple[bool, str | None]:
    """Whether `pattern` matches somewhere in `text`, or why it could not be told."""
    import regex

    left = getattr(_local, "left", None)
    limit = PATTERN_TIMEOUT_S if left is None else min(PATTERN_TIMEOUT_S, left)
    if limit <= 0:
        return False, "the arguments' patterns took too long to match"
    started = time.monotonic()
    try:
        found = regex.search(pattern, text, timeout=limit) is not None
        problem = None
    except TimeoutError:
        found, problem = False, f"matching the pattern {pattern[:60]!r} took too long"
    except regex.error:
        found, problem = False, f"the pattern {pattern[:60]!r} is not a regular expression"
    if left is not None:
        _local.left = left - (time.monotonic() - started)
    return found, problem


@cache
def _validator_class() -> Any:
    from jsonschema import Draft202012Validator, validators
    from jsonschema.exceptions import ValidationError

    def pattern(validator: Any, patrn: str, instance: Any, schema: Any) -> Iterator[Any]:
        if not validator.is_type(instance, "string"):
            return
        found, problem = _search(patrn, instance)
        if problem is not None:
            yield ValidationError(problem)
        elif not found:
            yield ValidationError(f"{instance[:80]!r} does not match {patrn[:60]!r}")

    def pattern_properties(
        validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any
    ) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        for patrn, subschema in patterns.items():
            for key, value in instance.items():
                found, problem = _search(patrn, key)
                if problem is not None:
                    yield ValidationError(problem, path=[key])
                elif found:
                    yield from validator.descend(value, subschema, path=key, schema_path=patrn)

    return validators.extend(
        Draft202012Validator, {"pattern": pattern, "patternProperties": pattern_properties}
    )


def bounded_validator(schema: Mapping[str, Any]) -> Any:
    """A JSON schema 2020-12 validator of `schema` whose `pattern` and `patternProperties` are
    matched under the module's time bounds (use it inside `PatternBudget`)."""
    return _validator_class()(schema)
