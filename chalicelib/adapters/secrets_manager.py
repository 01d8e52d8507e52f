"""AWS Secrets Manager adapter: the organizations' secrets (issue 9, docs/architecture/tables.md,
docs/reference/security.md).

A secret of organization `org` named `name` is the Secrets Manager secret
`<ASSAY_RESOURCE_PREFIX without '-'>/<org>/<name>` (default `assay/<org>/<name>`,
`chalicelib.names.secret_name`), tagged `assay:org=<org>`. The name is the only way in: every
method builds it from the caller's organization, and an org id or name that could step out of
that prefix (`/`, `#`, `..`) owns nothing (`get` answers None, `list` nothing).

Caching (a case attempt must not cost a Secrets Manager request): `get` keeps a value for
`ttl_seconds` (60 s) and an absent name for `missing_ttl_seconds` (5 s); `values` keeps every value
of an organization for `ttl_seconds`. A `put` or `delete` in this process refreshes both at once;
one made by another process (another Lambda) is seen here within those TTLs.

Eventual consistency: ListSecrets and BatchGetSecretValue on AWS may lag a write by a few seconds;
GetSecretValue and DescribeSecret do not.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime
from typing import Any

from chalicelib import names
from chalicelib.adapters.lazy import LazyClient
from chalicelib.clock import iso
from chalicelib.domain.identity import is_org_id
from chalicelib.domain.ids import is_valid_name
from chalicelib.services.ports.objects import SecretMeta

_NOT_FOUND = ("ResourceNotFoundException",)
_CREATE_RETRY_SECONDS = (0.5, 1.0, 2.0, 4.0)
"""Waits before retrying a CreateSecret that AWS refuses because the same name was just
force-deleted."""
_MAX_CACHED_NAMES = 4096


def _code(exc: Exception) -> str:
    return getattr(exc, "response", {}).get("Error", {}).get("Code", "")


def _when(value: Any) -> str:
    """Secrets Manager's dates (datetime from boto3) as our ISO strings."""
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, int | float):
        from datetime import UTC

        return iso(datetime.fromtimestamp(value, tz=UTC))
    return ""


