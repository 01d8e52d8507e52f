"""Ports the services depend on; adapters implement them, tests swap in fakes."""

from __future__ import annotations

from typing import Any, Protocol

from chalicelib.domain.models import AgentAnswer, CaseRequest


class AgentRuntime(Protocol):
    """Asks an agent one case (DESIGN §8).

    Implementations raise `errors.ProviderError` for what is worth retrying (provider 5xx,
    408, 429, timeouts, no answer), `errors.AgentCrashError` for the agent's own failure, and
    `errors.InvalidInputError` from `validate` for a spec they cannot run.
    """

    def validate(self, spec: dict[str, Any]) -> None:
        """Raise `InvalidInputError` (naming the field) if `spec` cannot be run by this runtime."""

    def ask(self, spec: dict[str, Any], request: CaseRequest, timeout_s: float) -> AgentAnswer:
        """Ask the agent described by `spec` the case in `request`, within `timeout_s` seconds."""
