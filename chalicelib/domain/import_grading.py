"""What an imported file needs so that its cases can be graded: which of its columns is the
reference, and why a case nothing grades is not graded.

The reference of a case
-----------------------
A jsonl key or CSV column is taken as the case's `reference`, in this order of preference:

1. the column the import names explicitly (`source.reference_column`, `assay import
   --reference-column NAME`): it wins over everything else;
2. the file's own `reference` column;
3. when one of the version's required scorers uses a reference (`USES_REFERENCE`): the first of
   `REFERENCE_ALIASES` - `answer`, then `target`, then `expected` - that the case gives (a
   non-empty value). The column taken is not kept in `metadata`; the other aliases are.

With no scorer that uses a reference, `answer`, `target` and `expected` stay in `metadata` as they
always did (a regex- or judge-only dataset may carry them as notes).

An import nothing grades
------------------------
An import in which no case can be graded by the required scorers is refused (`ungraded_error`):
the 400 names the first case's line and what to add, unless the import says
`allow_ungraded` (`assay import --allow-ungraded`).

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from chalicelib.domain.models import Case, ScoringConfig
from chalicelib.domain.scorers import SCORERS, ScorerName, applicable_scorers
from chalicelib.errors import InvalidInputError

REFERENCE_ALIASES: tuple[str, ...] = ("answer", "target", "expected")
"""Columns/keys taken as the reference, in this order of preference, when a required scorer uses a
reference and the case has no `reference` of its own."""

NEEDS_REFERENCE: frozenset[str] = frozenset(
    {
        ScorerName.EQUALS,
        ScorerName.CONTAINS,
        ScorerName.ICONTAINS,
        ScorerName.NUMERIC_ANSWER,
    }
)
"""Scorers that grade against the case's reference when no check of the case gives them a value:
without either they do not apply to the case."""

USES_REFERENCE: frozenset[str] = NEEDS_REFERENCE | {ScorerName.JUDGE}
"""Scorers that read the case's reference: those that need it, and the judge, which shows the
model the reference answer when there is one."""

ALLOW_UNGRADED_FIELD = "source.allow_ungraded"
"""The request field that imports a file nothing grades anyway."""

UNGRADED_LINES_SHOWN = 20
"""The most lines of ungraded cases an import's answer lists (`ungraded_lines`)."""


def reference_keys(
    required: Iterable[object], reference_column: str | None = None
) -> tuple[str, ...]:
    """The columns/keys an importer takes as a case's reference, in order of preference, besides
    the file's own `reference` (which an explicit `reference_column` overrides).

    Args:
        required: the scorer names the version requires (anything else in it is ignored: the
            scoring is checked later, naming its field).
        reference_column: the column the import names explicitly, or None.

    Returns:
        `(reference_column,)` when one is named; `REFERENCE_ALIASES` when a required scorer uses a
        reference; else `()`.
    """
    if reference_column:
        return (reference_column,)
    if any(isinstance(name, str) and name in USES_REFERENCE for name in required):
        return REFERENCE_ALIASES
    return ()


def scorers_without_reference() -> str:
    """The scorers that grade a case with no reference, each with what it needs, for a message:
    "json_valid, regex (with a pattern), ..."."""
    needs: dict[str, str] = {
        ScorerName.REGEX: "with a pattern",
        ScorerName.JSON_SCHEMA: "with a schema",
        ScorerName.TOOL_CALLS: "with expected_calls",
        ScorerName.JUDGE: "with a judge",
    }
    return ", ".join(
        f"{name} ({needs[name]})" if name in needs else name
        for name in sorted(SCORERS)
        if name not in NEEDS_REFERENCE
    )


QUOTED_MAX = 80
"""How many characters of a case's own text a refusal quotes: the file is the tenant's, and a
message quoting it whole could be a megabyte."""


def _quoted(text: str) -> str:
    """`text` as a refusal quotes it: its `repr`, cut to `QUOTED_MAX` characters with `...`."""
    shown = repr(text[:QUOTED_MAX])
    return shown + "..." if len(text) > QUOTED_MAX else shown


def _aliases() -> str:
    quoted = [f'"{name}"' for name in REFERENCE_ALIASES]
    return ", ".join(quoted[:-1]) + f" or {quoted[-1]}"


