"""Who may call, and what the API says when it refuses (issue 9 scope 5 and 8), through HTTP on the
embedded stack.

Attacks and what they now get:
- a token with `alg: none`, or signed with another algorithm: 401 naming the algorithm;
- a token without `exp`, expired, not valid yet, from another issuer or for another audience: 401
  saying which claim;
- a token naming an organization id with `#` or `/` (key and secret-name separators), `..` (a path
  step in S3 keys), or too long: 401;
- an HS256 token - even one signed with the built-in secret - when the operator takes only an
  identity provider's tokens: 401; that provider's RS256 token from its JWKS (served here on
  127.0.0.1): 200, as the organization its claim names;
- a deployed stage (`AWS_LAMBDA_FUNCTION_NAME`) with the built-in signing secret: the app refuses
  to import (cold start), naming `ASSAY_JWT_SECRET`;
- a body nested past 24 levels (or deep enough to exhaust the parser's stack), or such a cursor:
  400 naming `body` / `cursor`, never a 500;
- an unknown route: 404, a wrong method: 405, both `{"error": {"code", "message"}}` - and no
  refusal ever repeats the bearer token it was sent.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from chalicelib.api.common import issue_token
from chalicelib.config import DEV_JWT_SECRET

ROOT = Path(__file__).resolve().parents[2]
NOW = int(time.time())


def refused(stack, token: str, status: int = 401, path: str = "/api/v1/agents") -> dict[str, Any]:
    """The error of a request with `token`, checked: its status, shape, and no echo of the token."""
    r = httpx.get(
        f"{stack.api_url}{path}", headers={"Authorization": f"Bearer {token}"}, timeout=30
    )
    assert r.status_code == status, (r.status_code, r.text)
    body = r.json()
    assert set(body) == {"error"} and body["error"]["code"] and body["error"]["message"], body
    assert token not in r.text and token[-20:] not in r.text, r.text
    return body["error"]


def claims(stack, **over: Any) -> dict[str, Any]:
    s = stack.settings
    now = int(time.time())
    base = {
        "sub": "mallory",
        "org": f"org_{uuid.uuid4().hex[:8]}",
        "iss": s.assay_jwt_issuer,
        "aud": s.assay_jwt_audience,
        "iat": now,
        "exp": now + 600,
    }
    return {k: v for k, v in {**base, **over}.items() if v is not None}


def hs256(stack, **over: Any) -> str:
    return jwt.encode(claims(stack, **over), stack.settings.assay_jwt_secret, algorithm="HS256")


# --- tokens ------------------------------------------------------------------------------------


def test_a_token_with_alg_none_or_another_algorithm_is_refused(stack):
    unsigned = jwt.encode(claims(stack), None, algorithm="none")
    assert "'none' is not accepted" in refused(stack, unsigned)["message"]
    hs512 = jwt.encode(claims(stack), stack.settings.assay_jwt_secret + "x" * 30, algorithm="HS512")
    assert "'HS512' is not accepted" in refused(stack, hs512)["message"]
    # A none token carrying a valid HS256 signature's shape is still refused: alg decides, first.
    header, payload, _ = hs256(stack).split(".")
    none_header = jwt.utils.base64url_encode(
        json.dumps({"alg": "none", "typ": "JWT"}).encode()
    ).decode()
    assert "not accepted" in refused(stack, f"{none_header}.{payload}.")["message"]
    assert header != none_header


@pytest.mark.parametrize(
    ("over", "why"),
    [
        ({"exp": None}, "no exp claim"),
        ({"exp": NOW - 86400, "iat": NOW - 90000}, "expired"),
        ({"nbf": NOW + 86400}, "not valid yet"),
        ({"iss": "someone-else"}, "issuer (iss)"),
        ({"iss": None}, "no iss claim"),
        ({"aud": "another-service"}, "audience (aud)"),
        ({"aud": None}, "no aud claim"),
        ({"sub": None}, "no sub claim"),
    ],
    ids=[
        "no-exp",
        "expired",
        "not-yet-valid",
        "wrong-iss",
        "no-iss",
        "wrong-aud",
        "no-aud",
        "no-sub",
    ],
)
def test_a_token_missing_or_failing_a_required_claim_is_refused_saying_which(stack, over, why):
    error = refused(stack, hs256(stack, **over))
    assert error["code"] == "unauthenticated" and error["field"] == "Authorization"
    assert why in error["message"], error


@pytest.mark.parametrize(
    "org",
    [
        "org#other",
        "org/other",
        "#agent-ids",
        ".hidden",
        "-dash",
        "x" * 101,
        "",
        "a..b",
        "org..",
        "org\n",
    ],
)
def test_a_token_naming_a_malformed_organization_id_is_refused(stack, org):
    assert "organization" in refused(stack, hs256(stack, org=org))["message"]


def test_issued_tokens_expire_after_the_configured_ttl_and_work_until_then(stack, new_api):
    s = stack.settings
    token = issue_token("org_ttl", "alice", secret=s.assay_jwt_secret, issuer=s.assay_jwt_issuer)
    decoded = jwt.decode(
        token, s.assay_jwt_secret, algorithms=["HS256"], audience=s.assay_jwt_audience
    )
    assert decoded["exp"] - decoded["iat"] == s.assay_token_ttl_seconds == 8 * 3600
    assert new_api(org_id="org_ttl", token=token).ok("GET", "/api/v1/agents") == {"agents": []}
    old = issue_token(
        "org_ttl",
        "alice",
        secret=s.assay_jwt_secret,
        issuer=s.assay_jwt_issuer,
        ttl_seconds=60,
        now_s=int(time.time()) - 3600,
    )
    assert "expired" in refused(stack, old)["message"]
    # An organization id with '@' and '.' is fine (e.g. a domain).
    assert new_api(org_id="acme.example@eu-1").ok("GET", "/api/v1/agents") == {"agents": []}


def test_assay_token_signs_for_the_ttl_asked(stack):
    out = subprocess.run(
        [sys.executable, "-m", "assay_local.cli", "token", "--org", "org_cli", "--ttl", "30m"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.strip()
    decoded = jwt.decode(out, options={"verify_signature": False})
    assert (
        decoded["org"] == "org_cli"
        and decoded["exp"] - decoded["iat"] == 1800
        and decoded["aud"] == "assay"
    )
    bad = subprocess.run(
        [sys.executable, "-m", "assay_local.cli", "token", "--org", "a#b"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode != 0 and "organization id" in bad.stderr


# --- an identity provider (OIDC) ---------------------------------------------------------------


class JwksServer:
    """A JWKS endpoint on 127.0.0.1 holding the public halves of keys made in the test."""

    def __init__(self, keys: list[dict[str, Any]]) -> None:
        self.keys, self.hits = keys, 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - stdlib's name
                server.hits += 1
                body = json.dumps({"keys": server.keys}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/.well-known/jwks.json"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


def public_jwk(key: Any, kid: str, alg: str) -> dict[str, Any]:
    algo = jwt.algorithms.RSAAlgorithm if alg == "RS256" else jwt.algorithms.ECAlgorithm
    return {**json.loads(algo.to_jwk(key.public_key())), "kid": kid, "alg": alg, "use": "sig"}


@pytest.fixture
def idp(operator) -> Iterator[dict[str, Any]]:
    """An identity provider (RSA and EC keys, JWKS on 127.0.0.1) the operator configures, HS256
    off."""
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    server = JwksServer(
        [public_jwk(rsa_key, "rsa-1", "RS256"), public_jwk(ec_key, "ec-1", "ES256")]
    )
    operator(
        assay_jwt_secret="",
        assay_oidc_jwks_url=server.url,
        assay_oidc_issuer="https://idp.test/",
        assay_oidc_audience="assay-api",
        assay_oidc_org_claim="tenant",
    )
    try:
        yield {"rsa": rsa_key, "ec": ec_key, "server": server}
    finally:
        server.close()


def idp_token(key: Any, alg: str, kid: str, **over: Any) -> str:
    now = int(time.time())
    body = {
        "sub": "bob@acme.test",
        "tenant": f"acme_{uuid.uuid4().hex[:8]}",
        "iss": "https://idp.test/",
        "aud": "assay-api",
        "iat": now,
        "exp": now + 600,
        **over,
    }
    return jwt.encode(
        {k: v for k, v in body.items() if v is not None}, key, algorithm=alg, headers={"kid": kid}
    )


def test_an_identity_provider_s_rs256_and_es256_tokens_are_verified_through_its_jwks(
    stack, idp, new_api
):
    for key, alg, kid in ((idp["rsa"], "RS256", "rsa-1"), (idp["ec"], "ES256", "ec-1")):
        token = idp_token(key, alg, kid, tenant="acme_corp")
        api = new_api(org_id="acme_corp", user_id="bob@acme.test", token=token)
        assert api.ok("GET", "/api/v1/agents") == {"agents": []}
    api.ok("POST", "/api/v1/datasets", json={"name": "from-the-idp"})
    assert [d["name"] for d in api.ok("GET", "/api/v1/datasets")["datasets"]] == ["from-the-idp"]
    assert idp["server"].hits >= 1


def test_with_only_an_identity_provider_hs256_and_its_forgeries_are_refused(stack, idp):
    built_in = jwt.encode(claims(stack), DEV_JWT_SECRET, algorithm="HS256")
    assert "HS256 tokens are not accepted" in refused(stack, built_in)["message"]
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    assert "signature" in refused(stack, idp_token(stranger, "RS256", "rsa-1"))["message"]
    assert "kid" in refused(stack, idp_token(stranger, "RS256", "someone-elses-key"))["message"]
    assert (
        "no exp claim"
        in refused(stack, idp_token(idp["rsa"], "RS256", "rsa-1", exp=None))["message"]
    )
    assert (
        "audience"
        in refused(stack, idp_token(idp["rsa"], "RS256", "rsa-1", aud="assay"))["message"]
    )
    assert (
        "issuer" in refused(stack, idp_token(idp["rsa"], "RS256", "rsa-1", iss="assay"))["message"]
    )
    assert (
        "organization"
        in refused(stack, idp_token(idp["rsa"], "RS256", "rsa-1", tenant="a/b"))["message"]
    )
    assert (
        "organization"
        in refused(stack, idp_token(idp["ec"], "ES256", "ec-1", tenant=None))["message"]
    )


# --- a deployed stage's cold start -------------------------------------------------------------


def _import_app(**env: str | None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "AWS_LAMBDA"))}
    environ.update({k: v for k, v in env.items() if v is not None})
    return subprocess.run(
        [sys.executable, "-c", "import app"],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_deployed_stage_with_the_built_in_secret_refuses_to_start():
    cold = _import_app(AWS_LAMBDA_FUNCTION_NAME="assay-dev")
    assert cold.returncode != 0
    assert "ConfigurationError" in cold.stderr and "ASSAY_JWT_SECRET" in cold.stderr
    assert "built-in development secret" in cold.stderr
    assert (
        "ASSAY_JWT_SECRET"
        in _import_app(AWS_LAMBDA_FUNCTION_NAME="assay-dev", ASSAY_JWT_SECRET="too-short").stderr
    )
    # A real secret starts; so does an identity provider alone; and a local process, built-in secret
    # and all.
    assert (
        _import_app(AWS_LAMBDA_FUNCTION_NAME="assay-dev", ASSAY_JWT_SECRET="s" * 40).returncode == 0
    )
    assert (
        _import_app(
            AWS_LAMBDA_FUNCTION_NAME="assay-dev",
            ASSAY_JWT_SECRET="",
            ASSAY_OIDC_JWKS_URL="https://idp.test/jwks.json",
            ASSAY_OIDC_ISSUER="https://idp.test/",
            ASSAY_OIDC_AUDIENCE="assay-api",
        ).returncode
        == 0
    )
    assert _import_app().returncode == 0


# --- bodies built to exhaust the parser ---------------------------------------------------------


@pytest.mark.parametrize("depth", [25, 100_000])
@pytest.mark.parametrize("path", ["/api/v1/agents", "/api/v1/datasets", "/api/v1/recordings"])
def test_a_body_nested_too_deeply_is_a_400_naming_the_body(api, path, depth):
    nested = '{"a": ' * depth + "1" + "}" * depth
    for body in (nested, f'{{"agent_id": "a", "spec": {nested}}}'):
        status, error = api.call(
            "POST", path, content=body.encode(), headers={"Content-Type": "application/json"}
        )
        assert status == 400, (status, error)
        assert (
            error["error"]["field"] == "body"
            and "nests deeper than 24" in error["error"]["message"]
        )


def test_a_cursor_nested_too_deeply_is_a_400_naming_the_cursor(api):
    cursor = base64.urlsafe_b64encode(("[" * 5000 + "]" * 5000).encode()).decode()
    status, error = api.call("GET", "/api/v1/eval-runs", params={"cursor": cursor})
    assert status == 400 and error["error"]["field"] == "cursor", (status, error)


# --- unknown routes and wrong methods ------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["/api/v1/nope", "/nope", "/api/v2/agents", "/api/v1/agents/a/b/c/d/e/f", "/favicon.png"],
)
def test_an_unknown_route_is_404_in_the_api_shape_and_never_echoes_the_token(api, path):
    token = api.http.headers["Authorization"].split(" ", 1)[1]
    for method in ("GET", "POST", "DELETE"):
        r = api.http.request(method, path)
        assert r.status_code == 404, (method, path, r.status_code, r.text)
        assert r.headers["Content-Type"].startswith("application/json")
        assert r.json() == {
            "error": {
                "code": "not_found",
                "message": "no route matches this path",
                "request_id": r.headers["X-Request-Id"],  # the gateway's id of this request
            }
        }
        assert token not in r.text and "Authorization" not in r.text


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("DELETE", "/api/v1/agents", "GET, POST"),
        ("PATCH", "/api/v1/eval-runs", "GET"),
        ("PUT", "/api/v1/datasets", "GET, POST"),
        ("POST", "/api/v1/secrets", "GET"),
    ],
)
def test_a_wrong_method_is_405_in_the_api_shape_naming_what_the_route_takes(
    api, method, path, allow
):
    token = api.http.headers["Authorization"].split(" ", 1)[1]
    r = api.http.request(method, path, content=b"{}", headers={"Content-Type": "text/plain"})
    assert r.status_code == 405, (r.status_code, r.text)
    assert (
        r.json()["error"]["code"] == "method_not_allowed" and allow in r.json()["error"]["message"]
    )
    assert r.headers["Allow"] == allow and token not in r.text


def test_a_method_no_route_has_is_405_in_the_api_shape(api):
    r = api.http.request("PROPFIND", "/api/v1/agents")
    assert r.status_code == 405 and r.json()["error"]["code"] == "method_not_allowed", r.text
    assert api.http.headers["Authorization"].split(" ", 1)[1] not in r.text


def test_no_refusal_repeats_the_token_it_was_sent(stack):
    for token in (
        "not-a-jwt-but-a-secret-AKIAIOSFODNN7EXAMPLE",
        hs256(stack, exp=None),
        jwt.encode(claims(stack), None, algorithm="none"),
        "a.b.c",
        "x" * 20_000,
    ):
        refused(stack, token)
