"""The HTTP transport every runtime that speaks HTTP shares, and how a reply is classified
(docs/reference/runtimes.md): one strictly bounded, egress-checked POST (`HttpTransport`), a
bound on any work (`run_with_timeout`), and what a status means (`raise_for_status`).

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
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import httpx

from chalicelib.adapters.egress import Egress, Target, parse_target
from chalicelib.domain.redaction import redact
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

CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})
"""Headers whose value is a credential: never a literal in a spec, dropped on a cross-origin
redirect."""

MAX_REDIRECTS = 5
"""Redirects followed per request, each hop checked by `Egress` before it is connected to."""

REDIRECT_STATUSES = frozenset({301, 302, 307, 308})
"""Redirects that are followed, POSTing the same body again; any other 3xx is the agent's answer."""

_MAX_CLIENTS = 64
"""HTTP clients kept per transport, one per origin (see `HttpTransport`)."""


T = TypeVar("T")


def run_with_timeout(fn: Callable[[], T], timeout_s: float, what: str) -> T:
    """Run `fn()` in a daemon thread and wait at most `timeout_s` seconds for it.

    Python threads cannot be killed: on timeout the call keeps running in the background
    (a daemon thread, so it never holds up interpreter exit) and its result is dropped. Callers
    give `fn` its own bound (e.g. an HTTP timeout) so such leftovers end by themselves.

    Args:
        fn: the work; its exceptions are re-raised here unchanged.
        timeout_s: bound in seconds; must be > 0.
        what: names the work in the timeout message, e.g. "agent http://x/ask".

    Returns:
        What `fn` returned.

    Raises:
        ProviderError: (status None) when `fn` did not finish within `timeout_s`.
        BaseException: whatever `fn` raised.
    """
    outcome: dict[str, Any] = {}
    done = threading.Event()

    def target() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the waiting thread
            outcome["error"] = exc
        finally:
            done.set()

    threading.Thread(target=target, name=f"runtime:{what}"[:60], daemon=True).start()
    if not done.wait(timeout_s):
        raise ProviderError(f"{what} timed out after {timeout_s:g} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def check_timeout(timeout_s: Any) -> float:
    """Return `timeout_s` as a float, refusing non-positive or non-numeric values.

    Raises:
        InvalidInputError: (field "timeout_s") when it is not a number > 0.
    """
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or not timeout_s > 0:
        raise InvalidInputError("timeout_s must be a number of seconds > 0", field="timeout_s")
    return float(timeout_s)


def clip(text: str, limit: int = _ERROR_TEXT_LIMIT) -> str:
    """`text` with recognized secrets redacted, then cut to `limit` characters (an ellipsis when
    cut).

    Redacting first matters: a secret straddling the cut would otherwise leave its start behind,
    too short for anything downstream to recognize (docs/reference/data-protection.md).
    """
    text = redact(text)
    return text if len(text) <= limit else text[:limit] + "…"


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


def _default_client() -> httpx.Client:
    # No redirects (each hop is checked here), no proxy or CA settings from the environment.
    return httpx.Client(follow_redirects=False, trust_env=False)


class HttpTransport:
    """Thread-safe, lazily built `httpx.Client`s plus one strictly bounded, egress-checked POST.

    Shared by the `http` and `openai` runtimes; no connection is opened until the first call.
    Every hop resolves its host once through `Egress`, checks every address, and connects to the
    checked address itself; the Host header, TLS SNI and certificate verification stay on the name
    (httpcore's `sni_hostname` request extension). A connection pool is keyed by the address it
    connects to, so each host name gets its own client: a TLS connection made for one name is never
    reused for another that shares its address.
    """

    def __init__(
        self, egress: Egress | None = None, client_factory: Callable[[], httpx.Client] | None = None
    ) -> None:
        """Args:
        egress: the egress policy; default the system resolver with private networks refused.
        client_factory: builds one client (tests may inject one, e.g. trusting a test CA);
            default a client that follows no redirects and ignores proxy variables.
        """
        self.egress = egress or Egress()
        self._factory = client_factory or _default_client
        self._clients: OrderedDict[tuple[str, str, int], httpx.Client] = OrderedDict()
        self._lock = threading.Lock()

    def client(self, target: Target) -> httpx.Client:
        """The client of `target`'s origin, built on first use (at most `_MAX_CLIENTS` kept; the
        least recently used is dropped, and its idle connections close when it is collected)."""
        with self._lock:
            client = self._clients.get(target.origin)
            if client is None:
                client = self._clients[target.origin] = self._factory()
                while len(self._clients) > _MAX_CLIENTS:
                    self._clients.popitem(last=False)
            else:
                self._clients.move_to_end(target.origin)
            return client

    def close(self) -> None:
        """Close every client built."""
        with self._lock:
            clients, self._clients = list(self._clients.values()), OrderedDict()
        for client in clients:
            client.close()

    def post_json(
        self,
        url: str,
        body: Any,
        headers: Mapping[str, str],
        timeout_s: float,
        source: str,
        *,
        secret_headers: frozenset[str] = frozenset(),
    ) -> tuple[int, bytes]:
        """POST `body` as JSON; return `(status, response body)` within `timeout_s` seconds.

        Redirects: 301, 302, 307 and 308 are followed (at most `MAX_REDIRECTS`), POSTing the same
        body again; each hop is checked like the first, before it is connected to, and a hop to
        another origin drops the credential headers (`Authorization`, `Proxy-Authorization`,
        `Cookie` and every header in `secret_headers`). Any other status is returned as is.

        httpx's timeouts bound each phase (connect, each read), not the whole exchange, so the
        exchange also runs under `run_with_timeout` for a strict total bound; httpx's own
        timeout makes an abandoned exchange end soon after.

        Raises:
            EgressRefusedError: (an `AgentCrashError`) a hop leads to a refused address.
            AgentCrashError: a redirect to a URL that is not followed, or too many redirects.
            ProviderError: (status None) on timeout, a name that does not resolve, or any
                transport error.
        """
        content = json.dumps(body, ensure_ascii=False).encode("utf-8")
        sent = {"content-type": "application/json", "accept": "application/json"}
        sent.update(headers)
        dropped = CREDENTIAL_HEADERS | {name.lower() for name in secret_headers}

        def exchange() -> tuple[int, bytes]:
            nonlocal sent
            try:
                target = parse_target(url)
            except ValueError as exc:
                raise AgentCrashError(f"{source}: the URL {exc}") from None
            for hop in range(MAX_REDIRECTS + 1):
                addresses = self.egress.addresses(target, source)
                response = self._send(target, addresses, content, sent, timeout_s, source)
                location = response.headers.get("location")
                if response.status_code not in REDIRECT_STATUSES or not location:
                    return response.status_code, response.content
                if hop == MAX_REDIRECTS:
                    break
                try:
                    following = parse_target(target.url.join(location))
                except ValueError as exc:
                    raise AgentCrashError(
                        f"{source} redirected to a URL that is not followed: the URL {exc}"
                    ) from None
                if following.origin != target.origin:
                    sent = {k: v for k, v in sent.items() if k.lower() not in dropped}
                target = following
            raise AgentCrashError(f"{source} redirected more than {MAX_REDIRECTS} times")

        return run_with_timeout(exchange, timeout_s, source)

    def _send(
        self,
        target: Target,
        addresses: list[str],
        content: bytes,
        headers: Mapping[str, str],
        timeout_s: float,
        source: str,
    ) -> httpx.Response:
        """POST to the first of `addresses` that accepts a connection, naming `target`'s host."""
        client = self.client(target)
        extensions: dict[str, Any] = {}
        if target.is_https and target.literal is None:
            extensions["sni_hostname"] = target.host
        sent = {**headers, "host": target.url.netloc.decode("ascii")}
        last: Exception | None = None
        for address in addresses:
            try:
                return client.post(
                    target.url.copy_with(host=address),
                    content=content,
                    headers=sent,
                    timeout=httpx.Timeout(timeout_s),
                    extensions=extensions,
                )
            except httpx.ConnectError as exc:
                last = exc
            except httpx.TimeoutException as exc:
                raise ProviderError(f"{source} timed out after {timeout_s:g} s") from exc
            except httpx.HTTPError as exc:
                raise ProviderError(f"{source} could not be reached: {clip(str(exc))}") from exc
        raise ProviderError(f"{source} could not be reached: {clip(str(last))}") from last