def ungraded_reason(case: Case, scoring: ScoringConfig, columns: Sequence[str] = ()) -> str:
    """Why no required scorer grades `case`, and what would: one sentence without a line number.

    Args:
        case: a case `applicable_scorers(case, scoring)` finds nothing for.
        scoring: the version's scoring (with the judge resolved, if it names one).
        columns: the file's reference columns (`Imported.reference_columns`): when it has one, the
            case left its cell empty, and the sentence says to fill it in rather than to add a
            column the file already has.
    """
    required = list(dict.fromkeys(scoring.required))
    needing = [name for name in required if name in NEEDS_REFERENCE]
    if needing and case.reference is None and columns:
        return (
            f"no reference for scorer {needing[0]}: its {_quoted(columns[0])} is empty: fill it "
            f"in, or choose a scorer that needs none ({scorers_without_reference()})"
        )
    if needing and case.reference is None:
        return (
            f"no reference for scorer {needing[0]}: add an {_aliases()} column (or reference), "
            f"or choose a scorer that needs none ({scorers_without_reference()})"
        )
    if needing:
        return (
            f"scorer {needing[0]} finds no number in the reference "
            f"{_quoted(case.reference or '')}: give a reference ending in the expected number, "
            "or choose another scorer"
        )
    named = ", ".join(required) or "none"
    return (
        f"none of the required scorers ({named}) applies to this case: give regex a pattern or "
        "json_schema a schema in the scoring settings, the case checks or expected_calls, a "
        f"judge whose criteria reach it, or require a scorer that grades an {_aliases()} column "
        f"({', '.join(sorted(NEEDS_REFERENCE))})"
    )


def ungraded_error(
    cases: Sequence[Case],
    lines: Sequence[int | None],
    scoring: ScoringConfig,
    columns: Sequence[str] = (),
) -> InvalidInputError | None:
    """The refusal of an import in which no case can be graded, or None when one can (or there
    are no cases: that has its own refusal).

    Args:
        cases: the imported cases, in file order.
        lines: the line each case starts on (parallel to `cases`; may be shorter, or empty when
            the importer does not know them).
        scoring: the version's scoring (with the judge resolved, if it names one).
        columns: the file's reference columns (`ungraded_reason`).

    Returns:
        An `InvalidInputError` with field `source`, `details["line"]` the first case's line (when
        known), `details["reason"]` what to add (without the way around it) and
        `details["allow"]` = `ALLOW_UNGRADED_FIELD`; its message is
        "line 1: <reason>; or set source.allow_ungraded to import it ungraded".
    """
    if not cases or any(applicable_scorers(case, scoring) for case in cases):
        return None
    first = cases[0]
    line = lines[0] if lines else None
    reason = ungraded_reason(first, scoring, columns)
    where = f"line {line}" if line is not None else f"case {first.case_id}"
    details: dict[str, object] = {"reason": reason, "allow": ALLOW_UNGRADED_FIELD}
    if line is not None:
        details["line"] = line
    return InvalidInputError(
        f"{where}: {reason}; nothing in the file can be graded (set {ALLOW_UNGRADED_FIELD} to "
        "import it ungraded)",
        field="source",
        **details,
    )


def ungraded_lines(
    cases: Sequence[Case],
    lines: Sequence[int | None],
    scoring: ScoringConfig,
    columns: Sequence[str] = (),
    most: int = UNGRADED_LINES_SHOWN,
) -> tuple[list[int], str | None]:
    """The lines of the imported cases no required scorer grades (the first `most`, in file
    order), and why the first of them is not graded (`ungraded_reason`); `([], None)` when every
    case is graded. A case whose line is not known (`lines` shorter) is counted by the caller but
    not listed.

    Args:
        cases: the imported cases, in file order.
        lines: the line each case starts on (parallel to `cases`; may be shorter, or empty).
        scoring: the version's scoring (with the judge resolved, if it names one).
        columns: the file's reference columns (`ungraded_reason`).
        most: how many lines to list at most.
    """
    found: list[int] = []
    reason: str | None = None
    for index, case in enumerate(cases):
        if applicable_scorers(case, scoring):
            continue
        if reason is None:
            reason = ungraded_reason(case, scoring, columns)
        line = lines[index] if index < len(lines) else None
        if line is not None and len(found) < most:
            found.append(line)
    return found, reason
