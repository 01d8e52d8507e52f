"""Dataset sources -> `list[Case]`, each case with an id stable across versions
(docs/guides/datasets.md).

assay's own source kinds, all given as TEXT (the caller reads files or uploads; this module does
no I/O), and the pieces every importer shares (`source_error`, `CaseIds`, `build_case`,
`Imported`); promptfoo test files and Inspect datasets are read by `promptfoo_tests` and
`inspect_samples`, and `dataset_sources` picks the importer of a kind.

- `jsonl`: one JSON object per line, with `Case`'s fields (`input` may be spelled `question`);
  keys `Case` does not have go into `metadata`.
- `csv`: a header row; columns `case_id`, `input` (or `question`), `reference`, `tags`
  (`;`-separated), and `counter_example`, `note`, `split` when present; every other column
  goes into `metadata`.
- For both, the caller may name further columns to take as the reference (`reference_from`):
  an explicit column, or `answer`, `target`, `expected` when a required scorer uses a reference.
  Which, and in which order, is `import_grading`'s rule (`import_grading.reference_keys`).
- `gsm8k`: the GSM8K lines, `{"question", "answer"}` as in `test.jsonl` (the answer is a
  worked solution ending `#### N`) or `{"question", "ground_truth"}` as in
  `example_model_solutions.jsonl` (ending `A: N`). The reference is that final number; the
  worked solution is kept in `metadata["solution"]`. The models' recorded answers on the
  second shape are recordings, not case data, and are ignored here.

Case ids are stable so runs on different versions can be compared case by case
(docs/concepts/verdicts.md): a given id is kept; a GSM8K question without one gets
`gsm8k_case_id(question)`; any other case without one gets `case-` + the first 12 hex digits of
sha256 of its input. Two cases with one id in a source are refused.

Errors are `InvalidInputError` with `field="source"`, `details["line"]` = the 1-based
line of the source (for CSV, the line the record starts on; the header is line 1) and, where one
field of the file is at fault, `details["source_field"]` naming it (`tags`, `tests[2].assert[0]`).
A jsonl line or a CSV header with Inspect's `target` and no `reference` is refused, naming the
`inspect` kind: read as assay's own jsonl it would make cases nothing grades.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from chalicelib.domain.judge_rules import Criterion
from chalicelib.domain.models import Case
from chalicelib.domain.scorers import final_number, format_number, validate_checks
from chalicelib.errors import InvalidInputError

SOURCE_FIELD = "source"
"""The `field` every import error names: the dataset text as a whole (its `line` says where)."""

_ID_HEX = 12
"""Hex digits of sha256 in a derived case id: 48 bits, so collisions in one dataset are
negligible."""

_CASE_FIELDS = frozenset(Case.model_fields)


@dataclass(frozen=True)
class Imported:
    """What an importer read from a source: its cases, and what grading them needs."""

    cases: list[Case]
    """The cases in source order."""
    required: list[str] = field(default_factory=list)
    """Scorers the file's own expectations need (a promptfoo assertion, an Inspect sample's
    choices), in first-use order: the version's `scoring.required` gets them added."""
    criteria: list[Criterion] = field(default_factory=list)
    """Judge criteria the file defines (promptfoo's `llm-rubric`), each scoped to the tag its cases
    carry: the judge the version names must have every one of them."""
    lines: list[int | None] = field(default_factory=list)
    """The 1-based line each case starts on, parallel to `cases` (empty when the importer does not
    say): what a refusal of the whole import names."""
    reference_columns: list[str] = field(default_factory=list)
    """The columns (jsonl keys) of the file that give a case its reference, in order of preference,
    that the file has at all: a case without a reference then left its cell empty, and what it
    lacks is a value, not a column."""


def _in_order(keys: tuple[str, ...], present: set[str]) -> list[str]:
    """The reference columns `present` in a file: `keys` in their order, then `reference`."""
    return [name for name in dict.fromkeys((*keys, "reference")) if name in present]


def _sha_hex(text: str) -> str:
    # "surrogatepass": a lone surrogate (JSON's "\ud800") must reach `build_case`, which refuses
    # it naming the line, rather than fail here; every real text hashes as plain UTF-8.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_ID_HEX]


