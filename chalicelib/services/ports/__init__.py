"""Ports the services depend on; adapters implement them, tests swap in fakes (`tests/fakes`).

The runtimes' port is here; the stores' ports are in the modules named as the stores' modules
(`ports.catalog`, `ports.automation`, `ports.ledger`, `ports.tenants`). Stores take and return the
frozen records of `chalicelib.domain.records`; no PynamoDB row, attribute or expression crosses
into the services (issue 10, scope 2).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from chalicelib.domain.models import AgentAnswer, CaseRequest
from chalicelib.domain.recording_format import Recording


def _nothing(_: str) -> None:
    return None


@dataclass(frozen=True)
class AskContext:
    """What a runtime may read while it asks for one organization (docs/reference/security.md).

    A spec names credentials and recordings by name; only these lookups turn a name into a value,
    and only within `org_id`. Nothing else a runtime does may read the process environment or a
    server path.

    Attributes:
        org_id: the organization whose agent or judge is asked.
        secret: the value of one of the organization's secrets by name (e.g. "openai"), None when
            the organization has no secret of that name.
        recording: one of the organization's uploaded recordings by id, parsed, None when absent.
    """

    org_id: str
    secret: Callable[[str], str | None] = _nothing
    recording: Callable[[str], Recording | None] = _nothing


class AgentRuntime(Protocol):
    """Asks an agent one case (docs/reference/runtimes.md).

    Implementations raise `errors.ProviderError` for what is worth retrying (provider 5xx,
    408, 429, timeouts, no answer), `errors.AgentCrashError` for the agent's own failure, and
    `errors.InvalidInputError` from `validate` for a spec they cannot run.
    """

    def validate(self, spec: dict[str, Any]) -> None:
        """Raise `InvalidInputError` (naming the field) if `spec` cannot be run by this runtime.

        Checks what the spec says without reading any organization's data: the shape, the
        operator's limits (allowed python modules, lambda prefix) and egress (the URL's address).
        """

    def ask(
        self, spec: dict[str, Any], request: CaseRequest, timeout_s: float, ctx: AskContext
    ) -> AgentAnswer:
        """Ask the agent described by `spec` the case in `request`, within `timeout_s` seconds,
        reading credentials and recordings only through `ctx`."""


class Runtimes(Protocol):
    """Every agent runtime, by kind, and the checks of what a tenant writes to run one
    (docs/reference/runtimes.md)."""

    def runtime_for(self, spec: Any) -> AgentRuntime:
        """The runtime `spec["runtime"]` names.

        Raises:
            InvalidInputError: (field "spec") not an object; (field "spec.runtime") no runtime of
                that name, naming the allowed values.
        """

    def validate_spec(self, spec: Any) -> None:
        """Check a spec can run: its runtime, its prices, then the runtime's own fields.

        Raises:
            InvalidInputError: naming the field at fault (`spec.runtime`, `spec.price...`,
                `spec.url`).
        """

    def validate_profile_settings(self, settings: Any) -> dict[str, Any]:
        """Check a model profile's `settings` (connection keys only, each valid as in a spec);
        returns them.

        Raises:
            InvalidInputError: (field "settings" or "settings.<key>") naming the key at fault.
        """
