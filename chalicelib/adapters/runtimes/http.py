"""The `http` runtime (docs/reference/runtimes.md).

Spec::

    {"runtime": "http", "url": "https://agent.example/ask",
     "headers": {"X-Team": "evals",                                   # a literal value, or
                 "Authorization": {"secret": "agent-key", "prefix": "Bearer "}}}  # a secret's

A header value is a literal string or a reference to one of the organization's secrets, read
through the `AskContext` when asked (a missing one is "credentials missing", status 401). A
literal that is a credential is refused when the spec is saved (`spec_fields.check_headers`). The
URL's address is checked by `chalicelib.adapters.egress` when the spec is saved and again on every
connection (docs/reference/security.md).

`ask` POSTs the case payload (`case_payload`: the case, and the attempt's tool gateway when it
has one) as JSON to `url` with `headers` and reads back the answer payload (`answer_payload`).

Classification (docs/reference/runtimes.md): the caller retries only `ProviderError`; each `ask` is
one try bounded by `timeout_s`.

- 2xx with an answer payload → `AgentAnswer` (with `guardrail` set when one blocked it).
- A body `{"error": ..., "crash": true}` (or `crash` absent), at any status → `AgentCrashError`:
  the agent said its own run failed. `{"error": ..., "crash": false}` → `ProviderError` (the
  agent says something upstream of it failed; worth retrying).
- 5xx, 408, 429, connection errors, timeouts, a 2xx without an answer → `ProviderError(status=)`.
- Any other 4xx (or a 3xx that is not followed) → `AgentCrashError` (the agent refused the
  request); 401/403 say "credentials rejected" in the message.
- Redirects are followed as `transport.HttpTransport` follows them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chalicelib.adapters.egress import Egress
from chalicelib.adapters.runtimes.answer_payload import answer_from_payload
from chalicelib.adapters.runtimes.case_payload import case_payload, without_token
from chalicelib.adapters.runtimes.spec_fields import (
    check_headers,
    refuse_api_key_env,
    require_url,
    resolve_headers,
)
from chalicelib.adapters.runtimes.transport import (
    HttpTransport,
    check_timeout,
    clip,
    decode_json,
    raise_for_status,
)
from chalicelib.domain.models import AgentAnswer, CaseRequest
from chalicelib.domain.text import json_of_bytes
from chalicelib.errors import AgentCrashError, ProviderError
from chalicelib.services.ports import AskContext


class HttpRuntime:
    """Asks an agent that serves the case JSON over HTTP (`AgentRuntime`)."""

    def __init__(
        self, transport: HttpTransport | None = None, egress: Egress | None = None
    ) -> None:
        """Args:
        transport: the HTTP client holder; default one built lazily on first `ask`.
        egress: the egress policy of the default transport (ignored with `transport`).
        """
        self._transport = transport or HttpTransport(egress)

    @property
    def egress(self) -> Egress:
        """The egress policy URLs are checked with."""
        return self._transport.egress

    def validate(self, spec: dict[str, Any]) -> None:
        """Check `url` (its shape and, through `Egress`, its address) and optional `headers`.

        Raises:
            InvalidInputError: naming `spec.url` or `spec.headers`.
        """
        _check_shape(spec)
        self.egress.check(spec["url"], "spec.url")

    def ask(
        self, spec: dict[str, Any], request: CaseRequest, timeout_s: float, ctx: AskContext
    ) -> AgentAnswer:
        """POST `request` to `spec["url"]` and parse the answer payload; one try.

        Args:
            spec: an `http` spec (see the module docstring).
            request: the case.
            timeout_s: bound on the whole exchange, in seconds.
            ctx: where secret header values are read, and the attempt's tool gateway (sent in
                the case payload; its token is in no error raised).

        Returns:
            The agent's answer (calls default to `executed`).

        Raises:
            ProviderError: 5xx/408/429, transport errors, timeouts, no answer, a missing secret
                (status 401).
            AgentCrashError: an agent-reported crash, other 4xx, a malformed payload, an address
                egress refuses (`EgressRefusedError`).
            InvalidInputError: the spec no longer passes its checks.
        """
        timeout_s = check_timeout(timeout_s)
        try:
            return self._ask(spec, request, timeout_s, ctx)
        except (ProviderError, AgentCrashError) as exc:
            without_token(exc, ctx)
            raise

    def _ask(
        self, spec: dict[str, Any], request: CaseRequest, timeout_s: float, ctx: AskContext
    ) -> AgentAnswer:
        headers = _check_shape(spec)
        url = spec["url"]
        source = f"agent {url}"
        values, secret_names = resolve_headers(headers, ctx, source)
        status, body = self._transport.post_json(
            url,
            case_payload(request, ctx),
            values,
            timeout_s,
            source,
            secret_headers=secret_names,
        )
        payload = _maybe_json(body)
        # An explicit crash report wins over the status: the agent told us its own run failed.
        if isinstance(payload, dict) and payload.get("error") and payload.get("crash") is True:
            raise AgentCrashError(f"{source} reported an error: {clip(str(payload['error']))}")
        raise_for_status(status, body, source)
        return answer_from_payload(decode_json(body, source), source=source)

    def close(self) -> None:
        """Close the HTTP clients, if built."""
        self._transport.close()


def _check_shape(spec: Mapping[str, Any]) -> dict[str, str | dict[str, str]]:
    refuse_api_key_env(spec)
    require_url(spec, "url")
    return check_headers(spec.get("headers"), "spec.headers")


def _maybe_json(body: bytes) -> Any:
    try:
        return json_of_bytes(body)
    except (RecursionError, ValueError):
        return None
