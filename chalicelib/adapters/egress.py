"""Egress: which addresses an agent's or a judge's URL may make the service connect to
(docs/reference/security.md).

A tenant writes the URL of its `http` agent or `openai` endpoint; the service then connects from
inside the operator's network, where link-local and cloud-metadata addresses hand out the role's
credentials and loopback and private ranges reach what no tenant should. So every URL is checked
twice:

- when a spec is saved (`Egress.check`): its shape (http/https, no `user:pass@`, a host that is
  a valid hostname or IP address - never percent-encoded or NUL-bearing, `host_problem` - refused
  before any lookup), a literal address, and the addresses a name resolves to right now (a name
  that does not resolve yet is accepted: it is checked again when asked);
- when it is asked (`Egress.addresses`), after DNS resolution and on every redirect hop. The
  caller connects to the checked address itself, never to the name again, so a name that
  resolves to a public address when checked and to a metadata address a moment later (DNS
  rebinding) cannot get through.

Always refused: link-local (169.254.0.0/16, fe80::/10), the metadata addresses (169.254.169.254,
fd00:ec2::254), unspecified (0.0.0.0/8, ::), multicast, reserved and documentation ranges, and
any IPv4-mapped, IPv4-compatible, NAT64, 6to4 or Teredo form of a refused IPv4 address. Loopback
and private ranges (127/8, ::1, 10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7) are refused
unless the operator allows them (`ASSAY_ALLOW_PRIVATE_NETWORK`: `assay dev` and tests only).

The resolver is injected (`Container.resolver`), so tests decide what a name resolves to and no
refused address is ever sent a packet.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

import httpx

from chalicelib.errors import AgentCrashError, InvalidInputError, ProviderError

Resolver = Callable[[str, int], Sequence[str]]
"""`resolver(host, port)` -> the IP addresses (strings) `host` resolves to; raises `OSError` when
it does not resolve."""

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

PRIVATE_NETWORK_SETTING = "ASSAY_ALLOW_PRIVATE_NETWORK"
"""The operator setting that allows loopback and private ranges
(`Settings.assay_allow_private_network`)."""


def system_resolver(host: str, port: int) -> list[str]:
    """The container's resolver: `socket.getaddrinfo` (TCP), each address once, in its order.

    Raises:
        OSError: (`socket.gaierror`) the name does not resolve.
    """
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class AddressClass(StrEnum):
    """What kind of address a URL leads to; the values are the words the refusals use."""

    METADATA = "cloud metadata address"
    LINK_LOCAL = "link-local address"
    UNSPECIFIED = "unspecified address"
    MULTICAST = "multicast address"
    RESERVED = "reserved address"
    LOOPBACK = "loopback address"
    PRIVATE = "private address"
    PUBLIC = "public address"


ALWAYS_REFUSED = frozenset(
    {
        AddressClass.METADATA,
        AddressClass.LINK_LOCAL,
        AddressClass.UNSPECIFIED,
        AddressClass.MULTICAST,
        AddressClass.RESERVED,
    }
)
"""Classes refused whatever the operator allows."""

PRIVATE_CLASSES = frozenset({AddressClass.LOOPBACK, AddressClass.PRIVATE})
"""Classes refused unless `ASSAY_ALLOW_PRIVATE_NETWORK` is set."""

_METADATA = frozenset(
    {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}
)

_V4_RANGES: tuple[tuple[ipaddress.IPv4Network, AddressClass], ...] = tuple(
    (ipaddress.IPv4Network(net), cls)
    for net, cls in (
        ("0.0.0.0/8", AddressClass.UNSPECIFIED),
        ("169.254.0.0/16", AddressClass.LINK_LOCAL),
        ("224.0.0.0/4", AddressClass.MULTICAST),
        ("240.0.0.0/4", AddressClass.RESERVED),  # with the broadcast address
        ("192.0.0.0/24", AddressClass.RESERVED),  # IETF protocol assignments
        ("192.0.2.0/24", AddressClass.RESERVED),  # documentation
        ("192.88.99.0/24", AddressClass.RESERVED),  # 6to4 relays (deprecated)
        ("198.18.0.0/15", AddressClass.RESERVED),  # benchmarking
        ("198.51.100.0/24", AddressClass.RESERVED),  # documentation
        ("203.0.113.0/24", AddressClass.RESERVED),  # documentation
        ("127.0.0.0/8", AddressClass.LOOPBACK),
        ("10.0.0.0/8", AddressClass.PRIVATE),
        ("172.16.0.0/12", AddressClass.PRIVATE),
        ("192.168.0.0/16", AddressClass.PRIVATE),
        ("100.64.0.0/10", AddressClass.PRIVATE),  # shared address space (carrier NAT)
    )
)

_V6_RANGES: tuple[tuple[ipaddress.IPv6Network, AddressClass], ...] = tuple(
    (ipaddress.IPv6Network(net), cls)
    for net, cls in (
        ("::/128", AddressClass.UNSPECIFIED),
        ("::1/128", AddressClass.LOOPBACK),
        ("fe80::/10", AddressClass.LINK_LOCAL),
        ("ff00::/8", AddressClass.MULTICAST),
        ("fc00::/7", AddressClass.PRIVATE),  # unique local
        ("fec0::/10", AddressClass.PRIVATE),  # site-local (deprecated)
        ("100::/64", AddressClass.RESERVED),  # discard-only
        ("2001::/23", AddressClass.RESERVED),  # IETF protocol assignments
        ("2001:db8::/32", AddressClass.RESERVED),  # documentation
    )
)

_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))
_V4_TRANSLATED = 0xFFFF0000  # ::ffff:0:a.b.c.d (RFC 2765), the top 96 bits shifted down

_SEVERITY = (
    AddressClass.METADATA,
    AddressClass.LINK_LOCAL,
    AddressClass.UNSPECIFIED,
    AddressClass.MULTICAST,
    AddressClass.RESERVED,
    AddressClass.LOOPBACK,
    AddressClass.PRIVATE,
    AddressClass.PUBLIC,
)


def _embedded_v4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries (mapped, translated, compatible, NAT64, 6to4,
    Teredo): connecting to the IPv6 form reaches the IPv4 address."""
    value = int(ip)
    if ip.ipv4_mapped is not None:
        return [ip.ipv4_mapped]
    if value >> 32 == _V4_TRANSLATED or any(ip in net for net in _NAT64):
        return [ipaddress.IPv4Address(value & 0xFFFFFFFF)]
    if ip.sixtofour is not None:
        return [ip.sixtofour]
    if ip.teredo is not None:
        return list(ip.teredo)
    if value >> 32 == 0 and value > 1:  # IPv4-compatible ::a.b.c.d (deprecated)
        return [ipaddress.IPv4Address(value)]
    return []


