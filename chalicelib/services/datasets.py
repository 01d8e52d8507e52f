"""Datasets and their immutable versions: cases given inline or imported (JSONL, CSV, GSM8K)."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import ValidationError

from chalicelib.bootstrap import Container
from chalicelib.clock import iso
from chalicelib.domain import importers, scorers
from chalicelib.domain.identity import Identity
from chalicelib.domain.ids import check_tenant_id
from chalicelib.domain.judge_rules import JUDGE_SCORER
from chalicelib.domain.models import Case, ScoringConfig
from chalicelib.domain.records import Dataset, DatasetCase
from chalicelib.errors import InvalidInputError, invalid_input
from chalicelib.services import judges, redacting


def parse_scoring(raw: Any) -> ScoringConfig:
    """Validate a scoring block. Raises InvalidInputError naming the field."""
    if raw is None:
        raise InvalidInputError(
            "scoring is required: name the scorers every case must pass", field="scoring"
        )
    try:
        scoring = ScoringConfig.model_validate(raw)
    except ValidationError as exc:
        raise invalid_input(exc, "scoring") from None
    scorers.validate_scoring(scoring)
    return scoring


def parse_cases(raw: Any) -> list[Case]:
    """Validate inline cases. Raises InvalidInputError naming `cases[i].field`."""
    if not isinstance(raw, list):
        raise InvalidInputError("cases must be a list", field="cases")
    out: list[Case] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise InvalidInputError(f"cases[{i}] must be an object", field=f"cases[{i}]")
        try:
            case = Case.model_validate(item)
        except ValidationError as exc:
            raise invalid_input(exc, f"cases[{i}]") from None
        if not case.input.strip():
            raise InvalidInputError(f"cases[{i}].input is empty", field=f"cases[{i}].input")
        scorers.validate_checks(case, field=f"cases[{i}].checks")
        if case.case_id in seen:
            raise InvalidInputError(
                f"cases[{i}].case_id {case.case_id!r} is used twice", field=f"cases[{i}].case_id"
            )
        seen.add(case.case_id)
        out.append(case)
    return out


_NOT_REDACTED = ("case_id", "split", "tags")
"""Identifiers and labels: a case's id stays stable across versions (seed 004 "Comparing")."""


def redact_cases(c: Container, org_id: str, cases: list[Case]) -> list[Case]:
    """The cases with every secret in what they say replaced (seed 004 "What a run keeps": the same
    placeholders as in results): input, history, reference, counter-example, checks, expected
    calls, note and metadata. Scoring then reads the cases as kept."""
    r = redacting.for_org(c, org_id)
    out: list[Case] = []
    for case in cases:
        raw = case.model_dump(mode="json")
        kept = {k: v for k, v in raw.items() if k in _NOT_REDACTED}
        redacted = {**r.value({k: v for k, v in raw.items() if k not in _NOT_REDACTED}), **kept}
        out.append(case if redacted == raw else Case.model_validate(redacted))
    return out


def create_dataset(
    c: Container, who: Identity, *, name: str, dataset_id: str | None = None
) -> Dataset:
    """Create an empty dataset (its versions are added with `add_version`). A dataset id is unique
    within the organization only.

    Raises InvalidInputError for a `dataset_id` with `#` or `/`, ConflictError for an id the
    organization has already.
    """
    if dataset_id is not None:
        check_tenant_id(dataset_id, "dataset_id")
    header = Dataset(
        dataset_id=dataset_id or f"ds_{uuid.uuid4().hex[:12]}",
        version=0,
        org_id=who.org_id,
        name=name,
        created_at=iso(c.clock.now()),
        created_by=who.user_id,
        latest_version=0,
    )
    c.datasets.create(header)
    return header


