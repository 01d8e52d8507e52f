"""Bearer tokens: signing assay's own (HS256) and verifying them or an identity provider's (OIDC).

Two kinds of token are accepted, chosen by the token's `alg` header and nothing else:
- `HS256`, signed with `ASSAY_JWT_SECRET` (local use, the demo, tests, `assay token`); off when the
  secret is empty. `iss` must be `ASSAY_JWT_ISSUER`, `aud` `ASSAY_JWT_AUDIENCE`.
- `RS256` or `ES256` from an OpenID Connect identity provider, when `ASSAY_OIDC_JWKS_URL` is set:
  the key is the JWKS key the token's `kid` names, fetched through PyJWT's `PyJWKClient` (one
  client per URL per process; it caches the key set for `JWKS_LIFESPAN_SECONDS` and fetches it
  again for an unknown `kid`, which is how a rotated key is picked up). `iss` must be
  `ASSAY_OIDC_ISSUER`, `aud` `ASSAY_OIDC_AUDIENCE`, and the organization is the
  `ASSAY_OIDC_ORG_CLAIM` claim.
Any other algorithm (`none` included) is refused before anything is verified, and so is a header
with `crit` (critical extensions, RFC 7515: assay understands none). Every token must carry `exp`,
`iss`, `aud` and `sub` (a refusal names the `claim` missing or null, or of the wrong JSON type:
`iss` and `sub` strings, `aud` a string or a list of strings, RFC 7519); `nbf` and `iat` are
honoured when present; times allow `ASSAY_JWT_LEEWAY_SECONDS` of clock skew. Times are checked
by `domain.identity.check_token_times` once the signature verified, not by PyJWT (which reads
`"exp": "1e14"` as a number): each is a JSON number, and a token lives at most
`ASSAY_JWT_MAX_LIFETIME_SECONDS` (`exp - iat`, or `exp - now`). The user (`sub`) is a user id
(`domain.access.user_id_problem`).
Every refusal says why, and never repeats the token.

PyJWT (and `cryptography`, for RS256/ES256) are imported on first use: a cold start that serves
no request pays for neither.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from typing import Any

from chalicelib.config import Settings
from chalicelib.domain.identity import Identity, check_token_times, from_claims
from chalicelib.errors import UnauthenticatedError

HS256 = "HS256"
OIDC_ALGORITHMS = ("RS256", "ES256")
REQUIRED_CLAIMS = ("exp", "iss", "aud", "sub")
MAX_TOKEN_CHARS = 16_384
"""A longer Authorization value is refused unread."""
JWKS_LIFESPAN_SECONDS = 300
JWKS_TIMEOUT_SECONDS = 5

_clients: dict[str, Any] = {}
_clients_lock = threading.Lock()


def _refused(message: str) -> UnauthenticatedError:
    return UnauthenticatedError(message, field="Authorization")


def issue(
    org_id: str,
    user_id: str,
    *,
    secret: str,
    issuer: str,
    audience: str,
    ttl_seconds: int,
    now_s: int | None = None,
    actor: str | None = None,
) -> str:
    """An HS256 token naming an organization (`org`) and a user (`sub`), valid `ttl_seconds` from
    `now_s` (default now); with `actor`, an administrator signed in as that user (`act`, RFC 8693).
    What the user may do is their membership's, read when each request is served.

    Raises:
        ValueError: `secret` is empty (HS256 is off: tokens come from the identity provider), or
            `ttl_seconds` is not positive.
    """
    import jwt

    if not secret:
        raise ValueError(
            "HS256 tokens are off (ASSAY_JWT_SECRET is empty): use the identity provider's tokens"
        )
    if ttl_seconds <= 0:
        raise ValueError("a token's lifetime must be positive")
    now = int(time.time()) if now_s is None else int(now_s)
    claims: dict[str, Any] = {
        "sub": user_id,
        "org": org_id,
        "iss": issuer,
        "aud": audience,
        "iat": now,
        "exp": now + int(ttl_seconds),
    }
    if actor is not None:
        claims["act"] = {"sub": actor}
    return jwt.encode(claims, secret, algorithm=HS256)


def jwks_client(url: str) -> Any:
    """The process's `PyJWKClient` for a JWKS URL (the operator's setting, never tenant input)."""
    from jwt import PyJWKClient

    with _clients_lock:
        client = _clients.get(url)
        if client is None:
            client = _clients[url] = PyJWKClient(
                url,
                cache_jwk_set=True,
                lifespan=JWKS_LIFESPAN_SECONDS,
                timeout=JWKS_TIMEOUT_SECONDS,
            )
        return client


def _raw_header(token: str) -> Any:
    """The JSON of a token's first part as it is, before PyJWT checks it; None when that part is
    not base64url JSON (`verify` then says the token is not a JWT)."""
    import json

    from jwt.utils import base64url_decode

    try:
        return json.loads(base64url_decode(token.split(".", 1)[0]))
    except (ValueError, TypeError, UnicodeDecodeError, RecursionError):
        return None


def _refuse_critical_extensions(token: str) -> None:
    """Refuse a token whose header has `crit` (RFC 7515 4.1.11): it says the token must not be
    accepted by a verifier that does not understand the extensions it lists, and assay
    understands none. Raises UnauthenticatedError (field `Authorization`, `header` "crit")."""
    header = _raw_header(token)
    if isinstance(header, dict) and "crit" in header:
        raise UnauthenticatedError(
            "token header crit is not supported: it lists critical extensions (RFC 7515), and "
            "this service accepts a token only without any",
            field="Authorization",
            header="crit",
        )


def _claims_of(token: str) -> Any:
    """The JSON of a token's second part as it is, unverified (only to say why a token whose
    signature verified was refused); None when it is not base64url JSON."""
    import json

    from jwt.utils import base64url_decode

    try:
        return json.loads(base64url_decode(token.split(".")[1]))
    except (ValueError, TypeError, UnicodeDecodeError, RecursionError, IndexError):
        return None


def _claim_refused(claims: Any, claim: str, what: str, expected: str) -> UnauthenticatedError:
    """The refusal (`claim` named) of a token whose `iss` or `aud` is not the one expected: of
    the wrong JSON type (`iss` a string; `aud` a string or a list of strings, RFC 7519 4.1.3), or
    another value."""
    value = claims.get(claim) if isinstance(claims, dict) else None
    well_typed = isinstance(value, str) or (
        claim == "aud" and isinstance(value, list) and all(isinstance(v, str) for v in value)
    )
    shape = "a string or a list of strings" if claim == "aud" else "a string"
    message = f"{what} is not {expected!r}" if well_typed else f"{what} must be {shape}"
    return UnauthenticatedError(message, field="Authorization", claim=claim)


def _shown_alg(alg: Any) -> str:
    return (
        repr(alg)
        if isinstance(alg, str) and re.fullmatch(r"[A-Za-z0-9]{1,10}", alg)
        else "this one"
    )


class TokenVerifier:
    """Verifies bearer tokens with the settings as they are at each call (tests override them), and
    signs assay's own.

    Args:
        settings: returns the current settings (e.g. `lambda: container.settings`).
        jwks: returns the `PyJWKClient` of a JWKS URL (default `jwks_client`).
    """

    def __init__(
        self, settings: Callable[[], Settings], jwks: Callable[[str], Any] = jwks_client
    ) -> None:
        self._settings = settings
        self._jwks = jwks

    @staticmethod
    def issue(org_id: str, user_id: str, **kwargs: Any) -> str:
        """`issue` (module function): an HS256 token; here so callers reach it through the
        container."""
        return issue(org_id, user_id, **kwargs)

    def identify(self, token: str) -> Identity:
        """The identity a bearer token names.

        Raises:
            UnauthenticatedError: the token is malformed, has a `crit` header (`header` names
                it), uses an algorithm not accepted here, does not verify, lacks a required claim
                (or holds it null), is expired or not valid yet, has a time claim that is not a
                number or a lifetime over `ASSAY_JWT_MAX_LIFETIME_SECONDS`, has the wrong issuer
                or audience (or one of the wrong JSON type), or names no valid organization or
                user (`sub` not a string, or with control, format, bidirectional or invisible
                characters or spaces at either end); `claim` names the claim at fault.
        """
        claims, org_claim = self.verify(token)
        return from_claims(claims, org_claim=org_claim)

    def verify(self, token: str) -> tuple[dict[str, Any], str]:
        """The verified claims of `token` and the claim that names its organization."""
        import jwt

        s = self._settings()
        if len(token) > MAX_TOKEN_CHARS:
            raise _refused(f"token is longer than {MAX_TOKEN_CHARS} characters")
        _refuse_critical_extensions(token)
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise _refused("token is not a JWT (three base64url parts, a JSON header)") from None
        alg = header.get("alg")
        accepted = ([HS256] if s.assay_jwt_secret else []) + (
            list(OIDC_ALGORITHMS) if s.assay_oidc_jwks_url else []
        )
        if alg not in accepted:
            if alg == HS256:
                raise _refused(
                    "HS256 tokens are not accepted here: this stage takes its identity provider's "
                    "tokens (RS256/ES256) only"
                )
            if alg in OIDC_ALGORITHMS:
                raise _refused(
                    f"{alg} tokens are accepted only with an identity provider configured "
                    "(ASSAY_OIDC_JWKS_URL)"
                )
            raise _refused(
                f"token algorithm {_shown_alg(alg)} is not accepted (accepted: "
                f"{', '.join(accepted)})"
            )
        if alg == HS256:
            key: Any = s.assay_jwt_secret
            issuer, audience, org_claim = s.assay_jwt_issuer, s.assay_jwt_audience, "org"
        else:
            if not s.assay_oidc_issuer or not s.assay_oidc_audience:
                raise _refused(
                    "the identity provider is not fully configured (ASSAY_OIDC_ISSUER and "
                    "ASSAY_OIDC_AUDIENCE are required with ASSAY_OIDC_JWKS_URL)"
                )
            if not isinstance(header.get("kid"), str):
                raise _refused(
                    "token has no key id (kid) header: the identity provider's key cannot be chosen"
                )
            try:
                key = self._jwks(s.assay_oidc_jwks_url).get_signing_key(header["kid"])
            except jwt.PyJWKClientConnectionError:
                raise _refused(
                    "the identity provider's signing keys could not be fetched: try again"
                ) from None
            except jwt.PyJWTError:
                raise _refused(
                    "token key id (kid) is not among the identity provider's signing keys"
                ) from None
            issuer, audience, org_claim = (
                s.assay_oidc_issuer,
                s.assay_oidc_audience,
                s.assay_oidc_org_claim,
            )
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=[alg],
                issuer=issuer,
                audience=audience,
                leeway=s.assay_jwt_leeway_seconds,
                options={
                    "require": list(REQUIRED_CLAIMS),
                    "verify_signature": True,
                    # the times: `check_token_times` below, which also refuses a string
                    "verify_exp": False,
                    "verify_nbf": False,
                    "verify_iat": False,
                },
            )
        except jwt.MissingRequiredClaimError as exc:
            raise UnauthenticatedError(
                f"token has no {exc.claim} claim, or it is null (required: "
                f"{', '.join(REQUIRED_CLAIMS)})",
                field="Authorization",
                claim=exc.claim,
            ) from None
        except jwt.InvalidIssuerError:
            raise _claim_refused(_claims_of(token), "iss", "token issuer (iss)", issuer) from None
        except jwt.InvalidAudienceError:
            raise _claim_refused(
                _claims_of(token), "aud", "token audience (aud)", audience
            ) from None
        except jwt.exceptions.InvalidSubjectError:
            raise UnauthenticatedError(
                "token's user (sub) must be a string", field="Authorization", claim="sub"
            ) from None
        except jwt.exceptions.InvalidJTIError:
            raise UnauthenticatedError(
                "token id (jti) must be a string", field="Authorization", claim="jti"
            ) from None
        except jwt.InvalidSignatureError:
            raise _refused("token signature does not verify") from None
        except jwt.DecodeError:
            raise _refused("token is malformed or its signature does not verify") from None
        except jwt.PyJWTError:
            raise _refused("token is invalid") from None
        check_token_times(
            claims,
            now_s=time.time(),
            leeway_s=s.assay_jwt_leeway_seconds,
            max_lifetime_s=s.assay_jwt_max_lifetime_seconds,
        )
        return claims, org_claim
