"""SigV4 signatures of the shared DynamoDB client, made with less repeated work (issue 33).

botocore's `SigV4Auth` lists and sorts the headers to sign twice per request (for the canonical
request, then for the `Authorization` header), derives the signing key (four HMACs) anew for
every request, and splits and re-quotes the URL's path each time. `FastSigV4Auth` lists the
headers once, keeps the signing key for its secret, date, region and service, and keeps a URL's
canonical path and query; every step is botocore's own otherwise, so the signature and the
headers are the same (`tests/unit/test_dynamo_signing.py` compares them). Installed only on
the embedded stack's loopback client (`table_base.share_client`): AWS and LocalStack keep
botocore's own signer.
"""

from __future__ import annotations

import hmac
import threading
from hashlib import sha256
from typing import Any
from urllib.parse import urlsplit

import botocore.auth
from botocore.auth import SIGV4_TIMESTAMP, SigV4Auth
from botocore.exceptions import NoCredentialsError

_KEYS_KEPT = 64
_URLS_KEPT = 256


class FastSigV4Auth(SigV4Auth):
    """botocore's `SigV4Auth`, its work per request cut (module docstring)."""

    _keys: dict[tuple[str, str, str, str], bytes] = {}
    _urls: dict[str, tuple[str, str]] = {}
    _lock = threading.Lock()

    def add_auth(self, request: Any) -> None:
        """Sign `request` as `SigV4Auth.add_auth` does (its `Authorization`, `X-Amz-Date`, and
        `X-Amz-Security-Token` with a session token). Raises `NoCredentialsError` without
        credentials."""
        if self.credentials is None:
            raise NoCredentialsError()
        datetime_now = botocore.auth.get_current_datetime()
        request.context["timestamp"] = datetime_now.strftime(SIGV4_TIMESTAMP)
        self._modify_request_before_signing(request)
        headers_to_sign = self.headers_to_sign(request)
        signed_headers = self.signed_headers(headers_to_sign)
        canonical_request = self._canonical(request, headers_to_sign, signed_headers)
        string_to_sign = self.string_to_sign(request, canonical_request)
        signature = hmac.new(
            self._signing_key(request), string_to_sign.encode("utf-8"), sha256
        ).hexdigest()
        request.headers["Authorization"] = (
            f"AWS4-HMAC-SHA256 Credential={self.scope(request)}, "
            f"SignedHeaders={signed_headers}, Signature={signature}"
        )

    def _canonical(self, request: Any, headers_to_sign: Any, signed_headers: str) -> str:
        """`SigV4Auth.canonical_request`, with the headers listed once and a URL's path and
        query (when the request has no `params`) kept."""
        if request.params:
            path = self._normalize_url_path(urlsplit(request.url).path)
            query = self.canonical_query_string(request)
        else:
            found = self._urls.get(request.url)
            if found is None:
                parts = urlsplit(request.url)
                found = (
                    self._normalize_url_path(parts.path),
                    self._canonical_query_string_url(parts),
                )
                with self._lock:
                    if len(self._urls) < _URLS_KEPT:
                        self._urls[request.url] = found
            path, query = found
        if "X-Amz-Content-SHA256" in request.headers:
            body_checksum = request.headers["X-Amz-Content-SHA256"]
        else:
            body_checksum = self.payload(request)
        return "\n".join(
            [
                request.method.upper(),
                path,
                query,
                self.canonical_headers(headers_to_sign) + "\n",
                signed_headers,
                body_checksum,
            ]
        )

    def _signing_key(self, request: Any) -> bytes:
        """The key `SigV4Auth.signature` derives (from the secret, the date, the region and the
        service), derived once for each of those."""
        secret = self.credentials.secret_key
        date = request.context["timestamp"][0:8]
        key = (secret, date, self._region_name, self._service_name)
        found = self._keys.get(key)
        if found is None:
            k_date = self._sign(f"AWS4{secret}".encode(), date)
            k_region = self._sign(k_date, self._region_name)
            k_service = self._sign(k_region, self._service_name)
            found = self._sign(k_service, "aws4_request")
            with self._lock:
                if len(self._keys) >= _KEYS_KEPT:
                    self._keys.clear()
                self._keys[key] = found
        return found


def install(client: Any) -> None:
    """Make a botocore client sign with `FastSigV4Auth` wherever it would sign with botocore's
    `SigV4Auth` (its request signer's `get_auth_instance`); other signers are left as they are."""
    signer = getattr(client, "_request_signer", None)
    if signer is None or getattr(signer, "_assay_fast_sigv4", False):
        return
    original = signer.get_auth_instance

    def get_auth_instance(*args: Any, **kwargs: Any) -> Any:
        auth = original(*args, **kwargs)
        if type(auth) is SigV4Auth:
            auth.__class__ = FastSigV4Auth
        return auth

    signer.get_auth_instance = get_auth_instance
    signer._assay_fast_sigv4 = True
