"""Agent specs and their hash (sha256 of canonical JSON, sorted keys, no whitespace)."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    """The canonical JSON text of `value`: sorted keys, no whitespace, UTF-8 kept as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def spec_hash(spec: dict[str, Any]) -> str:
    """sha256 hex digest of the spec's canonical JSON; key order never changes it."""
    return hashlib.sha256(canonical_json(spec).encode("utf-8")).hexdigest()
