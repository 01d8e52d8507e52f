"""Who is asking: the organization and user a bearer token names."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Identity:
    """The caller of an API request or the author of a queued event."""

    org_id: str
    user_id: str
