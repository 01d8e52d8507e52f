"""Connecting to the checked address keeps TLS on the name: an HTTPS server on 127.0.0.1 with a
certificate for `agent.test` only (a test CA made here), reached as `https://agent.test:<port>`
through a stub resolver.

The client connects to 127.0.0.1 (the address egress checked, never a second lookup), sends SNI
`agent.test`, verifies the certificate against `agent.test`, and sends `Host: agent.test:<port>`.
"""

from __future__ import annotations

import datetime
import json
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from chalicelib.adapters.egress import Egress
from chalicelib.adapters.runtimes.transport import HttpTransport
from chalicelib.errors import ProviderError


def _certificate(tmp: Path) -> tuple[Path, Path, Path]:
    """(CA cert, server cert, server key) files; the server certificate names `agent.test` only."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "assay test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "agent.test")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("agent.test")]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    paths = tmp / "ca.pem", tmp / "cert.pem", tmp / "key.pem"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list[dict[str, Any]] = []

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers["content-length"]))
        Handler.seen.append({"host": self.headers["host"]})
        data = json.dumps({"answer": "over tls"}).encode()
        self.send_response(200)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[int, Path, list[str | None]]]:
    ca, cert, key = _certificate(tmp_path_factory.mktemp("tls"))
    sni: list[str | None] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.sni_callback = lambda sock, name, ctx: sni.append(name)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    yield httpd.server_address[1], ca, sni
    httpd.shutdown()
    httpd.server_close()


def transport(ca: Path, names: dict[str, list[str]]) -> HttpTransport:
    verify = ssl.create_default_context(cafile=str(ca))
    return HttpTransport(
        Egress(lambda: lambda host, port: names[host], lambda: True),
        client_factory=lambda: httpx.Client(verify=verify, trust_env=False),
    )


def test_tls_is_verified_against_the_name_while_connecting_to_the_checked_address(server) -> None:
    port, ca, sni = server
    Handler.seen.clear()
    t = transport(ca, {"agent.test": ["127.0.0.1"]})
    status, body = t.post_json(f"https://agent.test:{port}/ask", {"input": "x"}, {}, 5, "agent")
    assert (status, json.loads(body)) == (200, {"answer": "over tls"})
    assert sni[-1] == "agent.test"
    assert Handler.seen == [{"host": f"agent.test:{port}"}]
    t.close()


def test_a_certificate_for_another_name_is_refused(server) -> None:
    port, ca, _ = server
    t = transport(ca, {"other.test": ["127.0.0.1"]})
    with pytest.raises(ProviderError, match="could not be reached"):
        t.post_json(f"https://other.test:{port}/ask", {"input": "x"}, {}, 5, "agent")
    t.close()
