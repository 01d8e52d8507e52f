"""Ports the services depend on; adapters implement them, tests swap in fakes (`tests/fakes`).

The runtimes' port is here; the stores' ports are in the modules named as the stores' modules
(`ports.catalog`, `ports.automation`, `ports.ledger`, `ports.tenants`). Stores take and return the
frozen records of `chalicelib.domain.records`; no PynamoDB row, attribute or expression crosses
into the services (issue 10, scope 2).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from chalicelib.domain.models import AgentAnswer, CaseRequest
from chalicelib.domain.recording_format import Recording
from chalicelib.domain.tools import ToolReply, ToolSpec


def _nothing(_: str) -> None:
    return None


class ToolCaller(Protocol):
    """The tools of one eval attempt, each call decided by the isolation rule and kept
    (docs/guides/tools.md); `services.tool_calls.ToolBox` implements it."""

    @property
    def tools(self) -> Mapping[str, ToolSpec]:
        """Every tool the attempt may call, by name (the spec's, then the workspace's)."""

    @property
    def max_steps(self) -> int:
        """How many model turns an agent loop may take before the attempt is a crash."""

    def call(self, name: str, arguments: Any) -> ToolReply:
        """Decide, make if allowed, and keep one call; an unknown tool or arguments that fail its
        schema are kept `blocked`, saying why. Never raises for what the agent asked."""

    def loop_at(self) -> int | None:
        """The index of the call that made the attempt's calls loop (the same call
        `LOOP_REPEATS` times in a row), None when they do not."""

    def reset(self) -> None:
        """Forget the calls of a try that failed (a provider error), before the next try."""


@dataclass(frozen=True)
class ToolGateway:
    """Where an `http` or `lambda` agent calls its tools during one eval attempt:
    `POST {url}/{tool_name}` with `Authorization: Bearer {token}`, or the MCP server at `mcp_url`
    with the same token. The token is valid for this attempt only, while its lease lasts."""

    url: str
    token: str
    mcp_url: str


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
        tools: the attempt's tools, for a runtime that runs the agent's tool loop itself
            (`openai`); None outside an eval attempt (a judge, a check).
        gateway: the attempt's tool gateway, for a runtime whose agent calls its tools itself
            (`http`, `lambda`: sent in the case payload); None when there is none.
    """

    org_id: str
    secret: Callable[[str], str | None] = _nothing
    recording: Callable[[str], Recording | None] = _nothing
    tools: ToolCaller | None = None
    gateway: ToolGateway | None = None


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
