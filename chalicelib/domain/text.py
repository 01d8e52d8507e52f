"""Text from outside made safe to keep (issue 11, scope 6; docs/reference/data-protection.md).

An agent or a judge can send text that Python holds but DynamoDB, S3 and strict JSON cannot: a lone
UTF-16 surrogate (`"\\ud800"` is a valid JSON escape, and `json.loads` keeps it as one code point
that no UTF-8 encoder accepts), NUL, or bytes that are not UTF-8 at all. One such character must
not sink a run - a worker that raises `UnicodeEncodeError` leaves its message to be delivered
again, asking the agent every time - so what comes in is cleaned once, where it enters
(`services.asking`), and every later step sees text that encodes. Each unsafe character or byte
becomes U+FFFD, the Unicode replacement character, so what was there stays visible.

Pure: no I/O.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

REPLACEMENT = "\ufffd"
"""U+FFFD REPLACEMENT CHARACTER: what every unsafe character or byte is kept as."""

_UNSAFE = re.compile("[\x00\ud800-\udfff]")
"""NUL and UTF-16 surrogates: the code points a kept text must not hold."""


MAX_JSON_DEPTH = 24
"""How deeply JSON from outside (a request body, an agent's call arguments or result) may nest,
the outermost object or array counting as 1: what is kept is stored inside items DynamoDB nests at
most 32 levels deep, and deeper JSON only serves to exhaust the stack."""

MAX_INTEGER_DIGITS = 38
"""Most digits of an integer kept exactly: DynamoDB keeps numbers of at most 38 significant
digits, so a longer one could be accepted and then never written or read back."""


def clean_text(text: str) -> str:
    """`text` with every NUL and lone surrogate replaced by U+FFFD.

    A surrogate pair held as two code points (`"\\ud83d\\ude00"` built by hand) is joined into the
    character it stands for (U+1F600), as a JSON decoder would have done. Text without either is
    returned as is (the common case costs one regex search).
    """
    if _UNSAFE.search(text) is None:
        return text
    joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return joined.replace("\x00", REPLACEMENT)


def clean_value(value: Any) -> Any:
    """A JSON-like value with every string in it (dict keys too) cleaned by `clean_text`, and every
    non-finite float (`NaN`, `Infinity`, which JSON cannot carry) kept as None."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {
            (clean_text(k) if isinstance(k, str) else k): clean_value(v) for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [clean_value(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def clean_optional(text: str | None) -> str | None:
    """`clean_text` of a string, None kept."""
    return None if text is None else clean_text(text)


def json_of_bytes(body: bytes) -> Any:
    """JSON from a response body, each byte that is not UTF-8 read as U+FFFD.

    `json.loads` refuses a whole body for one bad byte; an agent's answer with a stray Latin-1
    byte is still its answer. Raises ValueError (and RecursionError) for a body that is not JSON
    even so.
    """
    try:
        return json.loads(body)
    except UnicodeDecodeError:
        return json.loads(body.decode("utf-8", errors="replace"))


def utf8_length(text: str) -> int:
    """Bytes `text` takes as UTF-8 (text cleaned by `clean_text` always encodes)."""
    return len(text.encode("utf-8"))


def cut_utf8(text: str, max_bytes: int) -> str:
    """The longest start of `text` taking at most `max_bytes` bytes as UTF-8, never splitting a
    character."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode("utf-8", errors="ignore")
