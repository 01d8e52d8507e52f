"""Checks `assay dev` and the embedded stack make before anything starts or connects (issue 13
scope 4): a port of 127.0.0.1 that something holds, an AWS endpoint nothing answers at. Each
refusal is a `ProbeError` whose message is one line saying why and what to do.
"""

from __future__ import annotations

import errno
import socket
from urllib.parse import urlsplit

LOCALSTACK_UP = "`docker compose -f localstack-compose.yml up -d`"
"""How LocalStack is started (docs/guides/local-stack.md)."""


class ProbeError(Exception):
    """A port or an endpoint `assay dev` cannot use; the message is one line."""


def check_port_free(port: int, flag: str) -> None:
    """Refuse a port of 127.0.0.1 that something already listens on (`flag` names the option
    that chooses another). Port 0 (any free port) always passes.

    Raises:
        ProbeError: the port is in use, or may not be opened by this user.
    """
    if port == 0:
        return
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # As the servers bind (http.server sets SO_REUSEADDR): a port whose last connections of an
    # earlier run are in TIME_WAIT is free for them, and for this probe.
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        probe.bind(("127.0.0.1", port))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise ProbeError(
                f"port {port} on 127.0.0.1 is in use (another assay dev?): stop what holds it, "
                f"or choose another with {flag}"
            ) from None
        raise ProbeError(f"cannot listen on port {port} of 127.0.0.1 ({exc.strerror})") from None
    finally:
        probe.close()


def check_endpoint(url: str, *, named: str, hint: str, timeout_s: float = 3.0) -> None:
    """Refuse an AWS endpoint that does not answer: a TCP connection to its host and port.

    Args:
        url: the endpoint, e.g. `http://127.0.0.1:4566`.
        named: how the user gave it, shown in the message (`AWS_ENDPOINT_URL=...`,
            `--localstack`).
        hint: what to do about it, ending the message.
        timeout_s: how long a connection may take, in seconds.

    Raises:
        ProbeError: not an http(s) URL with a host, a host that does not resolve, or nothing
            accepting connections there.
    """
    parts = urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        port = None
    if parts.scheme not in ("http", "https") or not parts.hostname or port is None:
        raise ProbeError(f"{named} is not an http(s) URL with a host ({url!r}); {hint}")
    try:
        socket.create_connection((parts.hostname, port), timeout=timeout_s).close()
    except socket.gaierror:
        raise ProbeError(
            f"{named} does not answer: {parts.hostname} does not resolve; {hint}"
        ) from None
    except TimeoutError:
        raise ProbeError(
            f"{named} does not answer (no connection within {timeout_s:g} s); {hint}"
        ) from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ProbeError(f"{named} does not answer ({reason.lower()}); {hint}") from None


ASSAY_MOTO_PATH = "/_assay/requests"
"""A path only the embedded stack's moto server answers (its request counts,
`assay_local.moto_http.COUNTS_PATH`)."""


def is_assay_moto(url: str, timeout_s: float = 2.0) -> bool:
    """Whether `url` (an endpoint the operator exported) is the moto server of an embedded stack:
    it answers `ASSAY_MOTO_PATH` with a JSON object. LocalStack and AWS do not."""
    import json
    import urllib.request

    try:
        with urllib.request.urlopen(url.rstrip("/") + ASSAY_MOTO_PATH, timeout=timeout_s) as r:
            return isinstance(json.loads(r.read(65536)), dict)
    except (OSError, ValueError):
        return False


def endpoint_hint(from_env: bool, *, own_moto: bool = False, flag: str = "--localstack") -> str:
    """What to do about an endpoint that does not answer, by where it came from (`own_moto`: it
    is the address `assay dev` gives its own moto, exported from an earlier start; `flag`: the
    option that named it)."""
    if from_env:
        earlier = "it is the moto address an earlier assay dev printed; " if own_moto else ""
        return (
            f"{earlier}unset AWS_ENDPOINT_URL to use the embedded stack (`unset "
            f"AWS_ENDPOINT_URL`), or start LocalStack with {LOCALSTACK_UP} (docs/guides/"
            "local-stack.md)"
        )
    return f"start it with {LOCALSTACK_UP}, or leave out {flag} to use the embedded stack"
