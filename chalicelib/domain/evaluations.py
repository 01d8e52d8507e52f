"""Evaluations: an agent, a dataset and a version selector (docs/guides/by-hand.md).

An evaluation says which agent version to pick, not which one was picked: its `version` is a
selector (`latest` by default, `published`, or a number) resolved once, when a run of it is
created, into the run's pinned `agent_id` and `resolved_version`. Editing the evaluation later
changes what its next run picks and never what a past run tested.

A run started without naming an evaluation belongs to the evaluation its agent and dataset imply,
whose id is `implied~<agent_id>~<dataset_id>` (`implied_id`). Ids a caller chooses never contain
`~` (`EVALUATION_ID_PATTERN`), so an implied id is never an explicit evaluation's, and neither
kind contains `#` or `/` (the stores' keys and the URL paths). An implied evaluation has no
record: it exists as long as its agent and dataset do, and its runs are listed by the same routes.

A verdict (docs/concepts/verdicts.md) sums each evaluation's latest completed run: an implied
evaluation is the (agent, dataset) pair it has always been, and each explicit evaluation is one
more.
"""

from __future__ import annotations

from chalicelib.errors import InvalidInputError

IMPLIED_PREFIX = "implied"
_IMPLIED_SEP = "~"
EVALUATION_ID_PATTERN = r"^[A-Za-z0-9_\-]{1,64}$"
"""What a caller may choose as an evaluation id (no `~`, so never an implied id)."""
RESERVED_IDS = frozenset({"progress", "stream", "agent-summaries"})
"""Path segments the evaluation routes take under `/api/evaluations/` (never an evaluation id)."""

LATEST = "latest"
PUBLISHED = "published"
MAX_SELECTOR_VERSION = 2_147_483_647


def implied_id(agent_id: str, dataset_id: str) -> str:
    """The id of the evaluation a run of `agent_id` on `dataset_id` implies when it names none:
    `implied~<agent_id>~<dataset_id>` (e.g. `implied~agt_1~ds_1`)."""
    return _IMPLIED_SEP.join((IMPLIED_PREFIX, agent_id, dataset_id))


def evaluation_of(evaluation_id: str | None, agent_id: str, dataset_id: str) -> str:
    """The evaluation a run belongs to: the one it pinned, else the one it implies."""
    return evaluation_id or implied_id(agent_id, dataset_id)


def implied_parts(evaluation_id: str) -> tuple[str, str] | None:
    """`(agent_id, dataset_id)` of an implied evaluation id, None for any other id."""
    parts = evaluation_id.split(_IMPLIED_SEP)
    if len(parts) != 3 or parts[0] != IMPLIED_PREFIX or not parts[1] or not parts[2]:
        return None
    return parts[1], parts[2]


def is_implied(evaluation_id: str | None) -> bool:
    """Whether `evaluation_id` is an implied evaluation's (None, as on runs recorded before
    evaluations were kept, is the implied one too)."""
    return evaluation_id is None or implied_parts(evaluation_id) is not None


def selector_of(value: object, *, field: str = "version") -> str:
    """The stored form of a version selector: `"latest"`, `"published"` or a positive number as
    decimal text; None is `"latest"` (latest by default).

    Raises:
        InvalidInputError: anything else (naming `field`).
    """
    if value is None:
        return LATEST
    if value in (LATEST, PUBLISHED):
        return str(value)
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and 1 <= value <= MAX_SELECTOR_VERSION
    ):
        return str(value)
    raise InvalidInputError(
        'version must be "latest", "published" or a positive integer', field=field
    )


def selector_value(stored: str) -> str | int:
    """A stored selector as the API shows it: `"latest"`, `"published"` or the number."""
    return int(stored) if stored.isdigit() else stored


def resolve_selector(selector: str | int, *, latest_version: int, live_version: int | None) -> int:
    """The concrete version a selector picks now (docs/guides/by-hand.md).

    Args:
        selector: `"latest"`, `"published"`, a number, or its stored decimal text.
        latest_version: the agent's highest published version (0: never published).
        live_version: the version the agent serves (None: none chosen, the latest stands in).
    Returns:
        `latest` -> the latest version; `published` -> the live one, else the latest; a number ->
        itself (whether it exists is the caller's lookup).
    Raises:
        InvalidInputError: the agent was never published (field `version`), or a bad selector.
    """
    stored = selector_of(selector_value(selector) if isinstance(selector, str) else selector)
    if latest_version < 1:
        raise InvalidInputError(
            "the agent was never published: an evaluation runs a published version",
            field="version",
        )
    if stored == LATEST:
        return int(latest_version)
    if stored == PUBLISHED:
        return int(live_version or latest_version)
    return int(stored)
