"""Datasets and their immutable versions: cases given inline or imported (JSONL, CSV, GSM8K,
promptfoo test files, Inspect datasets: `domain.dataset_sources`).

A version is checked whole before anything is written (its cases, its scoring, the judge it
names), and a dataset created together with its first version (`create_with_version`, what
`assay import --create` sends) is kept only if that version is: a refused or failed import
leaves no empty dataset behind, and trying again succeeds (issue 13 scope 3).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pydantic import ValidationError

from chalicelib.bootstrap import Container
from chalicelib.clock import iso
from chalicelib.domain import dataset_sources, import_grading, scorers
from chalicelib.domain.identity import Identity
from chalicelib.domain.ids import check_tenant_id
from chalicelib.domain.importers import Imported
from chalicelib.domain.judge_rules import JUDGE_SCORER, Criterion, missing_criteria
from chalicelib.domain.limits import MAX_CASE_IDS_BYTES, case_ids_bytes
from chalicelib.domain.models import Case, ScoringConfig
from chalicelib.domain.records import Dataset, DatasetCase
from chalicelib.errors import (
    ConflictError,
    InvalidInputError,
    PayloadTooLargeError,
    invalid_input,
)
from chalicelib.services import judges, redacting

log = logging.getLogger(__name__)


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
"""Identifiers and labels: a case's id stays stable across versions (docs/concepts/verdicts.md)."""


def redact_cases(c: Container, org_id: str, cases: list[Case]) -> list[Case]:
    """The cases with every secret in what they say replaced (docs/reference/data-protection.md: the
    same placeholders as in results): input, history, reference, counter-example, checks, expected
    calls, note and metadata; a regex check's pattern also where it writes a secret with escapes.
    Scoring then reads the cases as kept."""
    r = redacting.for_org(c, org_id)
    out: list[Case] = []
    for case in cases:
        raw = case.model_dump(mode="json")
        kept = {k: v for k, v in raw.items() if k in _NOT_REDACTED}
        # A regex writes a secret with escapes (`re.escape(key)`): its patterns are read unescaped
        # first, then everything as text.
        patterns = r.patterns(raw)
        redacted = {
            **r.value({k: v for k, v in patterns.items() if k not in _NOT_REDACTED}),
            **kept,
        }
        out.append(case if redacted == raw else Case.model_validate(redacted))
    return out


def redact_scoring(c: Container, org_id: str, scoring: ScoringConfig) -> ScoringConfig:
    """The scoring with every secret its settings name replaced (docs/reference/data-protection.md),
    by the rules a case's checks are redacted by: a `regex` pattern and a `json_schema` schema read
    as `redact_cases` reads a check's (escapes undone, a property's values read after its name),
    then every setting as text. The required scorers' names and the judge's settings (a judge's
    id and version: identifiers) are kept as written. Runs, suites and evaluations grade with a
    version's scoring as kept (they copy or hash it), so this is the one place scoring is saved.

    Raises whatever `redacting.for_org` raises when the secrets store cannot be read."""
    r = redacting.for_org(c, org_id)
    raw = scoring.model_dump(mode="json")
    settings = r.scoring_patterns(raw)["settings"]
    redacted = {
        name: params if name == JUDGE_SCORER else r.value(params)
        for name, params in settings.items()
    }
    if redacted == raw["settings"]:
        return scoring
    return ScoringConfig.model_validate({**raw, "settings": redacted})


def _header(c: Container, who: Identity, name: str, dataset_id: str | None) -> Dataset:
    if dataset_id is not None:
        check_tenant_id(dataset_id, "dataset_id")
    return Dataset(
        dataset_id=dataset_id or f"ds_{uuid.uuid4().hex[:12]}",
        version=0,
        org_id=who.org_id,
        name=name,
        created_at=iso(c.clock.now()),
        created_by=who.user_id,
        latest_version=0,
    )


def create_dataset(
    c: Container, who: Identity, *, name: str, dataset_id: str | None = None
) -> Dataset:
    """Create an empty dataset (its versions are added with `add_version`). A dataset id is unique
    within the organization only.

    Raises InvalidInputError for a `dataset_id` with `#` or `/`, ConflictError for an id the
    organization has already.
    """
    header = _header(c, who, name, dataset_id)
    c.datasets.create(header)
    return header


