"""One error hierarchy for assay, with no HTTP in it; `api/errors.py` maps it to status codes.

Expected outcomes of a case (a provider 5xx, a crash, a tie) are attempt states, not
exceptions: these errors are refusals and bugs only.
"""

from __future__ import annotations

import re
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


_UNION_BRANCH = re.compile(
    r"^(int|str|float|bool|none|constrained-\w+|list\[.*\]|dict\[.*\]|literal\[.*\]|function-.*)$"
)
"""Parts of a pydantic error location that name a union's branch, not a field (`version.int`)."""


def invalid_input(exc: Any, prefix: str = "") -> InvalidInputError:
    """A 400 naming the field of a pydantic `ValidationError`'s first problem.

    Args:
        exc: the ValidationError.
        prefix: where the validated object sits in the request, e.g. `cases[3]` or `scoring`.
    Returns:
        InvalidInputError with `field` like `cases[3].input` and a message saying what was wrong;
        a union's errors are joined ("input should be a valid integer or 'latest'").
    """
    errors = exc.errors()
    first = errors[0]

    def field_of(e: Any) -> str:
        parts = [str(p) for p in e["loc"] if not _UNION_BRANCH.match(str(p))]
        return ".".join(p for p in [prefix, ".".join(parts)] if p) or "body"

    field = field_of(first)
    if first["type"] == "extra_forbidden":
        msg = "unknown field"
    else:
        same = [e["msg"] for e in errors if field_of(e) == field and e["type"] != "extra_forbidden"]
        if len(same) > 1:
            msg = "input should be " + " or ".join(
                dict.fromkeys(m.removeprefix("Input should be ") for m in same)
            )
        else:
            msg = first["msg"]
    return InvalidInputError(f"{field}: {msg}", field=field)


class UnauthenticatedError(AssayError):
    """No bearer token, or one that does not verify (HTTP 401)."""


class ForbiddenError(AssayError):
    """The caller lacks a permission; `details['permission']` names it (HTTP 403)."""


class NotFoundError(AssayError):
    """The thing does not exist or belongs to another organization (HTTP 404)."""


class ConflictError(AssayError):
    """The request contradicts what is stored, e.g. a version re-published with another spec (HTTP
    409)."""


class BudgetExceededError(AssayError):
    """Starting would spend past a monthly budget (HTTP 402)."""


class PayloadTooLargeError(AssayError):
    """The request body is larger than the service takes, e.g. a recording over 5 MiB (HTTP 413)."""


class ConfigurationError(AssayError):
    """The operator's settings cannot run this stage safely, e.g. a deployed stage with the built-in
    signing secret (raised at cold start, never for a request)."""


RETRYABLE_STATUSES = frozenset({408, 429})
"""Statuses below 500 a provider answers when trying again later may succeed."""


def is_retryable_status(status: int | None) -> bool:
    """Whether a `ProviderError` with this status is worth retrying.

    Args:
        status: the HTTP-like status carried by the error; None for timeouts/connection errors.

    Returns:
        True for None, 408, 429 and every 5xx; False otherwise (e.g. 401 credentials rejected).
    """
    return status is None or status in RETRYABLE_STATUSES or 500 <= status <= 599


class ProviderError(Exception):
    """A provider failed in a way worth retrying (5xx, 408, 429, timeout, no answer).

    Runtimes raise it; `services.run_case` retries it and records `incomplete` after the retries.
    `credentials_missing` (status 401, never retried): the organization has not stored the
    credentials the spec names, as opposed to a provider that rejected them.
    """

    def __init__(
        self, message: str, *, status: int | None = None, credentials_missing: bool = False
    ) -> None:
        super().__init__(message)
        self.status = status
        self.credentials_missing = credentials_missing


class AgentCrashError(Exception):
    """The agent's own run failed (a tool raised, a step limit, a loop): the attempt is
    `failed` with `crash: true` (docs/concepts/verdicts.md)."""


class DivergentCallError(Exception):
    """A `recorded` runtime was asked a case its recording holds no answer for
    (docs/reference/runtimes.md): the attempt diverged from the recording. Not the agent's failure
    and not worth retrying: the attempt is `incomplete` (not graded), its reason saying it is
    divergent (`services.answering.DIVERGENT_REASON`)."""