def classify(ip: IPAddress | str) -> AddressClass:
    """The class of one address (pure); an IPv6 form of an IPv4 address gets that address's class.

    Args:
        ip: an address, or its text (an IPv6 zone such as `%eth0` is ignored).

    Raises:
        ValueError: text that is not an IP address.
    """
    if isinstance(ip, str):
        ip = ipaddress.ip_address(ip.split("%", 1)[0])
    if ip in _METADATA:
        return AddressClass.METADATA
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded_v4(ip)
        if embedded:
            return min((classify(v4) for v4 in embedded), key=_SEVERITY.index)
        ranges: Sequence[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, AddressClass]] = (
            _V6_RANGES
        )
    else:
        ranges = _V4_RANGES
    for net, cls in ranges:
        if ip in net:
            return cls
    return AddressClass.RESERVED if ip.is_reserved else AddressClass.PUBLIC


def refused(cls: AddressClass, allow_private: bool) -> bool:
    """Whether an address of class `cls` is refused (always, or private ones unless allowed)."""
    return cls in ALWAYS_REFUSED or (cls in PRIVATE_CLASSES and not allow_private)


def _a(cls: AddressClass) -> str:
    return f"{'an' if cls[0] in 'aeiou' else 'a'} {cls}"


def _why(cls: AddressClass) -> str:
    if cls in ALWAYS_REFUSED:
        return (
            "this service never connects to link-local, metadata, unspecified, multicast or "
            "reserved addresses"
        )
    return (
        "loopback and private networks are not allowed on this service "
        f"({PRIVATE_NETWORK_SETTING} is off)"
    )


# --- URLs ---------------------------------------------------------------------------------------

_NUMERIC_LABEL = re.compile(r"^(?:0x[0-9a-f]*|[0-9]+)$", re.IGNORECASE)

_HOST_LABEL = re.compile(r"^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$")
"""One label of a hostname as connected to (lower-case ASCII, IDNA already applied): 1-63
letters, digits, `-` and `_`, not starting or ending with `-` (RFC 1123; `_` as service names
and container hosts use it)."""

MAX_HOSTNAME = 253
"""The longest hostname DNS carries, in characters, without its trailing dot."""