def create_with_version(
    c: Container,
    who: Identity,
    *,
    name: str,
    dataset_id: str | None = None,
    scoring: Any = None,
    cases: Any = None,
    source: dict[str, Any] | None = None,
) -> Written:
    """Create a dataset together with its first version (`scoring`, `cases` | `source` as
    `add_version` takes them): both, or neither (issue 13: `assay import --create`).

    The version is checked whole before the dataset is written, and the dataset is deleted again
    when writing the version fails: no request leaves behind an empty dataset it did not find. A
    dataset of that id and name with no version yet (one a failed earlier create left, or one made
    empty on purpose) gets the version instead of a 409, so trying again after a failure succeeds.

    Returns:
        (header, the first version, its ungraded lines and why) as `Written`.
    Raises:
        InvalidInputError: a `dataset_id` with `#` or `/`, or a version `add_version` refuses.
        ConflictError: an id the organization has already (with a version, or under another name).
    """
    header = _header(c, who, name, dataset_id)
    prepared = _prepare(c, who, scoring=scoring, cases=cases, source=source)
    created = True
    try:
        c.datasets.create(header)
    except ConflictError:
        existing = c.datasets.get(who.org_id, header.dataset_id)
        if existing.latest_version or existing.name != name:
            raise
        header, created = existing, False
    try:
        return _write_version(c, who, header, prepared)
    except ConflictError:
        raise  # another writer took the number: nothing of ours is written, the dataset is theirs
    except BaseException:
        # The store took back what it wrote of the version; the header goes too unless a version
        # became readable meanwhile.
        if created:
            try:
                c.datasets.delete_empty(who.org_id, header.dataset_id)
            except Exception:  # noqa: BLE001 - the write's own error is the one to raise
                # Left empty, the dataset still takes the retry: an empty one of this name does.
                log.warning(
                    "could not delete dataset %s after its first version failed",
                    header.dataset_id,
                    exc_info=True,
                )
        raise


@dataclass(frozen=True)
class _Prepared:
    """A version checked whole and ready to write."""

    scoring: ScoringConfig
    cases: list[Case]
    ungraded: int
    ungraded_lines: list[int] = field(default_factory=list)
    """The lines of an imported file's ungraded cases (`import_grading.ungraded_lines`)."""
    ungraded_reason: str | None = None
    """Why the first of them is not graded; None when every case is."""


class Written(NamedTuple):
    """A version as written: the dataset's header, the version's row, and what of the imported
    file will not be graded (`ungraded_lines`: its first `import_grading.UNGRADED_LINES_SHOWN`
    lines, empty for inline cases or when every case is graded; `ungraded_reason`: why the first
    is not)."""

    header: Dataset
    version: Dataset
    ungraded_lines: list[int]
    ungraded_reason: str | None


def _requested(scoring: Any) -> list[Any]:
    """The scorer names a raw scoring block requires (none when it is malformed: `parse_scoring`
    names what is wrong with it)."""
    required = scoring.get("required") if isinstance(scoring, dict) else None
    return list(required) if isinstance(required, list) else []


def _source_cases(source: Any, scoring: Any = None) -> Imported:
    """What an import `source` holds, its reference columns chosen by the scorers `scoring`
    requires (`import_grading.reference_keys`). Raises InvalidInputError naming `source.*`."""
    if not isinstance(source, dict) or not isinstance(source.get("content"), str):
        raise InvalidInputError("source must be {format, content}", field="source.content")
    column = source.get("reference_column")
    if column is not None and (not isinstance(column, str) or not column.strip()):
        raise InvalidInputError(
            "source.reference_column must name a column", field="source.reference_column"
        )
    imported = dataset_sources.read(
        str(source.get("format")),
        source["content"],
        field="source.format",
        reference_from=import_grading.reference_keys(_requested(scoring), column),
        explicit=column is not None,
    )
    limit = source.get("limit")
    if limit is not None:
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise InvalidInputError("source.limit must be a positive integer", field="source.limit")
        imported = Imported(
            imported.cases[:limit], imported.required, imported.criteria, imported.lines[:limit]
        )
    return imported


def _with_required(scoring: Any, imported: Imported) -> Any:
    """`scoring` with the scorers the file's own expectations need added (none given: just them).

    A promptfoo assertion or an Inspect sample's choices are requirements of the file itself: left
    out of `required` they would grade nothing and leave their cases ungraded.
    """
    if not imported.required:
        return scoring
    if scoring is None:
        return {"required": list(imported.required)}
    if not isinstance(scoring, dict) or not isinstance(scoring.get("required"), list):
        return scoring  # parse_scoring names what is wrong with it
    given = list(scoring["required"])
    return {**scoring, "required": given + [n for n in imported.required if n not in given]}