def add_version(
    c: Container,
    who: Identity,
    dataset_id: str,
    *,
    scoring: Any,
    cases: Any = None,
    source: dict[str, Any] | None = None,
) -> tuple[Dataset, Dataset]:
    """Add the next immutable version from inline `cases` or an import `source`.

    Args:
        scoring: `{"required": [...], "settings": {...}}`.
        cases: a list of case objects, or None when `source` is given.
        source: `{"format": "jsonl"|"csv"|"gsm8k", "content": "<text>", "limit": N?}`.
    Returns:
        (header, the new version row).
    Raises:
        InvalidInputError: no cases, malformed cases or source, unknown scorers.
        NotFoundError: unknown dataset. ConflictError: a concurrent version took the number.
    """
    header = c.datasets.get(who.org_id, dataset_id)
    scoring_cfg = parse_scoring(scoring)
    if (cases is None) == (source is None):
        raise InvalidInputError("give exactly one of cases or source", field="cases")
    if source is not None:
        if not isinstance(source, dict) or not isinstance(source.get("content"), str):
            raise InvalidInputError("source must be {format, content}", field="source.content")
        fmt = source.get("format")
        if fmt not in ("jsonl", "csv", "gsm8k"):
            raise InvalidInputError(
                "source.format must be one of jsonl, csv, gsm8k", field="source.format"
            )
        parsed = importers.parse(fmt, source["content"])
        limit = source.get("limit")
        if limit is not None:
            if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
                raise InvalidInputError(
                    "source.limit must be a positive integer", field="source.limit"
                )
            parsed = parsed[:limit]
    else:
        parsed = parse_cases(cases)
    if not parsed:
        raise InvalidInputError("a dataset version needs at least one case", field="cases")
    parsed = redact_cases(c, who.org_id, parsed)
    # The judge must exist and be published; it decides which cases its criteria reach.
    effective = judges.effective_scoring(scoring_cfg, judges.of_scoring(c, who.org_id, scoring_cfg))
    ungraded = sum(1 for case in parsed if not scorers.is_gradable(case, effective))
    version = c.datasets.next_version(who.org_id, dataset_id)
    row = Dataset(
        dataset_id=dataset_id,
        version=version,
        org_id=who.org_id,
        name=header.name,
        created_at=iso(c.clock.now()),
        created_by=who.user_id,
        scoring=scoring_cfg.model_dump(mode="json"),
        case_ids=[case.case_id for case in parsed],
        case_count=len(parsed),
        ungraded_cases=ungraded,
    )
    c.datasets.add_version(
        row,
        [DatasetCase(case_id=case.case_id, case=case.model_dump(mode="json")) for case in parsed],
    )
    return c.datasets.get(who.org_id, dataset_id), row


def coverage(
    c: Container, version: Dataset, judge: Any, scoring: dict[str, Any] | None = None
) -> tuple[int, int]:
    """`(cases nothing grades, cases the judge grades)` of a dataset version, with `judge` (a
    `judges.ResolvedJudge` or None) the judge grading now: republishing a judge with other
    criteria scopes changes both, so they are counted when a run is planned."""
    if judge is None:
        return int(version.ungraded_cases or 0), 0
    effective = judges.effective_scoring(scoring or version.scoring, judge)
    ungraded = judged = 0
    for raw in c.datasets.cases(version.org_id, version.dataset_id, int(version.version)):
        case = Case.model_validate(raw)
        names = scorers.applicable_scorers(case, effective)
        ungraded += not names
        judged += JUDGE_SCORER in names
    return ungraded, judged


def resolve_version(c: Container, who: Identity, dataset_id: str, version: Any) -> Dataset:
    """A dataset version by number or `latest` (the default).

    Raises:
        NotFoundError: unknown dataset or version. InvalidInputError: a dataset with no version yet.
    """
    header = c.datasets.get(who.org_id, dataset_id)
    if version in (None, "latest"):
        if not header.latest_version:
            raise InvalidInputError(
                f"dataset {dataset_id} has no version yet: add cases first", field="dataset_version"
            )
        version = int(header.latest_version)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise InvalidInputError(
            "dataset_version must be a positive integer or 'latest'", field="dataset_version"
        )
    return c.datasets.get(who.org_id, dataset_id, version)
