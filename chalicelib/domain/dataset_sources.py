"""Which importer reads a dataset source, and telling a file's kind from its name and text
(issue 13 scope 3).

`read(kind, text)` gives the `Imported` cases of any kind `POST /api/v1/datasets/{id}/versions`
takes in `source.format`: assay's own `jsonl`, `csv`, `gsm8k` (`importers`), `promptfoo`
(`promptfoo_tests`) and `inspect` (`inspect_samples`). `detect_kind` is what `assay import`
uses when no `--format` is given.

Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from enum import StrEnum

from chalicelib.domain import importers
from chalicelib.domain.importers import Imported
from chalicelib.domain.inspect_samples import parse_inspect
from chalicelib.domain.models import Case
from chalicelib.domain.promptfoo_tests import parse_promptfoo
from chalicelib.errors import InvalidInputError


class SourceKind(StrEnum):
    """The dataset source formats `read` understands (the values of `source.format`)."""

    JSONL = "jsonl"
    CSV = "csv"
    GSM8K = "gsm8k"
    PROMPTFOO = "promptfoo"
    INSPECT = "inspect"


_OWN_READERS: dict[SourceKind, Callable[..., Imported]] = {
    SourceKind.JSONL: importers.read_jsonl,
    SourceKind.CSV: importers.read_csv,
}
"""assay's own kinds, which take further columns as the reference (`import_grading`)."""

_READERS: dict[SourceKind, Callable[[str], Imported]] = {
    SourceKind.GSM8K: lambda text: Imported(importers.parse_gsm8k(text)),
    SourceKind.PROMPTFOO: parse_promptfoo,
    SourceKind.INSPECT: parse_inspect,
}


def read(
    kind: str,
    text: str,
    *,
    field: str = "kind",
    reference_from: Sequence[str] = (),
    explicit: bool = False,
) -> Imported:
    """The cases (and what grading them needs) of a source of the given kind.

    Args:
        reference_from: for `jsonl` and `csv`, the columns to take as a case's reference
            (`import_grading.reference_keys`); `explicit`: it is the one column the import
            names, which wins over the file's own `reference`. The other kinds have their own
            reference (GSM8K's final number, Inspect's `target`, promptfoo's assertions).

    Raises:
        InvalidInputError: naming `field` for an unknown kind; otherwise as the importer raises.
    """
    try:
        source_kind = SourceKind(kind)
    except ValueError:
        known = ", ".join(SourceKind)
        raise InvalidInputError(
            f"unknown source format {kind!r} (known: {known})", field=field
        ) from None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        line = text.count("\n", 0, exc.start) + 1
        raise importers.source_error(line, "holds a lone surrogate: the file is not text") from None
    if source_kind in _OWN_READERS:
        return _OWN_READERS[source_kind](text, tuple(reference_from), explicit=explicit)
    return _READERS[source_kind](text)


def parse(kind: str, text: str) -> list[Case]:
    """The cases alone of `read(kind, text)`."""
    return read(kind, text).cases


_INSPECT_KEYS = frozenset({"target", "choices", "id"})
"""Keys of an Inspect sample that assay's own jsonl does not have."""
_OWN_KEYS = frozenset({"case_id", "reference", "checks", "expected_calls"})
"""Keys of assay's own jsonl that an Inspect sample does not have."""


def _looks_inspect(keys: set[str]) -> bool:
    return bool(keys & _INSPECT_KEYS) and not keys & _OWN_KEYS


def detect_kind(name: str, text: str) -> SourceKind | None:
    """The kind of a file from its name and text, None when neither tells.

    `.yaml`/`.yml`: promptfoo. A name with `gsm8k` in it: gsm8k. `.json`: promptfoo when it is
    an object with `tests`, or a list whose first item has `vars` or `assert`; else inspect.
    `.jsonl` and `.csv`: inspect when the first record has Inspect's `target`, `choices` or `id`
    and none of assay's own `case_id`, `reference`, `checks`, `expected_calls`; else jsonl/csv.
    """
    lowered = name.lower()
    suffix = lowered.rsplit(".", 1)[-1] if "." in lowered else ""
    if suffix in ("yaml", "yml"):
        return SourceKind.PROMPTFOO
    if "gsm8k" in lowered:
        return SourceKind.GSM8K
    body = text.lstrip("\ufeff")
    if suffix == "json":
        try:
            value = json.loads(body)
        except (ValueError, RecursionError):
            return SourceKind.INSPECT
        if isinstance(value, dict) and "tests" in value:
            return SourceKind.PROMPTFOO
        first = value[0] if isinstance(value, list) and value else None
        if isinstance(first, dict) and ("vars" in first or "assert" in first):
            return SourceKind.PROMPTFOO
        return SourceKind.INSPECT
    if suffix == "jsonl":
        line = next((ln for ln in body.split("\n") if ln.strip()), "")
        try:
            first = json.loads(line)
        except (ValueError, RecursionError):
            return SourceKind.JSONL
        keys = set(first) if isinstance(first, dict) else set()
        return SourceKind.INSPECT if _looks_inspect(keys) else SourceKind.JSONL
    if suffix == "csv":
        header = {cell.strip() for cell in body.split("\n", 1)[0].split(",")}
        return SourceKind.INSPECT if _looks_inspect(header) else SourceKind.CSV
    return None