def _criteria_view(criteria: list[Criterion]) -> list[dict[str, Any]]:
    return [c.model_dump(mode="json") for c in criteria]


def _name_a_judge(scoring: Any, imported: Imported) -> None:
    """Refuse a file with rubrics whose scoring names no judge (before the scoring is checked, so
    the 400 lists the criteria to publish).

    Raises:
        InvalidInputError: field `scoring.settings.judge`, `details["criteria"]` the criteria.
    """
    if not imported.criteria:
        return
    settings = scoring.get("settings") if isinstance(scoring, dict) else None
    if isinstance(settings, dict) and settings.get(JUDGE_SCORER):
        return
    raise InvalidInputError(
        f"the file has {len(imported.criteria)} llm-rubric criteria: name a judge in "
        "scoring.settings.judge whose criteria include them (details.criteria)",
        field="scoring.settings.judge",
        criteria=_criteria_view(imported.criteria),
    )


def _check_rubrics(c: Container, org_id: str, scoring: ScoringConfig, imported: Imported) -> None:
    """Refuse a version whose file defines judge criteria its judge does not have.

    Raises:
        InvalidInputError: field `scoring.settings.judge`, with `details["criteria"]` the criteria
            to publish on the judge (`POST /api/v1/judges/{id}/versions`).
    """
    if not imported.criteria:
        return
    judge = judges.of_scoring(c, org_id, scoring)
    if judge is None:  # not reached: `judge` is required whenever a file has criteria
        return
    missing = missing_criteria(judge.spec.criteria, imported.criteria)
    if missing:
        raise InvalidInputError(
            f"judge {judge.judge_id} (version {judge.version}) lacks {len(missing)} of the file's "
            f"{len(imported.criteria)} llm-rubric criteria: publish a judge version with them "
            "(details.criteria), then import again",
            field="scoring.settings.judge",
            criteria=_criteria_view(missing),
        )


def _prepare(
    c: Container,
    who: Identity,
    *,
    scoring: Any = None,
    cases: Any = None,
    source: dict[str, Any] | None = None,
) -> _Prepared:
    """Check a version whole, writing nothing: its cases (inline or imported), its scoring (with
    the scorers an imported file needs) and the judge it names.

    An imported file in which no case can be graded is refused (`import_grading.ungraded_error`)
    unless `source.allow_ungraded` is true; inline cases are not (a run names them).

    Raises:
        InvalidInputError: no cases, malformed cases or source, unknown scorers, a judge that does
            not grade the file's rubrics, a file nothing in which can be graded.
            NotFoundError: an unknown judge.
    """
    if (cases is None) == (source is None):
        raise InvalidInputError("give exactly one of cases or source", field="cases")
    imported = (
        _source_cases(source, scoring) if source is not None else Imported(parse_cases(cases))
    )
    _name_a_judge(scoring, imported)
    scoring_cfg = redact_scoring(c, who.org_id, parse_scoring(_with_required(scoring, imported)))
    if not imported.cases:
        raise InvalidInputError("a dataset version needs at least one case", field="cases")
    parsed = redact_cases(c, who.org_id, imported.cases)
    _check_rubrics(c, who.org_id, scoring_cfg, imported)
    # The judge must exist and be published; it decides which cases its criteria reach.
    effective = judges.effective_scoring(scoring_cfg, judges.of_scoring(c, who.org_id, scoring_cfg))
    ungraded = sum(1 for case in parsed if not scorers.is_gradable(case, effective))
    if source is not None and ungraded == len(parsed) and source.get("allow_ungraded") is not True:
        refusal = import_grading.ungraded_error(
            parsed, imported.lines, effective, imported.reference_columns
        )
        if refusal is not None:
            raise refusal
    lines, reason = (
        import_grading.ungraded_lines(parsed, imported.lines, effective, imported.reference_columns)
        if source is not None and ungraded
        else ([], None)
    )
    return _Prepared(scoring_cfg, parsed, ungraded, lines, reason)


