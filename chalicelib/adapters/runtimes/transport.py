"""How a reply of an agent or a provider is classified (docs/reference/runtimes.md): what a status
means (`raise_for_status`), a body's JSON, a case timeout's bounds. The egress-checked POST every
runtime shares (`HttpTransport`) and the bound on any work (`run_with_timeout`) are in
`chalicelib.adapters.http_transport`, re-exported here.

Classification: the caller retries only `ProviderError`.

- 5xx, 408, 429, connection errors, timeouts → `ProviderError(status=)`.
- Any other 4xx (or a 3xx that is not followed) → `AgentCrashError` (the agent refused the
  request); 401/403 say "credentials rejected" in the message.
- Redirects 301/302/307/308 are followed up to `MAX_REDIRECTS` times with the same POST body, each
  hop checked before it is connected to; a hop to a refused address is `EgressRefusedError` (an
  `AgentCrashError`, never retried), and a hop to another origin drops the credential headers.
"""

from __future__ import annotations

import json
from typing import Any

from chalicelib.adapters.http_transport import CREDENTIAL_HEADERS as CREDENTIAL_HEADERS
from chalicelib.adapters.http_transport import MAX_REDIRECTS as MAX_REDIRECTS
from chalicelib.adapters.http_transport import REDIRECT_STATUSES as REDIRECT_STATUSES
from chalicelib.adapters.http_transport import HttpTransport as HttpTransport
from chalicelib.adapters.http_transport import clip as clip
from chalicelib.adapters.http_transport import run_with_timeout as run_with_timeout
from chalicelib.domain.text import json_of_bytes
from chalicelib.errors import (
    AgentCrashError,
    InvalidInputError,
    ProviderError,
    is_retryable_status,
)

CREDENTIAL_STATUSES = frozenset({401, 403})
"""Statuses that mean the provider rejected our credentials."""

_ERROR_TEXT_LIMIT = 500
"""Characters of a response body kept in an error message: enough to read, not a whole page."""


def check_timeout(timeout_s: Any) -> float:
    """Return `timeout_s` as a float, refusing non-positive or non-numeric values.

    Raises:
        InvalidInputError: (field "timeout_s") when it is not a number > 0.
    """
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or not timeout_s > 0:
        raise InvalidInputError("timeout_s must be a number of seconds > 0", field="timeout_s")
    return float(timeout_s)


def decode_json(body: bytes, source: str) -> Any:
    """Decode a response body as JSON.

    Raises:
        ProviderError: the body is not JSON (a proxy's HTML error page, a cut-off stream).
    """
    try:
        return json_of_bytes(body)  # a byte that is not UTF-8 is U+FFFD, not a refused body
    except (RecursionError, ValueError) as exc:
        shown = repr(clip(body.decode("utf-8", errors="replace"), 200))  # redacted before it is cut
        raise ProviderError(f"{source} returned a body that is not JSON: {shown}") from exc


def raise_for_status(
    status: int, body: bytes, source: str, *, credentials_retry: bool = False
) -> None:
    """Raise the error a non-2xx status means; return for 2xx.

    Args:
        status: the HTTP status.
        body: the response body, quoted (cut) in the message.
        source: names the agent or provider.
        credentials_retry: True makes 401/403 a `ProviderError(status=)` (the caller sees a
            non-retryable status and names it "credentials rejected"); False makes them an
            `AgentCrashError` like any other 4xx.

    Raises:
        ProviderError: 5xx, 408, 429 (and 401/403 when `credentials_retry`).
        AgentCrashError: any other non-2xx.
    """
    if 200 <= status <= 299:
        return
    detail = _error_detail(body)
    if status in CREDENTIAL_STATUSES:
        message = f"{source}: credentials rejected (HTTP {status}): {detail}"
        if credentials_retry:
            raise ProviderError(message, status=status)
        raise AgentCrashError(message)
    message = f"{source} answered HTTP {status}: {detail}"
    if is_retryable_status(status):
        raise ProviderError(message, status=status)
    raise AgentCrashError(message)


def _error_detail(body: bytes) -> str:
    """The most readable part of an error body: OpenAI's `error.message`, else the text."""
    try:
        data = json.loads(body)
    except (RecursionError, ValueError, UnicodeDecodeError):
        return clip(body.decode("utf-8", errors="replace").strip()) or "(empty body)"
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and error.get("message"):
            return clip(str(error["message"]))
        if error:
            return clip(str(error))
    return clip(json.dumps(data, ensure_ascii=False))
