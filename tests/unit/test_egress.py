"""Egress (docs/reference/security.md): which addresses an agent's or judge's URL may reach, checked
at save, after DNS resolution and on every redirect hop, before any connection.

No test here opens a socket: names resolve through a stub resolver, and the transport's client is an
`httpx.MockTransport` that records what would have been sent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import httpx
import pytest

from chalicelib.adapters.egress import (
    AddressClass,
    Egress,
    EgressRefusedError,
    classify,
    host_problem,
    parse_target,
    refused,
    system_resolver,
)
from chalicelib.adapters.runtimes.transport import HttpTransport
from chalicelib.errors import AgentCrashError, InvalidInputError, ProviderError


class Stub:
    """`{host: [ip, ...]}`; unknown hosts do not resolve. `asked` lists every lookup."""

    def __init__(self, names: Mapping[str, Sequence[str]]) -> None:
        self.names = {k: list(v) for k, v in names.items()}
        self.asked: list[str] = []

    def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        if host not in self.names:
            raise OSError(f"{host} does not resolve")
        return list(self.names[host])


def egress(
    names: Mapping[str, Sequence[str]] | None = None, *, private: bool = False
) -> tuple[Egress, Stub]:
    stub = Stub(names or {})
    return Egress(lambda: stub, lambda: private), stub


# --- classes of addresses ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "cls"),
    [
        ("169.254.169.254", AddressClass.METADATA),
        ("fd00:ec2::254", AddressClass.METADATA),
        ("169.254.170.2", AddressClass.LINK_LOCAL),  # the ECS task-metadata endpoint
        ("169.254.0.1", AddressClass.LINK_LOCAL),
        ("fe80::1", AddressClass.LINK_LOCAL),
        ("fe80::1%eth0", AddressClass.LINK_LOCAL),
        ("febf::1", AddressClass.LINK_LOCAL),
        ("0.0.0.0", AddressClass.UNSPECIFIED),
        ("0.1.2.3", AddressClass.UNSPECIFIED),
        ("::", AddressClass.UNSPECIFIED),
        ("224.0.0.1", AddressClass.MULTICAST),
        ("239.255.255.250", AddressClass.MULTICAST),
        ("ff02::1", AddressClass.MULTICAST),
        ("240.0.0.1", AddressClass.RESERVED),
        ("255.255.255.255", AddressClass.RESERVED),
        ("192.0.2.10", AddressClass.RESERVED),
        ("198.18.0.1", AddressClass.RESERVED),
        ("2001:db8::1", AddressClass.RESERVED),
        ("100::1", AddressClass.RESERVED),
        ("127.0.0.1", AddressClass.LOOPBACK),
        ("127.255.0.9", AddressClass.LOOPBACK),
        ("::1", AddressClass.LOOPBACK),
        ("10.1.2.3", AddressClass.PRIVATE),
        ("172.16.0.1", AddressClass.PRIVATE),
        ("172.31.255.255", AddressClass.PRIVATE),
        ("192.168.1.1", AddressClass.PRIVATE),
        ("100.64.0.1", AddressClass.PRIVATE),
        ("fc00::1", AddressClass.PRIVATE),
        ("fd12:3456::1", AddressClass.PRIVATE),
        ("8.8.8.8", AddressClass.PUBLIC),
        ("172.32.0.1", AddressClass.PUBLIC),
        ("2606:4700::1111", AddressClass.PUBLIC),
    ],
)
def test_each_address_has_its_class(address: str, cls: AddressClass) -> None:
    assert classify(address) is cls


@pytest.mark.parametrize(
    ("address", "cls"),
    [
        ("::ffff:169.254.169.254", AddressClass.METADATA),  # IPv4-mapped
        ("::ffff:a9fe:a9fe", AddressClass.METADATA),  # the same, in hex
        ("::ffff:0:169.254.169.254", AddressClass.METADATA),  # IPv4-translated
        ("::169.254.169.254", AddressClass.METADATA),  # IPv4-compatible
        ("64:ff9b::169.254.169.254", AddressClass.METADATA),  # NAT64
        ("64:ff9b:1::a9fe:a9fe", AddressClass.METADATA),  # local-use NAT64
        ("2002:a9fe:a9fe::", AddressClass.METADATA),  # 6to4
        ("::ffff:127.0.0.1", AddressClass.LOOPBACK),
        ("::ffff:10.0.0.1", AddressClass.PRIVATE),
        ("64:ff9b::10.0.0.1", AddressClass.PRIVATE),
        ("2002:0a00:0001::", AddressClass.PRIVATE),
        ("::ffff:0.0.0.0", AddressClass.UNSPECIFIED),
        ("::ffff:8.8.8.8", AddressClass.PUBLIC),
    ],
)
def test_an_ipv6_form_of_an_ipv4_address_has_that_address_class(
    address: str, cls: AddressClass
) -> None:
    assert classify(address) is cls


def test_only_loopback_and_private_are_allowed_by_the_operator() -> None:
    for cls in AddressClass:
        expected_refused_when_allowed = cls not in (
            AddressClass.LOOPBACK,
            AddressClass.PRIVATE,
            AddressClass.PUBLIC,
        )
        assert refused(cls, allow_private=True) is expected_refused_when_allowed
        assert refused(cls, allow_private=False) is (cls is not AddressClass.PUBLIC)


def test_the_system_resolver_answers_ip_strings() -> None:
    assert system_resolver("127.0.0.1", 80) == ["127.0.0.1"]  # a literal: no lookup is sent


# --- URLs ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("ftp://agent.test/", "http:// or https://"),
        ("file:///etc/passwd", "http:// or https://"),
        ("http://user:pw@agent.test/", "user name or password"),
        ("http://token@agent.test/", "user name or password"),
        ("http:///nohost", "name a host"),
        ("http://agent.test:0/", "out of range"),
        ("http://0x7f.1/", "denotes 127.0.0.1"),
        ("http://2130706433/", "denotes 127.0.0.1"),
        ("http://127.1/", "denotes 127.0.0.1"),
        ("http://0xa9.0xfe.0xa9.0xfe/", "denotes 169.254.169.254, a cloud metadata address"),
        ("http://2852039166/", "denotes 169.254.169.254"),
        ("http://1.2.3.4.5/", "non-standard form"),
        ("http://%31%36%39.254.169.254/", "percent-encoded"),
        ("http://169%2e254%2e169%2e254/", "percent-encoded"),
        ("http://169.254.169.254%00.x/", "percent-encoded"),
        ("http://agent%2etest/", "percent-encoded"),
        ("http://agent .test/", "percent-encoded"),  # a space arrives as %20
        ("http://a..test/", "empty label"),
        ("http://.agent.test/", "empty label"),
        ("http://agent.test../", "empty label"),
        ("http://agent;x.test/", "holds ';'"),
        ("http://agent\\x.test/", "which no hostname holds"),
        ("http://-agent.test/", "starts or ends with '-'"),
        ("http://agent-.test/", "starts or ends with '-'"),
        (f"http://{'a' * 64}.test/", "longer than 63"),
        (f"http://{'a.' * 127}test/", "longer than the 253"),
    ],
)
def test_urls_the_service_does_not_follow_are_refused(url: str, words: str) -> None:
    with pytest.raises(ValueError, match=words.replace(".", r"\.").replace("/", "/")):
        parse_target(url)


def test_a_target_keeps_the_name_and_knows_a_literal() -> None:
    named = parse_target("https://Agent.Test./v1")
    assert (named.host, named.port, named.literal, named.is_https) == (
        "agent.test",
        443,
        None,
        True,
    )
    literal = parse_target("http://[::ffff:169.254.169.254]:8080/x")
    assert str(literal.literal) == "::ffff:a9fe:a9fe" and literal.port == 8080
    assert parse_target("http://bücher.test/").host == "xn--bcher-kva.test"


@pytest.mark.parametrize(
    "host",
    ["agent.test", "my_service", "a", "a-b.c-d.test", "xn--bcher-kva.test", f"{'a' * 63}.test"],
)
def test_a_valid_hostname_has_no_problem(host: str) -> None:
    assert host_problem(host) is None
    assert parse_target(f"http://{host}:8080/").host == host


@pytest.mark.parametrize("url", ["http://169.254.169.254%00.x/", "http://%31%36%39.254.169.254/"])
def test_a_host_that_is_no_hostname_is_a_400_at_save_before_any_lookup(url: str) -> None:
    asked: list[str] = []

    def resolver(host: str, port: int) -> list[str]:
        asked.append(host)
        return ["93.184.216.34"]

    with pytest.raises(InvalidInputError) as refused:
        Egress(lambda: resolver).check(url, "url")
    assert refused.value.field == "url"
    assert "is not a valid hostname or IP address" in refused.value.message
    assert asked == []


# --- at save -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "cls"),
    [
        ("http://169.254.169.254/latest/meta-data/", "cloud metadata address"),
        ("http://[fd00:ec2::254]/latest/", "cloud metadata address"),
        ("http://[::ffff:169.254.169.254]/", "cloud metadata address"),
        ("http://[64:ff9b::a9fe:a9fe]/", "cloud metadata address"),
        ("http://169.254.10.10/", "link-local address"),
        ("http://[fe80::1]/", "link-local address"),
        ("http://0.0.0.0:8080/", "unspecified address"),
        ("http://[::]/", "unspecified address"),
        ("http://224.0.0.1/", "multicast address"),
        ("http://255.255.255.255/", "reserved address"),
    ],
)
def test_a_literal_refused_address_is_a_400_even_with_private_networks_allowed(
    url: str, cls: str
) -> None:
    policy, stub = egress(private=True)
    with pytest.raises(InvalidInputError) as info:
        policy.check(url, "spec.url")
    assert info.value.field == "spec.url"
    assert cls in info.value.message
    assert stub.asked == []


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/",
        "http://[::1]/",
        "http://10.0.0.5/",
        "http://192.168.0.10/",
        "http://172.20.0.1/",
        "http://100.64.1.1/",
        "http://[fd12::1]/",
        "http://localhost:8000/",
        "http://agent.localhost/",
        "http://[::ffff:127.0.0.1]/",
    ],
)
def test_loopback_and_private_addresses_need_the_operator(url: str) -> None:
    policy, _ = egress(private=False)
    with pytest.raises(InvalidInputError) as info:
        policy.check(url, "spec.base_url")
    assert info.value.field == "spec.base_url"
    assert "ASSAY_ALLOW_PRIVATE_NETWORK" in info.value.message
    allowed, _ = egress(private=True)
    allowed.check(url, "spec.base_url")


@pytest.mark.parametrize(
    ("address", "cls"),
    [
        ("169.254.169.254", "cloud metadata address"),
        ("fd00:ec2::254", "cloud metadata address"),
        ("::ffff:169.254.169.254", "cloud metadata address"),
        ("169.254.1.1", "link-local address"),
        ("0.0.0.0", "unspecified address"),
    ],
)
def test_a_name_resolving_to_a_refused_address_is_a_400_naming_the_class(
    address: str, cls: str
) -> None:
    policy, stub = egress({"agent.test": ["127.0.0.1", address]}, private=True)
    with pytest.raises(InvalidInputError) as info:
        policy.check("https://agent.test/v1", "settings.base_url")
    assert info.value.field == "settings.base_url"
    assert f"agent.test resolves to a{'n' if cls[0] in 'aeiou' else ''} {cls}" in info.value.message
    assert address not in info.value.message  # what an internal name resolves to is not told
    assert stub.asked == ["agent.test"]


def test_a_name_resolving_to_a_private_address_needs_the_operator() -> None:
    policy, _ = egress({"intranet.test": ["10.0.0.7"]}, private=False)
    with pytest.raises(InvalidInputError, match="private address"):
        policy.check("http://intranet.test/", "spec.url")
    allowed, _ = egress({"intranet.test": ["10.0.0.7"]}, private=True)
    allowed.check("http://intranet.test/", "spec.url")


def test_a_name_that_does_not_resolve_yet_is_accepted_and_checked_when_asked() -> None:
    policy, stub = egress({}, private=False)
    policy.check("https://not-yet.test/", "spec.url")
    assert stub.asked == ["not-yet.test"]
    stub.names["not-yet.test"] = ["169.254.169.254"]
    with pytest.raises(EgressRefusedError):
        policy.addresses(parse_target("https://not-yet.test/"), "agent")


def test_a_public_name_is_accepted() -> None:
    policy, _ = egress({"api.test": ["8.8.8.8", "2606:4700::1111"]})
    policy.check("https://api.test/v1", "spec.base_url")


# --- when asked ----------------------------------------------------------------------------------


def test_every_address_a_name_resolves_to_is_checked_when_asked() -> None:
    policy, stub = egress({"agent.test": ["127.0.0.1", "169.254.169.254"]}, private=True)
    with pytest.raises(EgressRefusedError) as info:
        policy.addresses(parse_target("http://agent.test/"), "agent http://agent.test/")
    assert info.value.address_class is AddressClass.METADATA
    assert isinstance(info.value, AgentCrashError)  # the attempt fails; never retried
    assert "egress refused" in str(info.value) and "cloud metadata address" in str(info.value)


def test_the_operator_setting_and_the_resolver_are_read_when_asked() -> None:
    names: dict[str, list[str]] = {"agent.test": ["127.0.0.1"]}
    private = [True]
    policy = Egress(lambda: Stub(names), lambda: private[0])
    target = parse_target("http://agent.test/")
    assert policy.addresses(target, "agent") == ["127.0.0.1"]
    private[0] = False
    with pytest.raises(EgressRefusedError, match="loopback address"):
        policy.addresses(target, "agent")
    private[0] = True
    names["agent.test"] = [
        "169.254.169.254"
    ]  # DNS rebinding: the name now points at the metadata service
    with pytest.raises(EgressRefusedError, match="cloud metadata address"):
        policy.addresses(target, "agent")


def test_a_name_that_does_not_resolve_when_asked_is_a_provider_error() -> None:
    policy, _ = egress({})
    with pytest.raises(ProviderError, match="could not be resolved") as info:
        policy.addresses(parse_target("http://gone.test/"), "agent")
    assert info.value.status is None


# --- the transport: connect to the checked address, follow redirects hop by hop -------------------


class Recorder:
    """An `httpx.MockTransport` handler: scripted replies by (host header, path); records every
    request."""

    def __init__(self, replies: dict[tuple[str, str], httpx.Response]) -> None:
        self.replies, self.sent = replies, []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(request)
        reply = self.replies.get((request.headers["host"], request.url.path))
        return reply if reply is not None else httpx.Response(200, json={"answer": "ok"})


def transport(
    names: Mapping[str, Sequence[str]],
    replies: dict[tuple[str, str], httpx.Response],
    *,
    private: bool = True,
) -> tuple[HttpTransport, Recorder, Stub]:
    recorder = Recorder(replies)
    policy, stub = egress(names, private=private)
    return (
        HttpTransport(
            policy, client_factory=lambda: httpx.Client(transport=httpx.MockTransport(recorder))
        ),
        recorder,
        stub,
    )


def post(
    t: HttpTransport, url: str, headers: dict[str, str] | None = None, **kw: Any
) -> tuple[int, bytes]:
    return t.post_json(url, {"input": "2+2"}, headers or {}, 5, f"agent {url}", **kw)


def test_the_request_goes_to_the_checked_address_with_the_name_kept() -> None:
    t, recorder, stub = transport({"agent.test": ["127.0.0.7"]}, {})
    assert post(t, "https://agent.test:8443/ask")[0] == 200
    [sent] = recorder.sent
    assert str(sent.url) == "https://127.0.0.7:8443/ask"
    assert sent.headers["host"] == "agent.test:8443"
    assert sent.extensions["sni_hostname"] == "agent.test"  # TLS SNI and verification on the name
    assert stub.asked == ["agent.test"]  # resolved once


def test_an_http_url_or_a_literal_address_sends_no_sni() -> None:
    t, recorder, _ = transport({"agent.test": ["127.0.0.7"]}, {})
    post(t, "http://agent.test/ask")
    post(t, "https://127.0.0.8/ask")
    assert ["sni_hostname" in s.extensions for s in recorder.sent] == [False, False]
    assert recorder.sent[1].headers["host"] == "127.0.0.8"


def test_each_name_gets_its_own_client() -> None:
    t, _, _ = transport({"a.test": ["127.0.0.7"], "b.test": ["127.0.0.7"]}, {})
    post(t, "https://a.test/")
    post(t, "https://b.test/")
    post(t, "https://a.test/other")
    assert len(t._clients) == 2


def test_a_refused_address_is_never_sent_anything() -> None:
    t, recorder, _ = transport({"meta.test": ["169.254.169.254"]}, {})
    with pytest.raises(EgressRefusedError, match="cloud metadata address"):
        post(t, "http://meta.test/latest/meta-data/")
    with pytest.raises(EgressRefusedError):
        post(t, "http://[fd00:ec2::254]/latest/")
    assert recorder.sent == []


def redirect(status: int, location: str) -> httpx.Response:
    return httpx.Response(status, headers={"location": location})


@pytest.mark.parametrize(
    "location",
    [
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
        "http://[::ffff:169.254.169.254]/",
        "http://meta.test/",
        "http://0xa9fea9fe/",
        "http://[fe80::1]/",
    ],
)
def test_a_redirect_to_a_refused_address_is_refused_before_it_is_followed(location: str) -> None:
    t, recorder, _ = transport(
        {"agent.test": ["127.0.0.1"], "meta.test": ["169.254.169.254"]},
        {("agent.test", "/ask"): redirect(307, location)},
    )
    with pytest.raises(AgentCrashError) as info:
        post(t, "http://agent.test/ask")
    assert [str(s.url) for s in recorder.sent] == ["http://127.0.0.1/ask"]  # only the first hop
    assert "refused" in str(info.value) or "not followed" in str(info.value)


def test_a_redirect_to_loopback_is_refused_when_private_networks_are_not_allowed() -> None:
    t, recorder, _ = transport(
        {"agent.test": ["8.8.8.8"]},
        {("agent.test", "/ask"): redirect(302, "http://127.0.0.1:9000/admin")},
        private=False,
    )
    with pytest.raises(EgressRefusedError, match="loopback address"):
        post(t, "http://agent.test/ask")
    assert len(recorder.sent) == 1


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_redirects_re_post_the_same_body(status: int) -> None:
    t, recorder, _ = transport(
        {"agent.test": ["127.0.0.1"]}, {("agent.test", "/ask"): redirect(status, "/v2/ask")}
    )
    status, body = post(t, "http://agent.test/ask")
    assert (status, json.loads(body)) == (200, {"answer": "ok"})
    assert [(s.method, s.url.path, json.loads(s.content)) for s in recorder.sent] == [
        ("POST", "/ask", {"input": "2+2"}),
        ("POST", "/v2/ask", {"input": "2+2"}),
    ]


def test_other_redirects_are_answers_not_followed() -> None:
    t, recorder, _ = transport(
        {"agent.test": ["127.0.0.1"]}, {("agent.test", "/ask"): redirect(303, "/elsewhere")}
    )
    assert post(t, "http://agent.test/ask")[0] == 303
    assert len(recorder.sent) == 1


def test_at_most_five_redirects_are_followed() -> None:
    replies = {("agent.test", f"/{i}"): redirect(307, f"/{i + 1}") for i in range(6)}
    t, recorder, _ = transport({"agent.test": ["127.0.0.1"]}, replies)
    with pytest.raises(AgentCrashError, match="more than 5"):
        post(t, "http://agent.test/0")
    assert len(recorder.sent) == 6
    t, recorder, _ = transport(
        {"agent.test": ["127.0.0.1"]}, {k: v for k, v in replies.items() if k[1] != "/5"}
    )
    assert post(t, "http://agent.test/0")[0] == 200
    assert recorder.sent[-1].url.path == "/5"


def test_a_redirect_to_another_origin_drops_the_credentials() -> None:
    t, recorder, _ = transport(
        {"agent.test": ["127.0.0.1"], "other.test": ["127.0.0.2"]},
        {
            ("agent.test", "/ask"): redirect(307, "/same-origin"),
            ("agent.test", "/same-origin"): redirect(308, "http://other.test/ask"),
            ("other.test", "/ask"): redirect(307, "http://agent.test/back"),
        },
    )
    headers = {
        "Authorization": "Bearer s3cret-value",
        "X-Gateway-Key": "gw-secret",
        "X-Team": "evals",
        "Cookie": "session=1",
    }
    post(t, "http://agent.test/ask", headers, secret_headers=frozenset({"x-gateway-key"}))
    seen = [
        (
            s.headers["host"],
            s.url.path,
            "authorization" in s.headers,
            "x-gateway-key" in s.headers,
            "cookie" in s.headers,
            s.headers.get("x-team"),
        )
        for s in recorder.sent
    ]
    assert seen == [
        ("agent.test", "/ask", True, True, True, "evals"),
        ("agent.test", "/same-origin", True, True, True, "evals"),  # same origin: kept
        ("other.test", "/ask", False, False, False, "evals"),  # another origin: dropped
        ("agent.test", "/back", False, False, False, "evals"),  # and never put back
    ]


def test_a_redirect_to_another_port_or_scheme_is_another_origin() -> None:
    t, recorder, _ = transport(
        {"agent.test": ["127.0.0.1"]},
        {
            ("agent.test", "/ask"): redirect(307, "http://agent.test:8080/ask"),
        },
    )
    post(t, "http://agent.test/ask", {"Authorization": "Bearer x"})
    assert ["authorization" in s.headers for s in recorder.sent] == [True, False]


@pytest.mark.parametrize(
    "location", ["ftp://agent.test/x", "http://user:pw@agent.test/x", "file:///etc/passwd"]
)
def test_a_redirect_to_a_url_that_is_not_followed_fails_the_attempt(location: str) -> None:
    t, recorder, _ = transport(
        {"agent.test": ["127.0.0.1"]}, {("agent.test", "/ask"): redirect(302, location)}
    )
    with pytest.raises(AgentCrashError, match="not followed"):
        post(t, "http://agent.test/ask")
    assert len(recorder.sent) == 1
