"""The JSON text a request body may be: standard JSON, within what DynamoDB keeps.

`loads_bounded` parses a body as every route parses it (`api.common.json_body`) and as the tool
gateway parses a call's arguments: no `NaN` or infinities, integers of at most 38 digits, numbers
within DynamoDB's range, no lone surrogates, nesting at most `MAX_JSON_DEPTH` deep; the first
problem is a 400 naming the field it sits in.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from chalicelib.domain.text import MAX_INTEGER_DIGITS, MAX_JSON_DEPTH
from chalicelib.errors import InvalidInputError

MAX_NUMBER_MAGNITUDE = 1e126
"""A number in a JSON body is 0 or has a magnitude in [`MIN_NUMBER_MAGNITUDE`, this): DynamoDB's
range; beyond it a write fails (and a float past 1.8e308 would parse as infinity)."""

MIN_NUMBER_MAGNITUDE = 1e-130
"""Smallest magnitude of a non-zero number in a JSON body (DynamoDB's)."""


class _Refused:
    """A number the parser met that a body may not hold, kept in place so that the walk after
    parsing can name the field it sits in."""

    def __init__(self, why: str) -> None:
        self.why = why


def _constant(name: str) -> _Refused:
    return _Refused(f"{name} is not a JSON number (numbers must be finite)")


def _integer(text: str) -> int | _Refused:
    digits = len(text.lstrip("-"))
    if digits > MAX_INTEGER_DIGITS:
        return _Refused(
            f"an integer of {digits} digits (integers have at most {MAX_INTEGER_DIGITS})"
        )
    return int(text)


def _number(text: str) -> float | _Refused:
    value = float(text)
    if not math.isfinite(value) or (
        value and not MIN_NUMBER_MAGNITUDE <= abs(value) < MAX_NUMBER_MAGNITUDE
    ):
        return _Refused(f"{text[:40]} is outside the range of numbers (0, or 1e-130 to 1e126)")
    return value


def _field_name(path: tuple[str | int, ...]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out or "body"


_SURROGATE = re.compile("[\ud800-\udfff]")
"""A UTF-16 surrogate: JSON's `\\ud800` escapes can spell one alone, which is no Unicode text (it
cannot be encoded to UTF-8, so nothing could store it)."""
_NOT_TEXT = "holds a lone surrogate (a \\ud800-\\udfff escape without its pair), not text"


def _check_parsed(body: Any) -> None:
    """Raise for the first refused number or lone surrogate (naming its field), or for nesting past
    the limit."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(body, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, _Refused):
            field = _field_name(path)
            raise InvalidInputError(f"{field}: {node.why}", field=field)
        if isinstance(node, str) and _SURROGATE.search(node):
            field = _field_name(path)
            raise InvalidInputError(f"{field}: {_NOT_TEXT}", field=field)
        if isinstance(node, dict | list):
            if len(path) >= MAX_JSON_DEPTH:
                raise InvalidInputError(
                    f"the JSON body nests deeper than {MAX_JSON_DEPTH} levels", field="body"
                )
            if isinstance(node, dict):
                key = next((k for k in node if _SURROGATE.search(k)), None)
                if key is not None:
                    field = _field_name(path)
                    raise InvalidInputError(f"{field}: a key {_NOT_TEXT}", field=field)
            items = node.items() if isinstance(node, dict) else enumerate(node)
            stack.extend((child, (*path, key)) for key, child in reversed(list(items)))


def loads_bounded(raw: bytes | str) -> Any:
    """Parse JSON text as a request body is parsed: standard JSON only, within DynamoDB's numbers.

    Args:
        raw: the JSON text (UTF-8 bytes or str).
    Returns:
        The parsed value.
    Raises:
        InvalidInputError: text that is not JSON, or nesting deeper than `MAX_JSON_DEPTH` (also
            when it is deep enough to exhaust the parser's stack), field `body`; `NaN`,
            `Infinity` or `-Infinity` (Python's json takes them, other JSON parsers do not), an
            integer of more than `MAX_INTEGER_DIGITS` digits, a non-zero number outside
            [`MIN_NUMBER_MAGNITUDE`, `MAX_NUMBER_MAGNITUDE`), or a string or key holding a lone
            surrogate, naming the field it is in (`spec.options.n`, `cases[2].metadata`).
    """
    try:
        body = json.loads(raw, parse_constant=_constant, parse_int=_integer, parse_float=_number)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"malformed JSON: {exc}", field="body") from None
    except RecursionError:
        raise InvalidInputError(
            f"the JSON body nests deeper than {MAX_JSON_DEPTH} levels", field="body"
        ) from None
    _check_parsed(body)
    return body
