"""Agent runs: every model-backed run of an agent, wherever it came from
(docs/reference/usage.md).

An agent run is one request an agent answered: in production (reported by the platform that
serves the agent), as a case of an eval run (surface `eval`), or as the judge grading an eval's
answer (surface `grader`). Production runs spend from the same monthly budgets an eval checks;
usage figures count production alone and give the eval and grader cost beside it.

Pure rules: the surfaces, the ids (derived, so a redelivery or a report sent twice writes the same
run once), the bounds of a usage report and its validation.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from typing import Any

from chalicelib.domain.ids import check_tenant_id
from chalicelib.errors import InvalidInputError


class Surface(StrEnum):
    """Where an agent run came from."""

    PRODUCTION = "production"
    """Served to the agent's users, reported by the platform that runs the agent."""
    EVAL = "eval"
    """A case of an eval run."""
    GRADER = "grader"
    """The judge grading an eval run's answer."""


SURFACES: tuple[str, ...] = tuple(s.value for s in Surface)

MAX_REPORTED_RUNS = 500
"""Most runs one usage report (`POST /api/v1/usage/runs`) may carry."""
MAX_KEY_CHARS = 200
"""Longest idempotency key of a reported run."""
MAX_REPORTED_COST_USD = Decimal(1000)
"""Largest cost of one reported run, in USD: past it the report is a mistake, not a run."""
MAX_REPORTED_TOKENS = 10**9
"""Largest token count of one reported run."""
MAX_AGENT_ID_CHARS = 200
"""Longest agent id a report may name (as a path id)."""
ASKED_CHARS = 1000
"""How much of what a run was asked is kept on its row, in characters."""

_KEY = re.compile(r"^[\x21-\x7e]{1," + str(MAX_KEY_CHARS) + r"}$")
_MODEL = re.compile(r"^[\x20-\x7e]{1,200}$")


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:24]


def eval_run_id(eval_run_id: str, attempt_key: str) -> str:
    """The agent run id of an eval run's attempt (`ar_` + 24 hex digits): the same for every
    delivery of the attempt, so it is written once."""
    return f"ar_{_digest('eval', eval_run_id, attempt_key)}"


def grader_run_id(eval_run_id: str, attempt_key: str, grading: int = 0) -> str:
    """The agent run id of the judge grading an attempt; `grading` counts the run's "grade again"
    passes (0: the grading as the attempt was recorded)."""
    return f"ar_{_digest('grader', eval_run_id, attempt_key, str(grading))}"


def production_run_id(org_id: str, key: str) -> str:
    """The agent run id of a production run reported under idempotency `key`."""
    return f"ar_{_digest('production', org_id, key)}"


def is_agent_run_id(value: str) -> bool:
    """Whether `value` has the shape of an agent run id."""
    return bool(re.fullmatch(r"ar_[0-9a-f]{24}", value or ""))


@dataclass(frozen=True, kw_only=True)
class EvalCase:
    """The eval run, case and attempt an eval or grader run answered."""

    run_id: str
    case_id: str
    attempt: int
    dataset_id: str
    dataset_version: int = 0


@dataclass(frozen=True, kw_only=True)
class AgentRun:
    """One agent run (docs/reference/usage.md). Money in micro-USD, latency in ms, times ISO-8601
    UTC and epoch ms."""

    agent_run_id: str
    org_id: str
    agent_id: str
    surface: str
    started_at: str
    started_ms: int
    version: int | None = None
    draft: bool = False
    model: str | None = None
    status: str = "completed"
    """`completed`, `failed` (the agent crashed or errored) or `incomplete` (not decided)."""
    asked: str | None = None
    """What the run was asked: its first user turn, the eval case's question, or for the judge
    what it graded; redacted, at most `ASKED_CHARS` characters."""
    request: Any = None
    """What the model was given (redacted) when it was kept with the run; an eval run's is
    rebuilt from its case when read (`services.usage.get`)."""
    cost_micros: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    ran_as: str | None = None
    """Who it ran as: the person who started the eval (None for production)."""
    eval_case: EvalCase | None = None
    key: str | None = None
    """A production run's idempotency key."""


@dataclass(frozen=True)
class ReportedRun:
    """One production run of a usage report, validated."""

    key: str
    agent_id: str
    cost_micros: int
    index: int = 0
    """Where it was in the report (`runs[index]`), for an error about it."""
    version: int | None = None
    model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    asked: str | None = None