def host_problem(host: str) -> str | None:
    """Why `host` (lower-case ASCII, no trailing dot, not an IPv6 literal) is no hostname and no
    IPv4 address, None when it is one (pure; nothing is resolved).

    A host is refused before any lookup when it holds a percent-encoded character (`%31%36%39`,
    `169%2e254...`, a NUL as `%00`, a space as `%20`: the service never decodes a host, and a
    resolver that did would reach what the check never saw), an empty label (`a..b`, `.a`), a
    character no hostname holds, a label over 63 characters or a name over 253.
    """
    if "%" in host:
        return (
            "it holds a percent-encoded character (%xx, such as %00 or %2e): write the host "
            "plainly, as letters, digits, '-', '_' and dots"
        )
    if len(host) > MAX_HOSTNAME:
        return f"it is longer than the {MAX_HOSTNAME} characters a hostname may be"
    for label in host.split("."):
        if not label:
            return "it has an empty label (two dots in a row, or a dot first)"
        if _HOST_LABEL.match(label):
            continue
        if len(label) > 63:
            return "it has a label longer than 63 characters"
        odd = next((ch for ch in label if not (ch.isalnum() or ch in "-_")), None)
        if odd is not None:
            return f"it holds {odd!r}, which no hostname holds (letters, digits, '-', '_', dots)"
        return "a label starts or ends with '-'"
    return None