def gsm8k_case_id(question: str) -> str:
    """The stable id of a GSM8K question: `gsm8k-` + first 12 hex of sha256(question, UTF-8).

    The exact question text is hashed (no trimming), so the same question has the same id in
    every dataset version and in the models' recordings, which are joined to cases by it.
    """
    return "gsm8k-" + _sha_hex(question)


def derived_case_id(input_text: str) -> str:
    """The id of a jsonl/csv case that came without one: `case-` + first 12 hex of sha256(input)."""
    return "case-" + _sha_hex(input_text)


def source_error(
    line: int | None, message: str, source_field: str | None = None
) -> InvalidInputError:
    """The 400 of a source that cannot be imported: `field` "source", `details["line"]` (1-based;
    left out when not known) and `details["source_field"]` (the file's field at fault, if one is).
    The message starts with both: "line 12: tests[2].assert[0].type: ..."."""
    where = [f"line {line}"] if line is not None else []
    if source_field:
        where.append(source_field)
    details: dict[str, Any] = {}
    if line is not None:
        details["line"] = line
    if source_field:
        details["source_field"] = source_field
    return InvalidInputError(": ".join([*where, message]), field=SOURCE_FIELD, **details)


def _error(line: int, message: str, source_field: str | None = None) -> InvalidInputError:
    return source_error(line, message, source_field)


class _KeyTwice(Exception):
    """An object of a line names `key` twice."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object from its pairs; raises `_KeyTwice` for a key given twice (JSON would keep
    the last silently: `{"reference": "a", "reference": "b"}` is an error, not "b")."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _KeyTwice(key)
        out[key] = value
    return out


def json_lines(text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line of a JSON-lines text.

    Raises:
        InvalidInputError: a line that is not JSON, not a JSON object, or names a key twice in
            one object (`source_field` that key).
    """
    # split("\n") rather than splitlines(): a U+2028 inside a JSON string must not split a line.
    for number, line in enumerate(text.lstrip("\ufeff").split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line, object_pairs_hook=_unique_keys)
        except _KeyTwice as exc:
            raise _error(number, "names this key twice: keep one", exc.key[:200]) from None
        except json.JSONDecodeError as exc:
            raise _error(number, f"not valid JSON ({exc.msg} at column {exc.colno})") from exc
        except RecursionError:
            raise _error(number, "JSON nested too deeply to read") from None
        if not isinstance(value, dict):
            raise _error(number, f"expected a JSON object, got {type(value).__name__}")
        yield number, value


def text_value(value: Any, name: str, line: int | None) -> str | None:
    """A scalar source value as text (numbers as written: a reference 18 is "18").

    Raises:
        InvalidInputError: a value that is not a string or a number (`source_field` = `name`).
    """
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise source_error(line, f"must be text, got {type(value).__name__}", name)
    return str(value)


def tags_value(value: Any, line: int | None, name: str = "tags") -> list[str]:
    """Tags from a list or a `;`-separated string; blanks dropped, order kept, repeats removed.

    Raises:
        InvalidInputError: anything else (`source_field` = `name`).
    """
    if value is None:
        return []
    if isinstance(value, str):
        parts = value.split(";")
    elif isinstance(value, list) and all(isinstance(tag, str) for tag in value):
        parts = value
    else:
        raise source_error(line, "must be a list of strings or a ';'-separated string", name)
    return list(dict.fromkeys(tag.strip() for tag in parts if tag.strip()))


