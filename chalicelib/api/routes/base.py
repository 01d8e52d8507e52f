"""The one blueprint every route module registers on (`chalicelib.api.routes`), and what those
modules share: the middleware, the permissions of an agent's runs and suites, a path's version."""

from __future__ import annotations

from chalice import Blueprint

from chalicelib.api.common import answer_middleware
from chalicelib.domain.limits import MAX_VERSION
from chalicelib.errors import InvalidInputError

bp = Blueprint("chalicelib.api.routes")

SUITE_CHANGE = (("agents:edit", "agent_id"), ("agents:run", "agent_id"))
"""Saving, changing, pausing or running a suite (docs/reference/access.md); the service then checks
`datasets:run` on its dataset, `runs:view`, and that a person asks, not an API key."""
AGENT_RUNS = ("runs:view", ("agents:view", "agent_id"))
"""Reading an agent's runs or suites."""
bp.register_middleware(answer_middleware, "http")


def edits(who, agent_id: str) -> bool:
    return who.may("agents:edit", f"agent:{agent_id}")


def is_number(text: str) -> bool:
    """ASCII digits only: `str.isdigit` also takes "²", which `int` refuses."""
    return text.isascii() and text.isdigit()


def path_version(text: str) -> int:
    """A version number in a path: 1 to `MAX_VERSION`; else a 400 naming `version` (a number
    beyond what the stores keep would otherwise reach DynamoDB)."""
    if not is_number(text) or len(text) > 12 or not 1 <= int(text) <= MAX_VERSION:
        raise InvalidInputError(
            f"version must be an integer from 1 to {MAX_VERSION}", field="version"
        )
    return int(text)
