"""One error hierarchy for assay, with no HTTP in it; `api/errors.py` maps it to status codes.

Expected outcomes of a case (a provider 5xx, a crash, a tie) are attempt states, not
exceptions: these errors are refusals and bugs only.
"""

from __future__ import annotations

from typing import Any


class AssayError(Exception):
    """Base of every error assay raises on purpose.

    Attributes:
        message: what a person should read.
        field: the request field at fault, when there is one.
        details: extra JSON-able facts for the response body.
    """

    def __init__(self, message: str, *, field: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.details = details


class InvalidInputError(AssayError):
    """The request is malformed or asks for something that could tell nothing (HTTP 400)."""


class UnauthenticatedError(AssayError):
    """No bearer token, or one that does not verify (HTTP 401)."""


class ForbiddenError(AssayError):
    """The caller lacks a permission; `details['permission']` names it (HTTP 403)."""


class NotFoundError(AssayError):
    """The thing does not exist or belongs to another organization (HTTP 404)."""


class ConflictError(AssayError):
    """The request contradicts what is stored, e.g. a version re-published with another spec (HTTP 409)."""


class BudgetExceededError(AssayError):
    """Starting would spend past a monthly budget (HTTP 402)."""


class ProviderError(Exception):
    """A provider failed in a way worth retrying (5xx, 408, 429, timeout, no answer).

    Runtimes raise it; `services.run_case` retries it and records `incomplete` after the retries.
    """

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class AgentCrashError(Exception):
    """The agent's own run failed (a tool raised, a step limit, a loop): the attempt is
    `failed` with `crash: true` (seed 004 "Results")."""


class DivergentCallError(AgentCrashError):
    """A `recorded` runtime was asked something its recording does not hold (DESIGN §8)."""