def _write_version(c: Container, who: Identity, header: Dataset, prepared: _Prepared) -> Written:
    """Write `prepared` as the next version of `header`'s dataset; returns (header, the version,
    the lines of its ungraded cases, why the first is not graded).

    Raises ConflictError when the number was claimed meanwhile (nothing is written then)."""
    ids = [case.case_id for case in prepared.cases]
    if case_ids_bytes(ids) > MAX_CASE_IDS_BYTES:
        raise PayloadTooLargeError(
            f"the version's {len(ids)} case ids take {case_ids_bytes(ids)} bytes; a version "
            f"holds at most {MAX_CASE_IDS_BYTES} (each id in UTF-8 plus one): shorter case ids, "
            "or fewer cases per dataset",
            field="cases",
        )
    version = c.datasets.next_version(who.org_id, header.dataset_id)
    row = Dataset(
        dataset_id=header.dataset_id,
        version=version,
        org_id=who.org_id,
        name=header.name,
        created_at=iso(c.clock.now()),
        created_by=who.user_id,
        scoring=prepared.scoring.model_dump(mode="json"),
        case_ids=ids,
        case_count=len(prepared.cases),
        ungraded_cases=prepared.ungraded,
    )
    c.datasets.add_version(
        row,
        [
            DatasetCase(case_id=case.case_id, case=case.model_dump(mode="json"))
            for case in prepared.cases
        ],
    )
    return Written(
        c.datasets.get(who.org_id, header.dataset_id),
        row,
        prepared.ungraded_lines,
        prepared.ungraded_reason,
    )


def add_version(
    c: Container,
    who: Identity,
    dataset_id: str,
    *,
    scoring: Any = None,
    cases: Any = None,
    source: dict[str, Any] | None = None,
) -> Written:
    """Add the next immutable version from inline `cases` or an import `source`.

    Args:
        scoring: `{"required": [...], "settings": {...}}`; may be left out when the source's own
            expectations say how to grade it (a promptfoo file's assertions, an Inspect dataset's
            choices): their scorers are added to `required` in any case.
        cases: a list of case objects, or None when `source` is given.
        source: `{"format": "jsonl"|"csv"|"gsm8k"|"promptfoo"|"inspect", "content": "<text>",
            "limit": N?, "reference_column": "<column>"?, "allow_ungraded": true?}`. A jsonl or
            csv file's `answer`, `target` or `expected` column is the reference when a required
            scorer uses one (`import_grading`); a file nothing in which can be graded is refused
            unless `allow_ungraded`.
    Returns:
        (header, the new version row, its ungraded lines and why) as `Written`.
    Raises:
        InvalidInputError: no cases, malformed cases or source, unknown scorers, a judge without
            the file's rubrics. NotFoundError: unknown dataset or judge.
        ConflictError: a concurrent version took the number.
    """
    header = c.datasets.get(who.org_id, dataset_id)
    prepared = _prepare(c, who, scoring=scoring, cases=cases, source=source)
    return _write_version(c, who, header, prepared)


CASES_PAGE = 100
"""Cases per page of a dataset version's listing, unless `limit` says otherwise."""
MAX_CASES_PAGE = 500
"""The most cases one page of a dataset version's listing holds."""


@dataclass(frozen=True)
class CasePage:
    """One page of a listing of cases, and the cursor of the next page (None after the last)."""

    cases: list[dict[str, Any]]
    next_cursor: str | None


def encode_cursor(after: str) -> str:
    """The opaque cursor of a page that starts after the case `after`."""
    return base64.urlsafe_b64encode(json.dumps({"after": after}).encode()).decode()


def decode_cursor(cursor: str | None) -> str | None:
    """The case id a cursor `encode_cursor` gave starts after; None for no cursor.

    Raises InvalidInputError (field `cursor`) for anything else.
    """
    if not cursor:
        return None
    try:
        value = json.loads(base64.urlsafe_b64decode(cursor.encode()).decode())
    except (ValueError, RecursionError, binascii.Error, UnicodeError):
        value = None
    if not isinstance(value, dict) or not isinstance(value.get("after"), str):
        raise InvalidInputError("cursor is not one this API gave", field="cursor")
    return str(value["after"])


def list_cases(
    c: Container, version: Dataset, *, limit: int = CASES_PAGE, cursor: str | None = None
) -> CasePage:
    """A page of a dataset version's cases, by case id (a query of that version's cases from the
    case after the cursor; never a scan).

    Raises InvalidInputError for a `limit` outside 1..`MAX_CASES_PAGE` or a bad cursor.
    """
    if not 1 <= limit <= MAX_CASES_PAGE:
        raise InvalidInputError(f"limit must be between 1 and {MAX_CASES_PAGE}", field="limit")
    after = decode_cursor(cursor)
    rows, more = c.datasets.cases_page(
        version.org_id, version.dataset_id, int(version.version), limit=limit, after=after
    )
    last = rows[-1]["case_id"] if rows and more else None
    return CasePage(rows, encode_cursor(last) if last is not None else None)


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