class OrgSecrets(LazyClient):
    """Per-organization secrets in Secrets Manager; the boto3 client is built on first use.

    Args:
        client_factory: builds the `secretsmanager` client (endpoint, region, retries).
        resource_prefix: `ASSAY_RESOURCE_PREFIX` (e.g. `assay-`); names are
            `chalicelib.names.secret_name(resource_prefix, org, name)`.
        ttl_seconds: how long `get` keeps a value and `values` an organization's values, seconds.
        missing_ttl_seconds: how long `get` remembers that a name has no secret, seconds.
        monotonic: the clock of the caches (seconds; tests pass their own).
    """

    def __init__(
        self,
        client_factory: Callable[[], Any],
        resource_prefix: str,
        *,
        ttl_seconds: float = 60.0,
        missing_ttl_seconds: float = 5.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(client_factory)
        self.resource_prefix = resource_prefix
        self.ttl_seconds = ttl_seconds
        self.missing_ttl_seconds = missing_ttl_seconds
        self._now = monotonic
        self._lock = threading.Lock()
        self._values: dict[str, tuple[float, tuple[str, ...]]] = {}
        """org -> (expires at, every value of the org)."""
        self._gets: OrderedDict[tuple[str, str], tuple[float, str | None]] = OrderedDict()
        """(org, name) -> (expires at, value or None for absent)."""

    # -- names ---------------------------------------------------------------------------------

    def _name(self, org_id: str, name: str) -> str | None:
        """The Secrets Manager name, or None when the org id or name cannot own a secret."""
        if not is_org_id(org_id) or not is_valid_name(name):
            return None
        return names.secret_name(self.resource_prefix, org_id, name)

    def _prefix(self, org_id: str) -> str | None:
        return names.org_secret_prefix(self.resource_prefix, org_id) if is_org_id(org_id) else None

    # -- writes --------------------------------------------------------------------------------

    def put(self, org_id: str, name: str, value: str) -> str:
        """Create or replace the organization's secret `name` with `value`.

        Args:
            org_id: the owning organization.
            name: the secret's name (`chalicelib.domain.ids.NAME_PATTERN`).
            value: the secret text (the service checks it is non-empty and at most 16 KiB).

        Returns:
            `updated_at`: when the value changed, UTC ISO-8601 with `Z`.

        Raises:
            ValueError: the org id or name cannot own a secret (the service refuses these first).
            botocore.exceptions.ClientError: Secrets Manager refused (other than "exists").
        """
        full = self._name(org_id, name)
        if full is None:
            raise ValueError(f"{name!r} of {org_id!r} cannot name a secret")
        from botocore.exceptions import ClientError

        for wait in (*_CREATE_RETRY_SECONDS, None):
            try:
                self.client.create_secret(
                    Name=full,
                    SecretString=value,
                    Description=f"assay secret {name} of organization {org_id}",
                    Tags=[{"Key": names.SECRET_ORG_TAG, "Value": org_id}],
                )
                break
            except ClientError as exc:
                code = _code(exc)
                if code == "ResourceExistsException":
                    self.client.put_secret_value(SecretId=full, SecretString=value)
                    break
                # Right after a forced delete AWS may still refuse the name for a moment.
                if (
                    code == "InvalidRequestException"
                    and "deletion" in str(exc)
                    and wait is not None
                ):
                    time.sleep(wait)
                    continue
                raise
        described = self.client.describe_secret(SecretId=full)
        with self._lock:
            self._values.pop(org_id, None)
            self._remember(org_id, name, value)
        return _when(described.get("LastChangedDate") or described.get("CreatedDate"))

    def delete(self, org_id: str, name: str) -> None:
        """Delete the secret at once, with no recovery window (a deleted secret is gone).

        Deleting a name that has no secret does nothing (the service answers 404 before).
        """
        full = self._name(org_id, name)
        if full is None:
            return
        self.client.delete_secret(SecretId=full, ForceDeleteWithoutRecovery=True)
        with self._lock:
            self._values.pop(org_id, None)
            self._remember(org_id, name, None)

    # -- reads ---------------------------------------------------------------------------------

    def get(self, org_id: str, name: str) -> str | None:
        """The value of the organization's secret `name`, or None when it has none.

        Cached (module docstring): a value for `ttl_seconds`, an absent name for
        `missing_ttl_seconds`.
        """
        full = self._name(org_id, name)
        if full is None:
            return None
        key = (org_id, name)
        now = self._now()
        with self._lock:
            cached = self._gets.get(key)
            if cached is not None and cached[0] > now:
                self._gets.move_to_end(key)
                return cached[1]
        from botocore.exceptions import ClientError

        try:
            value: str | None = self.client.get_secret_value(SecretId=full).get("SecretString")
        except ClientError as exc:
            if _code(exc) not in _NOT_FOUND:
                raise
            value = None
        with self._lock:
            self._remember(org_id, name, value)
        return value

    def meta(self, org_id: str, name: str) -> SecretMeta | None:
        """The secret's name and `updated_at`, or None when the organization has no such secret."""
        full = self._name(org_id, name)
        if full is None:
            return None
        from botocore.exceptions import ClientError

        try:
            described = self.client.describe_secret(SecretId=full)
        except ClientError as exc:
            if _code(exc) in _NOT_FOUND:
                return None
            raise
        if described.get("DeletedDate") or described.get("Name") != full:
            return None
        return SecretMeta(
            name, _when(described.get("LastChangedDate") or described.get("CreatedDate"))
        )

    def list(self, org_id: str) -> list[SecretMeta]:
        """Every secret of the organization, by name (ListSecrets with a name-prefix filter,
        paged)."""
        prefix = self._prefix(org_id)
        if prefix is None:
            return []
        out: list[SecretMeta] = []
        for page in self.client.get_paginator("list_secrets").paginate(
            Filters=[{"Key": "name", "Values": [prefix]}], PaginationConfig={"PageSize": 100}
        ):
            for secret in page.get("SecretList", []):
                name = self._own_name(secret.get("Name"), prefix)
                if name is not None and not secret.get("DeletedDate"):
                    out.append(
                        SecretMeta(
                            name, _when(secret.get("LastChangedDate") or secret.get("CreatedDate"))
                        )
                    )
        return sorted(out)

    def values(self, org_id: str) -> tuple[str, ...]:
        """Every stored value of the organization (for redaction), cached for `ttl_seconds`.

        One BatchGetSecretValue per 20 secrets (name-prefix filter), only when the cache is cold.
        """
        prefix = self._prefix(org_id)
        if prefix is None:
            return ()
        now = self._now()
        with self._lock:
            cached = self._values.get(org_id)
            if cached is not None and cached[0] > now:
                return cached[1]
        found: list[str] = []
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {
                "Filters": [{"Key": "name", "Values": [prefix]}],
                "MaxResults": 20,
            }
            if token:
                kwargs["NextToken"] = token
            page = self.client.batch_get_secret_value(**kwargs)
            for secret in page.get("SecretValues", []):
                value = secret.get("SecretString")
                if (
                    self._own_name(secret.get("Name"), prefix) is not None
                    and isinstance(value, str)
                    and value
                ):
                    found.append(value)
            token = page.get("NextToken")
            if not token:
                break
        result = tuple(dict.fromkeys(found))
        with self._lock:
            self._values[org_id] = (self._now() + self.ttl_seconds, result)
        return result

    # -- helpers -------------------------------------------------------------------------------

    @staticmethod
    def _own_name(full: Any, prefix: str) -> str | None:
        """The organization's name of a listed secret, or None when it is not exactly under
        `prefix`.

        The name filter is a prefix match done by AWS; this checks it again, case-sensitively and
        one segment deep (`assay/org_a/x`, never `assay/org_ab/x` or `assay/org_a/x/y`).
        """
        if not isinstance(full, str) or not full.startswith(prefix):
            return None
        name = full[len(prefix) :]
        return name if is_valid_name(name) else None

    def _remember(self, org_id: str, name: str, value: str | None) -> None:
        """Cache `get`'s answer (lock held)."""
        ttl = self.ttl_seconds if value is not None else self.missing_ttl_seconds
        key = (org_id, name)
        self._gets[key] = (self._now() + ttl, value)
        self._gets.move_to_end(key)
        while len(self._gets) > _MAX_CACHED_NAMES:
            self._gets.popitem(last=False)
