"""Bearer tokens: what is accepted, what is refused and why (adapters.tokens), and the cold-start
refusal of an unsafe deployed stage (bootstrap.check_deployment). No network: the JWKS client is
a fake holding a key made here."""

from __future__ import annotations

import json
import time

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from chalicelib.adapters.tokens import TokenVerifier, issue
from chalicelib.bootstrap import check_deployment, deployment_problems
from chalicelib.config import DEV_JWT_SECRET, Settings
from chalicelib.errors import ConfigurationError, UnauthenticatedError

SECRET = "a-test-secret-of-more-than-thirty-two-characters"
NOW = int(time.time())


def settings(**kw) -> Settings:
    return Settings.model_construct(**{**Settings().model_dump(), "assay_jwt_secret": SECRET, **kw})


def hs256(claims: dict, secret: str = SECRET, headers: dict | None = None) -> str:
    return jwt.encode(claims, secret, algorithm="HS256", headers=headers)


def good(**over) -> dict:
    now = int(time.time())
    return {
        "sub": "alice",
        "org": "org_a",
        "iss": "assay",
        "aud": "assay",
        "iat": now,
        "exp": now + 600,
        **over,
    }


def refusal(verifier: TokenVerifier, token: str) -> str:
    with pytest.raises(UnauthenticatedError) as caught:
        verifier.identify(token)
    assert caught.value.field == "Authorization"
    assert token not in caught.value.message
    return caught.value.message


def test_a_token_issued_here_names_its_organization_and_expires_after_its_ttl():
    now = int(time.time())
    token = issue(
        "org_a",
        "alice",
        secret=SECRET,
        issuer="assay",
        audience="assay",
        ttl_seconds=3600,
        now_s=now,
    )
    claims = jwt.decode(token, SECRET, algorithms=["HS256"], audience="assay")
    assert claims["exp"] - claims["iat"] == 3600 and claims["iat"] == now
    who = TokenVerifier(settings).identify(token)
    # what alice may do is her membership's, resolved per request: the token alone grants nothing
    assert (who.org_id, who.user_id, who.permissions, who.member) == (
        "org_a",
        "alice",
        frozenset(),
        False,
    )
    with pytest.raises(ValueError):
        issue("org_a", "alice", secret="", issuer="assay", audience="assay", ttl_seconds=60)


# The claims are made when the test runs (a collected session can run for many minutes: a token
# made at collection would have expired by then).
@pytest.mark.parametrize(
    ("claims", "why"),
    [
        (lambda: {k: v for k, v in good().items() if k != "exp"}, "no exp claim"),
        (lambda: good(exp=NOW - 86400, iat=NOW - 90000), "expired"),
        (lambda: good(iss="someone-else"), "issuer (iss) is not 'assay'"),
        (lambda: {k: v for k, v in good().items() if k != "iss"}, "no iss claim"),
        (lambda: good(aud="another-service"), "audience (aud) is not 'assay'"),
        (lambda: {k: v for k, v in good().items() if k != "aud"}, "no aud claim"),
        (lambda: good(nbf=NOW + 86400), "not valid yet"),
        (lambda: good(iat=NOW + 86400), "not valid yet"),
        (lambda: good(org="a#b"), "no valid organization"),
        (lambda: good(org="org/other"), "no valid organization"),
        (lambda: good(org="#agent-ids"), "no valid organization"),
        (lambda: good(org="x" * 101), "no valid organization"),
        (lambda: good(org=7), "as strings"),
    ],
)
def test_a_token_lacking_a_required_claim_or_with_a_wrong_one_is_refused_saying_why(claims, why):
    assert why in refusal(TokenVerifier(settings), hs256(claims()))


def test_times_allow_the_configured_leeway():
    verifier = TokenVerifier(lambda: settings(assay_jwt_leeway_seconds=30))
    now = int(time.time())
    assert verifier.identify(hs256(good(exp=now - 10))).org_id == "org_a"
    assert verifier.identify(hs256(good(nbf=now + 10))).org_id == "org_a"
    assert "expired" in refusal(verifier, hs256(good(exp=now - 120)))


def test_a_string_time_pyjwt_would_read_as_a_number_and_an_endless_lifetime_are_refused():
    verifier = TokenVerifier(settings)
    now = int(time.time())
    for claim in ("exp", "iat", "nbf"):
        assert f"token {claim} claim is not a number" in refusal(
            verifier, hs256(good(**{claim: str(now + 60)}))
        )
    for exp in (1e14, 1e300):
        assert "lifetime (exp - iat)" in refusal(verifier, hs256(good(exp=exp)))
    short = TokenVerifier(lambda: settings(assay_jwt_max_lifetime_seconds=3600))
    assert "lifetime" in refusal(short, hs256(good(exp=now + 7200)))
    assert short.identify(hs256(good(exp=now + 1800))).org_id == "org_a"


def test_alg_none_and_every_other_algorithm_are_refused_before_anything_is_checked():
    verifier = TokenVerifier(settings)
    unsigned = jwt.encode(good(), None, algorithm="none")
    assert "'none' is not accepted" in refusal(verifier, unsigned)
    assert "'HS512' is not accepted" in refusal(
        verifier, jwt.encode(good(), SECRET, algorithm="HS512")
    )
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    rs = jwt.encode(good(), rsa_key, algorithm="RS256", headers={"kid": "k1"})
    assert "ASSAY_OIDC_JWKS_URL" in refusal(verifier, rs)
    assert "signature" in refusal(
        verifier, hs256(good(), secret="another-secret-of-thirty-two-chars!!")
    )
    assert "not a JWT" in refusal(verifier, "not-a-jwt")