def build_case(fields: dict[str, Any], line: int | None, where: str = "") -> Case:
    """A `Case` from already-mapped fields, with pydantic's complaints named by line and field.

    Args:
        fields: `Case`'s fields.
        line: the line the record starts on (None when not known).
        where: the record's own path in the file (`tests[2]`), put before a field at fault.

    Raises:
        InvalidInputError: an empty input, a field of the wrong shape, or a bad check.
    """
    prefix = f"{where}." if where else ""
    if not (fields.get("input") or "").strip():
        raise source_error(line, "is empty", f"{prefix}input")
    try:
        case = Case(**fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        path = ".".join(str(part) for part in first["loc"]) or "case"
        raise source_error(line, first["msg"], f"{prefix}{path}") from exc
    try:
        validate_checks(case)
    except InvalidInputError as exc:
        raise source_error(line, exc.message, f"{prefix}{exc.field}") from exc
    return case


class CaseIds:
    """Case ids seen so far in one source, to refuse a repeat by the line that repeats it."""

    def __init__(self) -> None:
        self._lines: dict[str, int | None] = {}

    def claim(
        self,
        case_id: str,
        line: int | None,
        *,
        derived: bool,
        hint: str = "give each a case_id to keep both",
        source_field: str = "case_id",
    ) -> None:
        """Record `case_id` for `line`; `derived` says it came from the input, for the `hint`.

        Raises:
            InvalidInputError: the id was claimed already (naming the first line holding it).
        """
        if case_id in self._lines:
            first = self._lines[case_id]
            said = f"first on line {first}" if first is not None else "used before"
            more = f"; the same input, so {hint}" if derived else ""
            raise source_error(line, f"duplicate case_id {case_id!r} ({said}{more})", source_field)
        self._lines[case_id] = line


def _given_id(value: Any, line: int) -> str | None:
    """A source's case id, trimmed; None when absent or blank."""
    text = text_value(value, "case_id", line)
    return text.strip() if text and text.strip() else None


def _reference_error(line: int, name: str) -> InvalidInputError:
    return _error(line, "the header has no such column (named as the reference column)", name)


def _not_inspect(has_target: bool, has_reference: bool, line: int) -> None:
    """Refuse Inspect's `target` where assay's own kinds read `reference` (issue 13: it used to
    land in `metadata`, leaving every case ungraded)."""
    if has_target and not has_reference:
        raise source_error(
            line,
            "is Inspect's field: import the file with format inspect (or call it reference)",
            "target",
        )


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _jsonl_reference(
    obj: dict[str, Any], reference_from: tuple[str, ...], explicit: bool, line: int
) -> dict[str, Any]:
    """Put the value of the first `reference_from` key `obj` gives under `reference` (see
    `read_jsonl`), in place; returns what goes into `metadata` instead (the line's own
    `reference` when an explicit key displaces it)."""
    if explicit:
        name = reference_from[0]
        if name == "reference":
            return {}
        own = obj.pop("reference", None)
        value = obj.pop(name, None)
        if not _blank(value):
            obj["reference"] = text_value(value, name, line)
        return {"reference": own} if own is not None else {}
    if obj.get("reference") is not None:
        return {}
    for name in reference_from:
        if not _blank(obj.get(name)):
            obj["reference"] = text_value(obj.pop(name), name, line)
            break
    return {}


def parse_jsonl(
    text: str, reference_from: Sequence[str] = (), *, explicit: bool = False
) -> list[Case]:
    """The cases alone of `read_jsonl`."""
    return read_jsonl(text, reference_from, explicit=explicit).cases


def read_jsonl(
    text: str, reference_from: Sequence[str] = (), *, explicit: bool = False
) -> Imported:
    """Cases from JSON lines, one object per non-blank line, with the line each starts on.

    Each object has `Case`'s fields: `input` (or `question`), and optionally `case_id`,
    `history`, `reference`, `counter_example`, `tags` (list or `;`-separated), `checks`,
    `expected_calls`, `split`, `note`, `metadata`. Any other key is kept in `metadata`
    (an explicit `metadata` object wins on a clash). Numbers given for `case_id`,
    `reference` or `counter_example` are read as their text.

    The reference: with `explicit`, the key `reference_from[0]` is the reference (a `reference`
    the line also gives is kept in `metadata`); otherwise the line's own `reference`, else the
    first key of `reference_from` (in that order) the line gives a non-blank value for. A key
    taken as the reference is not kept in `metadata`.

    Args:
        text: the whole source.
        reference_from: keys to take as the reference (`import_grading.reference_keys`).
        explicit: `reference_from` is the one key the import names; it wins over `reference`.

    Returns:
        The cases in source order, and their lines.

    Raises:
        InvalidInputError: a line that is not a JSON object, an empty input, a field of the
            wrong shape, a bad check, a case_id already used, or Inspect's `target` where
            nothing takes it as the reference; the message and `details["line"]` name the line.
    """
    keys = tuple(reference_from)
    cases: list[Case] = []
    lines: list[int | None] = []
    seen: set[str] = set()
    ids = CaseIds()
    for line, obj in json_lines(text):
        obj = dict(obj)
        seen.update(name for name in (*keys, "reference") if name in obj)
        if "input" not in obj and "question" in obj:
            obj["input"] = obj.pop("question")
        displaced: dict[str, Any] = {}
        if keys:
            displaced = _jsonl_reference(obj, keys, explicit, line)
        else:
            _not_inspect("target" in obj, "reference" in obj, line)
        extra = {key: obj.pop(key) for key in list(obj) if key not in _CASE_FIELDS}
        extra.update(displaced)
        metadata = obj.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise _error(line, "must be a JSON object", "metadata")
        obj["metadata"] = {**extra, **metadata}
        obj["input"] = text_value(obj.get("input"), "input", line)
        for name in ("reference", "counter_example"):
            if name in obj:
                obj[name] = text_value(obj[name], name, line)
        obj["tags"] = tags_value(obj.get("tags"), line)
        given = _given_id(obj.get("case_id"), line)
        obj["case_id"] = given or derived_case_id(obj["input"] or "")
        case = build_case(obj, line)
        ids.claim(case.case_id, line, derived=given is None)
        cases.append(case)
        lines.append(line)
    return Imported(cases, lines=lines, reference_columns=_in_order(keys, seen))


_CSV_COLUMNS = ("case_id", "input", "reference", "counter_example", "tags", "note", "split")
"""CSV columns that are `Case` fields; every other column goes into `metadata`."""


def parse_csv(
    text: str, reference_from: Sequence[str] = (), *, explicit: bool = False
) -> list[Case]:
    """The cases alone of `read_csv`."""
    return read_csv(text, reference_from, explicit=explicit).cases


def _csv_reference(
    cells: dict[str, str], reference_from: tuple[str, ...], explicit: bool
) -> tuple[str | None, str | None]:
    """(the row's reference, the column it came from) by `read_csv`'s rule; (None, None) when it
    has none."""
    names = reference_from if explicit else ("reference", *reference_from)
    for name in names:
        if cells.get(name, "").strip():
            return cells[name], name
    return None, None


def _csv_problem(exc: csv.Error) -> str:
    """What is wrong with a CSV record, in words, from the `csv` module's error of a strict read:
    an unterminated quote (`unexpected end of data`) is "a quoted field is not closed"."""
    said = str(exc)
    if "unexpected end of data" in said:
        return 'a quoted field is not closed (end it with ", and write "" for a quote inside it)'
    if "expected after" in said:
        return (
            'a quoted field goes on after its closing quote (write "" for a quote inside a '
            "quoted field)"
        )
    return f"not valid CSV ({said})"


def read_csv(text: str, reference_from: Sequence[str] = (), *, explicit: bool = False) -> Imported:
    """Cases from CSV with a header row, with the line each record starts on.

    Columns: `input` (or `question`) is required; `case_id`, `reference`, `counter_example`,
    `tags` (`;`-separated), `note` and `split` fill those fields; any other column is kept as
    text in `metadata`. An empty cell is an absent value (no reference, a derived id, no
    metadata key).

    The reference: with `explicit`, the column `reference_from[0]` is the reference (the file's
    own `reference` column is then kept in `metadata`); otherwise the row's `reference` cell,
    else the first column of `reference_from` (in that order) with a non-empty cell in the row.
    A column taken as a row's reference is not kept in its `metadata`.

    Args:
        text: the whole source (a leading UTF-8 BOM is ignored).
        reference_from: columns to take as the reference (`import_grading.reference_keys`).
        explicit: `reference_from` is the one column the import names; it wins over `reference`.

    Returns:
        The cases in source order, and their lines.

    Raises:
        InvalidInputError: a quoted field not closed, or text after a closing quote (the csv
            module's strict reading), a column named twice (line 1, the cells of the second would
            silently replace the first's), no `input`/`question` column (line 1), no column an
            explicit reference names (line 1), Inspect's `target` where nothing takes it as the
            reference (line 1), a row with more cells than the header, an empty input, a bad
            split, or a case_id already used; the message and `details["line"]` name the line the
            record starts on.
    """
    # strict: a quote left open (or text after a closing quote) is refused, naming the line the
    # record starts on, rather than read as one field running to the end of the file.
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff"), newline=""), strict=True)
    try:
        header = [name.strip() for name in next(reader)]
    except StopIteration:
        return Imported([])
    except csv.Error as exc:
        raise _error(1, _csv_problem(exc)) from exc
    named: set[str] = set()
    for name in header:
        if name in named:
            raise _error(1, "the header names this column twice: rename or remove one", name[:200])
        if name:
            named.add(name)
    if "input" not in header and "question" in header:
        header = ["input" if name == "question" else name for name in header]
    if "input" not in header:
        raise _error(1, "the header has no input (or question) column")
    keys = tuple(reference_from)
    if explicit and keys and keys[0] not in header:
        raise _reference_error(1, keys[0])
    if not keys:
        _not_inspect("target" in header, "reference" in header, 1)

    cases: list[Case] = []
    lines: list[int | None] = []
    ids = CaseIds()
    start = reader.line_num + 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise _error(start, _csv_problem(exc)) from exc
        line, start = start, reader.line_num + 1
        if not any(cell.strip() for cell in row):
            continue
        if len(row) > len(header):
            raise _error(line, f"{len(row)} cells but the header has {len(header)} columns")
        cells = dict(zip(header, row, strict=False))  # short rows: missing cells are absent
        fields: dict[str, Any] = {
            name: cells[name]
            for name in _CSV_COLUMNS
            if name != "reference" and cells.get(name, "").strip()
        }
        reference, taken = _csv_reference(cells, keys, explicit)
        if reference is not None:
            fields["reference"] = reference
        fields["tags"] = tags_value(fields.get("tags"), line)
        fields["metadata"] = {
            name: value
            for name, value in cells.items()
            if name
            and name != taken
            and (name not in _CSV_COLUMNS or (name == "reference" and explicit))
            and value.strip()
        }
        fields["input"] = cells.get("input", "")
        given = _given_id(cells.get("case_id"), line)
        fields["case_id"] = given or derived_case_id(fields["input"])
        case = build_case(fields, line)
        ids.claim(case.case_id, line, derived=given is None)
        cases.append(case)
        lines.append(line)
    return Imported(cases, lines=lines, reference_columns=_in_order(keys, set(header)))


def _final_answer(solution: str) -> str | None:
    """The reference of a GSM8K solution: its final number, written plainly ("2,125" -> "2125")."""
    number = final_number(solution)
    return format_number(number) if number is not None else None


def parse_gsm8k(text: str) -> list[Case]:
    """Cases from GSM8K JSON lines.

    Each line has `question` and either `answer` (test.jsonl: a worked solution ending
    `#### N`) or `ground_truth` (example_model_solutions.jsonl: ending `A: N`). The case's
    input is the question as given; its reference is the final number after the last marker,
    as plain digits ("#### 1,600" -> "1600"); `metadata["solution"]` keeps the full worked
    solution. The id is `case_id` if the line gives one, else `gsm8k_case_id(question)`.
    Other keys (the models' recorded answers with the authors' `is_correct`) are not case
    data and are dropped: nothing of them may reach scoring.

    Args:
        text: the whole source.

    Returns:
        The cases in source order.

    Raises:
        InvalidInputError: a line that is not a JSON object, an empty question, no
            `answer`/`ground_truth`, a solution with no final number, or a repeated question
            (hence case_id); the message and `details["line"]` name the line.
    """
    cases: list[Case] = []
    ids = CaseIds()
    for line, obj in json_lines(text):
        question = text_value(obj.get("question"), "question", line) or ""
        solution = obj.get("answer", obj.get("ground_truth"))
        if not isinstance(solution, str) or not solution.strip():
            raise _error(line, "a GSM8K line needs an answer (or ground_truth) solution", "answer")
        reference = _final_answer(solution)
        if reference is None:
            raise _error(line, "the solution has no final number", "answer")
        given = _given_id(obj.get("case_id"), line)
        case = build_case(
            {
                "case_id": given or gsm8k_case_id(question),
                "input": question,
                "reference": reference,
                "metadata": {"solution": solution},
            },
            line,
        )
        ids.claim(case.case_id, line, derived=given is None)
        cases.append(case)
    return cases