def _micros(raw: Any, field: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        raise InvalidInputError(f"{field} must be a number of USD", field=field)
    try:
        value = Decimal(str(raw))
    except InvalidOperation:
        raise InvalidInputError(f"{field} must be a number of USD", field=field) from None
    if not value.is_finite() or value < 0 or value > MAX_REPORTED_COST_USD:
        raise InvalidInputError(
            f"{field} must be between 0 and {MAX_REPORTED_COST_USD} USD", field=field
        )
    return int((value * 1_000_000).to_integral_value())


def _count(raw: Any, field: str) -> int:
    if raw is None:
        return 0
    if isinstance(raw, bool) or not isinstance(raw, int) or not 0 <= raw <= MAX_REPORTED_TOKENS:
        raise InvalidInputError(
            f"{field} must be a whole number from 0 to {MAX_REPORTED_TOKENS}", field=field
        )
    return int(raw)


def parse_report(body: Any) -> list[ReportedRun]:
    """The runs of a usage report body `{"runs": [{key, agent_id, version?, model?, cost_usd,
    input_tokens?, output_tokens?, asked?}]}`, at most `MAX_REPORTED_RUNS`; a key repeated within
    the report counts once (its first run).

    Raises:
        InvalidInputError: the body, a run or a field is malformed, naming it (`runs[3].cost_usd`).
    """
    if not isinstance(body, Mapping) or not isinstance(body.get("runs"), list):
        raise InvalidInputError('the body must be {"runs": [...]}', field="runs")
    runs: Sequence[Any] = body["runs"]
    if not runs:
        raise InvalidInputError("runs must name at least one run", field="runs")
    if len(runs) > MAX_REPORTED_RUNS:
        raise InvalidInputError(
            f"runs may carry at most {MAX_REPORTED_RUNS} runs per call, not {len(runs)}",
            field="runs",
        )
    out: dict[str, ReportedRun] = {}
    for i, raw in enumerate(runs):
        at = f"runs[{i}]"
        if not isinstance(raw, Mapping):
            raise InvalidInputError(f"{at} must be an object", field=at)
        key = raw.get("key")
        if not isinstance(key, str) or not _KEY.match(key):
            raise InvalidInputError(
                f"{at}.key must be 1-{MAX_KEY_CHARS} printable characters without spaces",
                field=f"{at}.key",
            )
        agent_id = raw.get("agent_id")
        if not isinstance(agent_id, str) or len(agent_id) > MAX_AGENT_ID_CHARS:
            raise InvalidInputError(f"{at}.agent_id must be an agent id", field=f"{at}.agent_id")
        check_tenant_id(agent_id, f"{at}.agent_id")
        version = raw.get("version")
        if version is not None and (
            isinstance(version, bool) or not isinstance(version, int) or not 1 <= version < 2**31
        ):
            raise InvalidInputError(f"{at}.version must be a version number", field=f"{at}.version")
        model = raw.get("model")
        if model is not None and (not isinstance(model, str) or not _MODEL.match(model)):
            raise InvalidInputError(
                f"{at}.model must be 1-200 printable characters", field=f"{at}.model"
            )
        if "cost_usd" not in raw:
            raise InvalidInputError(f"{at}.cost_usd is required", field=f"{at}.cost_usd")
        asked = raw.get("asked")
        if asked is not None and not isinstance(asked, str):
            raise InvalidInputError(f"{at}.asked must be text", field=f"{at}.asked")
        out.setdefault(
            key,
            ReportedRun(
                key=key,
                agent_id=agent_id,
                cost_micros=_micros(raw["cost_usd"], f"{at}.cost_usd"),
                index=i,
                version=version,
                model=model,
                input_tokens=_count(raw.get("input_tokens"), f"{at}.input_tokens"),
                output_tokens=_count(raw.get("output_tokens"), f"{at}.output_tokens"),
                asked=asked[:ASKED_CHARS] if asked else None,
            ),
        )
    return list(out.values())


def parse_surface(raw: Any, field: str) -> str | None:
    """A surface named in a query (`surface`, `exclude_surface`), None when absent.

    Raises:
        InvalidInputError: not one of `SURFACES`, naming `field`.
    """
    if raw is None or raw == "":
        return None
    if raw not in SURFACES:
        raise InvalidInputError(f"{field} must be one of {', '.join(SURFACES)}", field=field)
    return str(raw)


def surfaces_listed(surface: str | None, exclude: str | None) -> tuple[str, ...]:
    """The surfaces a history listing reads: `surface` alone, or every one but `exclude`."""
    if surface is not None:
        return () if surface == exclude else (surface,)
    return tuple(s for s in SURFACES if s != exclude)


@dataclass(frozen=True)
class SurfaceUsage:
    """One surface's month: cost in micro-USD, tokens, runs."""

    cost_micros: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    runs: int = 0


def usd(micros: int) -> float:
    """Micro-USD as USD, rounded to the micro-dollar."""
    return round(micros / 1_000_000, 6)


def month_ok(month: str) -> bool:
    """Whether `month` is `YYYY-MM` (years 2000-2999, months 01-12)."""
    m = re.fullmatch(r"2\d{3}-(\d{2})", month or "")
    return m is not None and 1 <= int(m.group(1)) <= 12