class FakeJwks:
    """Stands for PyJWKClient: the signing key of a kid, from keys made in the test."""

    def __init__(self, keys: dict[str, object]) -> None:
        self.keys = keys
        self.urls: list[str] = []

    def __call__(self, url: str) -> FakeJwks:
        self.urls.append(url)
        return self

    def get_signing_key(self, kid: str) -> object:
        if kid not in self.keys:
            raise jwt.PyJWKClientError(f'Unable to find a signing key that matches: "{kid}"')
        return jwt.PyJWK.from_dict(self.keys[kid])


def oidc_settings(**kw) -> Settings:
    return settings(
        assay_jwt_secret="",
        assay_oidc_jwks_url="https://idp.test/jwks.json",
        assay_oidc_issuer="https://idp.test/",
        assay_oidc_audience="assay-api",
        assay_oidc_org_claim="tenant",
        **kw,
    )


def _jwk(private_key: object, kid: str, alg: str) -> dict:
    import json

    algo = jwt.algorithms.RSAAlgorithm if alg == "RS256" else jwt.algorithms.ECAlgorithm
    return {
        **json.loads(algo.to_jwk(private_key.public_key())),
        "kid": kid,
        "alg": alg,
        "use": "sig",
    }


def test_an_identity_provider_s_rs256_and_es256_tokens_verify_through_its_jwks():
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    jwks = FakeJwks({"r1": _jwk(rsa_key, "r1", "RS256"), "e1": _jwk(ec_key, "e1", "ES256")})
    verifier = TokenVerifier(oidc_settings, jwks=jwks)
    claims = {
        "sub": "bob",
        "tenant": "acme.corp",
        "iss": "https://idp.test/",
        "aud": "assay-api",
        "exp": int(time.time()) + 600,
    }
    for key, kid, alg in ((rsa_key, "r1", "RS256"), (ec_key, "e1", "ES256")):
        who = verifier.identify(jwt.encode(claims, key, algorithm=alg, headers={"kid": kid}))
        assert (who.org_id, who.user_id) == ("acme.corp", "bob")
    assert jwks.urls[0] == "https://idp.test/jwks.json"
    # Signed by a key the JWKS does not hold, under a kid it has or one it does not.
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    assert "signature" in refusal(
        verifier, jwt.encode(claims, stranger, algorithm="RS256", headers={"kid": "r1"})
    )
    assert "kid" in refusal(
        verifier, jwt.encode(claims, stranger, algorithm="RS256", headers={"kid": "zz"})
    )
    assert "kid" in refusal(verifier, jwt.encode(claims, rsa_key, algorithm="RS256"))
    # The identity provider's audience and issuer, not assay's own.
    assert "audience" in refusal(
        verifier,
        jwt.encode({**claims, "aud": "assay"}, rsa_key, algorithm="RS256", headers={"kid": "r1"}),
    )
    assert "issuer" in refusal(
        verifier,
        jwt.encode({**claims, "iss": "assay"}, rsa_key, algorithm="RS256", headers={"kid": "r1"}),
    )
    # HS256 is off: even a token signed with the built-in secret is refused.
    assert "HS256 tokens are not accepted" in refusal(
        verifier, hs256(good(), secret=DEV_JWT_SECRET)
    )


def test_a_deployed_stage_refuses_to_start_with_the_built_in_secret():
    deployed = {"aws_lambda_function_name": "assay-dev"}
    with pytest.raises(ConfigurationError) as caught:
        check_deployment(settings(assay_jwt_secret=DEV_JWT_SECRET, **deployed))
    assert "ASSAY_JWT_SECRET" in caught.value.message and "built-in" in caught.value.message
    assert "shorter than 32" in " ".join(
        deployment_problems(settings(assay_jwt_secret="short", **deployed))
    )
    assert "ASSAY_OIDC_ISSUER" in " ".join(
        deployment_problems(
            settings(
                assay_jwt_secret="", assay_oidc_jwks_url="https://idp.test/jwks.json", **deployed
            )
        )
    )
    assert "no token can be verified" in " ".join(
        deployment_problems(settings(assay_jwt_secret="", **deployed))
    )
    # Fine: a real secret; OIDC only; and any local stack, the built-in secret included.
    check_deployment(settings(**deployed))
    check_deployment(oidc_settings(**deployed))
    check_deployment(settings(assay_jwt_secret=DEV_JWT_SECRET, aws_lambda_function_name=None))


@pytest.mark.parametrize("claim", ["exp", "iss", "aud", "sub"])
@pytest.mark.parametrize("how", ["missing", "null"])
def test_a_required_claim_missing_or_null_is_named(claim, how):
    claims = {k: v for k, v in good().items() if k != claim}
    if how == "null":
        claims[claim] = None
    # signed as JSON by hand: PyJWT's own encode refuses a null `iss`
    token = jwt.api_jws.encode(json.dumps(claims).encode(), SECRET, algorithm="HS256")
    with pytest.raises(UnauthenticatedError) as caught:
        TokenVerifier(settings).identify(token)
    assert caught.value.details == {"claim": claim}
    assert caught.value.message == (
        f"token has no {claim} claim, or it is null (required: exp, iss, aud, sub)"
    )


@pytest.mark.parametrize("crit", [["exp"], ["b64"], [], "b64", None])
def test_a_crit_header_is_refused_naming_it_before_anything_is_checked(crit):
    # signed with another secret: the header is refused before the signature is looked at
    token = hs256(good(), secret="x" * 40, headers={"crit": crit})
    with pytest.raises(UnauthenticatedError) as caught:
        TokenVerifier(settings).identify(token)
    assert caught.value.details == {"header": "crit"}
    assert caught.value.message.startswith("token header crit is not supported")


def test_a_header_that_is_not_json_is_still_not_a_jwt():
    assert "not a JWT" in refusal(TokenVerifier(settings), "bm90IGpzb24.e30.c2ln")