def _legacy_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """The address a numeric host in a form `inet_aton` accepts denotes (`0x7f.1`, `127.1`,
    `2130706433`, `0177.0.0.1`), None when it denotes none."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    numbers = []
    for part in parts:
        if part[:2].lower() == "0x":
            number = int(part[2:] or "0", 16)
        elif len(part) > 1 and part.startswith("0"):
            if not set(part) <= set("01234567"):
                return None
            number = int(part, 8)
        else:
            number = int(part)
        numbers.append(number)
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (5 - len(numbers)):
        return None
    value = last
    for i, n in enumerate(head):
        value += n << (8 * (3 - i))
    return ipaddress.IPv4Address(value)


@dataclass(frozen=True)
class Target:
    """One URL the service is about to connect to, parsed.

    Attributes:
        url: the URL as given (its host is the name, kept for the Host header and TLS).
        host: the host as connected to: the ASCII (IDNA) name without a trailing dot, or the
            literal address's text.
        port: the port, the scheme's default when the URL names none.
        literal: the address when the host is a literal IP, else None.
    """

    url: httpx.URL
    host: str
    port: int
    literal: IPAddress | None

    @property
    def origin(self) -> tuple[str, str, int]:
        """(scheme, host, port): a redirect to another origin drops credentials."""
        return self.url.scheme, self.host, self.port

    @property
    def is_https(self) -> bool:
        return self.url.scheme == "https"


def parse_target(url: str | httpx.URL) -> Target:
    """Parse a URL the service may connect to.

    Raises:
        ValueError: not an http(s) URL with a host, with `user:pass@`, a bad port, a host that is
            no valid hostname or IP address (`host_problem`: percent-encoded, NUL-bearing, an empty
            label...), or a numeric host written in a non-standard form (the message says which).
    """
    try:
        parsed = url if isinstance(url, httpx.URL) else httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise ValueError(f"not a valid URL ({exc})") from None
    if parsed.scheme not in ("http", "https"):
        raise ValueError("must be an http:// or https:// URL")
    if parsed.userinfo:
        raise ValueError(
            "must not carry a user name or password (user:pass@): store credentials as "
            "secrets and reference them by name"
        )
    raw = parsed.raw_host.decode("ascii").lower()
    if not raw:
        raise ValueError("must name a host")
    port = parsed.port if parsed.port is not None else (443 if parsed.scheme == "https" else 80)
    if not 1 <= port <= 65535:
        raise ValueError(f"port {port} is out of range")
    host = raw[:-1] if raw.endswith(".") else raw  # one trailing dot: a fully qualified name
    literal: IPAddress | None = None
    if ":" in host:
        try:
            literal = ipaddress.IPv6Address(host.split("%", 1)[0])
        except ValueError:
            raise ValueError(f"{host} is not a valid IPv6 address") from None
        return Target(parsed, host, port, literal)
    problem = host_problem(host)
    if problem is not None:
        shown = raw if len(raw) <= 100 else raw[:100] + "..."
        raise ValueError(f"host {shown} is not a valid hostname or IP address: {problem}")
    if all(_NUMERIC_LABEL.match(label) for label in host.split(".")):
        try:
            literal = ipaddress.IPv4Address(host)
        except ValueError:
            denoted = _legacy_ipv4(host)
            shown = (
                f" (it denotes {denoted}, {_a(classify(denoted))})" if denoted is not None else ""
            )
            raise ValueError(
                f"host {host} is a numeric address in a non-standard form{shown}: write an IPv4 "
                "address as four decimal numbers (a.b.c.d)"
            ) from None
    return Target(parsed, host, port, literal)


class EgressRefusedError(AgentCrashError):
    """An agent's or judge's URL led to an address this service does not connect to.

    Raised when asked (after DNS resolution, or on a redirect), before any connection: the
    attempt fails and is not retried. `address_class` names what was refused.
    """

    def __init__(self, message: str, address_class: AddressClass | None = None) -> None:
        super().__init__(message)
        self.address_class = address_class


_LOCALHOST = ("localhost",)


def _is_localhost(host: str) -> bool:
    return host in _LOCALHOST or host.endswith(".localhost")


class Egress:
    """The egress policy, read at call time: what the resolver says and what the operator allows.

    Args:
        resolver: returns the resolver to use now (default: the system resolver).
        allow_private: returns whether loopback and private ranges are allowed now (default: no).
    """

    def __init__(
        self,
        resolver: Callable[[], Resolver] | None = None,
        allow_private: Callable[[], bool] | None = None,
    ) -> None:
        self._resolver = resolver or (lambda: system_resolver)
        self._allow_private = allow_private or (lambda: False)

    def check(self, url: object, field: str) -> None:
        """The check when a spec is saved: the URL's shape, a literal address, and the addresses its
        name resolves to now (a name that does not resolve is accepted: it is checked when asked).

        Raises:
            InvalidInputError: (field `field`) naming the URL field and the address class.
        """
        if not isinstance(url, str):
            raise InvalidInputError(f"{field} must be an http:// or https:// URL", field=field)
        try:
            target = parse_target(url)
        except ValueError as exc:
            raise InvalidInputError(f"{field} {exc}", field=field) from None
        allow = self._allow_private()
        if target.literal is not None or _is_localhost(target.host):
            cls = classify(target.literal) if target.literal is not None else AddressClass.LOOPBACK
            if refused(cls, allow):
                raise InvalidInputError(
                    f"{field}: {target.host} is {_a(cls)}: {_why(cls)}",
                    field=field,
                    address_class=str(cls),
                )
            return
        try:
            found = list(self._resolver()(target.host, target.port))
        except Exception:  # noqa: BLE001 - not resolvable now: checked again when asked
            return
        for cls in self._classes(found):
            if refused(cls, allow):
                raise InvalidInputError(
                    f"{field}: {target.host} resolves to {_a(cls)}: {_why(cls)}",
                    field=field,
                    address_class=str(cls),
                )

    def addresses(self, target: Target, source: str) -> list[str]:
        """The addresses to connect to for `target`, every one checked; resolves the name once.

        Args:
            target: the URL about to be connected to (see `parse_target`).
            source: names the agent or provider in messages.

        Returns:
            Address strings (IPv6 without brackets), in the resolver's order; all allowed.

        Raises:
            EgressRefusedError: the host is, or resolves to, a refused address (any one of them).
            ProviderError: (status None) the name does not resolve.
        """
        allow = self._allow_private()
        if target.literal is not None:
            found = [str(target.literal)]
        elif _is_localhost(target.host):
            found = ["127.0.0.1"]
        else:
            try:
                found = [str(a) for a in self._resolver()(target.host, target.port)]
            except Exception as exc:  # noqa: BLE001 - a resolver failure is a connection failure
                raise ProviderError(
                    f"{source}: {target.host} could not be resolved: {exc}"
                ) from exc
            if not found:
                raise ProviderError(f"{source}: {target.host} could not be resolved")
        shown = "is" if target.literal is not None else "resolves to"
        for cls in self._classes(found):
            if refused(cls, allow):
                raise EgressRefusedError(
                    f"{source}: egress refused: {target.host} {shown} {_a(cls)}: {_why(cls)}", cls
                )
        return [a.split("%", 1)[0] for a in found]

    @staticmethod
    def _classes(found: Sequence[str]) -> list[AddressClass]:
        out = []
        for address in found:
            try:
                out.append(classify(str(address)))
            except ValueError:
                out.append(AddressClass.RESERVED)  # a resolver answer that is no address: refuse it
        return out
