"""Inspect datasets -> cases (issue 13 scope 3: "bring existing tests").

An Inspect dataset is a JSON array of samples, JSON lines (one sample a line) or CSV with a header
row; the text itself says which (`[` first: an array, `{` first: lines, else CSV). A sample's
fields, as Inspect's `FieldSpec` names them by default:

- `id` (text or number) -> `case_id`; without one, `case-` + sha256 of the input, as for jsonl.
- `input`: text -> `input`; a list of chat messages `{role, content}` (roles system, user,
  assistant, tool; content text or a list of `{type: "text", text}` parts) -> the LAST user
  message is `input` and the messages before it are `history`, as the agent is asked. Messages
  after the last user one are refused (there would be nothing left to answer).
- `target` (text, number, or a list of them) -> `reference`. With several targets the reference
  is the first, and `equals`, `contains` and `icontains` checks hold all of them, any of which
  may match (Inspect's `match`/`includes` take any target), so whichever of those scorers the
  version requires grades against every target.
- `choices` (a list, or in CSV a cell split on commas as Inspect splits it) -> a multiple-choice
  case: the choices are lettered A, B, C... and written under the question with how to answer
  (`ANSWER: <letter>`, as Inspect's `multiple_choice` asks), the target (letters, or a choice's
  own text) becomes the reference ("C", "A, C") and a `regex` check that the answer's last
  `ANSWER:` names exactly those letters; `regex` is then required. The choices are kept in
  `metadata["choices"]`.
- `metadata` (an object; in CSV its JSON text) -> `metadata`; a `tags` key in it (a list or a
  `;`-separated text) also gives the case its tags.
- Any other key (CSV: column) is kept in `metadata` too; Inspect would drop it.

`sandbox`, `files` and `setup` are refused: the case would run without the environment they
describe, and assay reads no file named by tenant data. Errors name the line (1-based; for a JSON
array, the line its sample starts on) and the field (`input[2].content`, `target`).

Pure: no I/O.
"""

from __future__ import annotations

import csv
import io
import json
import string
from collections.abc import Iterator
from typing import Any

from chalicelib.domain.importers import (
    CaseIds,
    Imported,
    build_case,
    derived_case_id,
    json_lines,
    source_error,
    tags_value,
    text_value,
)
from chalicelib.domain.models import Case
from chalicelib.domain.scorers import ScorerName

_SAMPLE_FIELDS = frozenset({"id", "input", "target", "choices", "metadata"})
_REFUSED_FIELDS = {
    "sandbox": "assay runs a case as its agent's own run, in no sandbox",
    "files": "assay reads no file named in a dataset",
    "setup": "assay runs no setup script from a dataset",
}
_ROLES = frozenset({"system", "user", "assistant", "tool"})
_LETTERS = string.ascii_uppercase

TEXT_SCORERS = (ScorerName.EQUALS.value, ScorerName.CONTAINS.value, ScorerName.ICONTAINS.value)
"""The scorers a sample's several targets become any-of checks for."""


# --- reading the records --------------------------------------------------------------------------


def _json_array(text: str) -> Iterator[tuple[int, Any]]:
    """(line the item starts on, item) for each item of a JSON array.

    Raises:
        InvalidInputError: text that is not one JSON array (naming the line of the problem).
    """
    decoder = json.JSONDecoder()

    def skip(index: int) -> int:
        while index < len(text) and text[index] in " \t\n\r":
            index += 1
        return index

    pos = skip(text.index("[") + 1)
    line, counted = 1, 0

    def line_at(index: int) -> int:
        nonlocal line, counted
        line += text.count("\n", counted, index)
        counted = index
        return line

    if pos < len(text) and text[pos] == "]":
        return
    while True:
        start = line_at(pos)
        try:
            item, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise source_error(
                exc.lineno, f"not valid JSON ({exc.msg} at column {exc.colno})"
            ) from None
        except RecursionError:
            raise source_error(start, "JSON nested too deeply to read") from None
        yield start, item
        pos = skip(pos)
        if pos < len(text) and text[pos] == ",":
            pos = skip(pos + 1)
            continue
        if pos < len(text) and text[pos] == "]":
            rest = text[pos + 1 :].strip()
            if rest:
                raise source_error(line_at(pos + 1), "text after the JSON array")
            return
        raise source_error(line_at(pos), "expected ',' or ']' after a sample")


def _csv_records(text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line the record starts on, {column: cell}) for each non-blank row of a CSV with a header;
    empty cells are left out.

    Raises:
        InvalidInputError: malformed CSV, or a row with more cells than the header.
    """
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [name.strip() for name in next(reader)]
    except StopIteration:
        return
    except csv.Error as exc:
        raise source_error(1, f"not valid CSV ({exc})") from exc
    if "input" not in header:
        raise source_error(1, "the header has no input column")
    start = reader.line_num + 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise source_error(start, f"not valid CSV ({exc})") from exc
        line, start = start, reader.line_num + 1
        if not any(cell.strip() for cell in row):
            continue
        if len(row) > len(header):
            raise source_error(line, f"{len(row)} cells but the header has {len(header)} columns")
        yield line, {name: cell for name, cell in zip(header, row, strict=False) if cell.strip()}


# --- fields -------------------------------------------------------------------------------------


def _content(value: Any, line: int, where: str) -> str:
    """A message's content as text: itself, or its text parts joined by blank lines."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise source_error(line, "must be text or a list of content parts", where)
    texts = []
    for m, part in enumerate(value):
        if not isinstance(part, dict) or part.get("type") != "text":
            kind = part.get("type") if isinstance(part, dict) else type(part).__name__
            raise source_error(line, f"a {kind!r} part: assay asks with text only", f"{where}[{m}]")
        if not isinstance(part.get("text"), str):
            raise source_error(line, "a text part has no text", f"{where}[{m}].text")
        texts.append(part["text"])
    return "\n\n".join(texts)


def _messages(value: list[Any], line: int) -> tuple[str, list[dict[str, Any]]]:
    """`(input, history)` from a list of chat messages: the last user turn and what precedes it.

    Raises:
        InvalidInputError: a message without a known role or text content, no user message, or
            messages after the last user one.
    """
    turns: list[dict[str, Any]] = []
    for k, message in enumerate(value):
        where = f"input[{k}]"
        if not isinstance(message, dict):
            raise source_error(line, "must be a chat message {role, content}", where)
        role = message.get("role")
        if role not in _ROLES:
            raise source_error(
                line, f"role must be one of {', '.join(sorted(_ROLES))}", f"{where}.role"
            )
        if message.get("content") is None:
            raise source_error(line, "a message needs content", f"{where}.content")
        turn = {"role": role, "content": _content(message["content"], line, f"{where}.content")}
        for key in ("tool_call_id", "tool_calls"):  # kept so a tool turn still names its call
            if message.get(key) is not None:
                turn[key] = message[key]
        turns.append(turn)
    users = [k for k, turn in enumerate(turns) if turn["role"] == "user"]
    if not users:
        raise source_error(line, "has no user message to ask the agent", "input")
    last = users[-1]
    if last < len(turns) - 1:
        raise source_error(
            line,
            "the last message must be the user's: assay asks the agent to answer it",
            f"input[{last + 1}]",
        )
    return turns[last]["content"], turns[:last]


def _targets(value: Any, line: int) -> list[str]:
    """A sample's targets as texts (none when absent or empty)."""
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    out = []
    for i, item in enumerate(items):
        where = f"target[{i}]" if isinstance(value, list) else "target"
        text = text_value(item, where, line)
        if text is not None and text.strip():
            out.append(text)
    return out


def _choices(value: Any, line: int) -> list[str] | None:
    """A sample's choices (Inspect's reading: a list, or text split on commas, else on spaces)."""
    if value is None:
        return None
    if isinstance(value, str):
        parts = value.split(",")
        if len(parts) == 1:
            parts = value.split()
        items: list[Any] = [part.strip() for part in parts]
    elif isinstance(value, list):
        items = value
    else:
        raise source_error(line, "must be a list of texts", "choices")
    choices = [text_value(item, f"choices[{i}]", line) or "" for i, item in enumerate(items)]
    if not 2 <= len(choices) <= len(_LETTERS):
        raise source_error(line, f"must hold 2 to {len(_LETTERS)} choices", "choices")
    return choices


def _letters(targets: list[str], choices: list[str], line: int) -> list[str]:
    """The letters the targets name: a letter in range, or a choice's own text."""
    if not targets:
        raise source_error(line, "a multiple-choice sample needs a target", "target")
    letters = []
    for target in targets:
        letter = target.strip().upper()
        if len(letter) == 1 and letter in _LETTERS[: len(choices)]:
            letters.append(letter)
        elif target in choices:
            letters.append(_LETTERS[choices.index(target)])
        else:
            raise source_error(
                line,
                f"{target!r} is neither a choice's letter (A to {_LETTERS[len(choices) - 1]}) "
                "nor one of the choices",
                "target",
            )
    return sorted(set(letters))


def multiple_choice_input(question: str, choices: list[str], many: bool) -> str:
    """The question put to the agent for a multiple-choice sample: how to answer, the question,
    then each choice under its letter."""
    letters = ", ".join(_LETTERS[: len(choices)])
    how = (
        "'ANSWER: X, Y', where X, Y are the letters of every correct choice"
        if many
        else "'ANSWER: X', where X is the letter of the correct choice"
    )
    listed = "\n".join(f"{_LETTERS[i]}) {choice}" for i, choice in enumerate(choices))
    return (
        f"Answer this multiple-choice question. End your reply with a line {how} "
        f"(one of {letters}).\n\n{question}\n\n{listed}"
    )


def answer_pattern(letters: list[str]) -> str:
    """A regex (searched with flag `i`) that passes when the answer's LAST `ANSWER:` names
    exactly `letters`, in order, separated by commas, spaces or "and"."""
    joined = r"\s*(?:,|and|&)?\s*".join(rf"\(?{letter}\)?" for letter in letters)
    return rf"\bANSWER\s*:\s*{joined}(?![A-Za-z0-9])(?![\s\S]*\bANSWER\s*:)"


def _metadata(value: Any, line: int) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            raise source_error(line, "must be a JSON object", "metadata") from None
    if not isinstance(value, dict):
        raise source_error(line, "must be a JSON object", "metadata")
    return value


def _sample(line: int, record: Any, required: list[str]) -> tuple[Case, bool]:
    """One sample's case, and whether its id was derived from its input."""
    if not isinstance(record, dict):
        raise source_error(line, f"expected a JSON object, got {type(record).__name__}")
    for key, why in _REFUSED_FIELDS.items():
        if record.get(key) not in (None, "", [], {}):
            raise source_error(line, f"is not imported ({why})", key)
    metadata = _metadata(record.get("metadata"), line)
    extra = {
        k: v for k, v in record.items() if k not in _SAMPLE_FIELDS and k not in _REFUSED_FIELDS
    }
    raw_input = record.get("input")
    if isinstance(raw_input, list):
        question, history = _messages(raw_input, line)
    else:
        question, history = text_value(raw_input, "input", line) or "", []
    if not question.strip():
        raise source_error(line, "is empty", "input")
    targets = _targets(record.get("target"), line)
    choices = _choices(record.get("choices"), line)
    fields: dict[str, Any] = {"history": history, "checks": []}
    if choices is not None:
        letters = _letters(targets, choices, line)
        fields["input"] = multiple_choice_input(question, choices, len(letters) > 1)
        fields["reference"] = ", ".join(letters)
        fields["checks"] = [
            {"scorer": ScorerName.REGEX.value, "pattern": answer_pattern(letters), "flags": "i"}
        ]
        metadata = {**metadata, "choices": choices}
        if ScorerName.REGEX.value not in required:
            required.append(ScorerName.REGEX.value)
    else:
        fields["input"] = question
        fields["reference"] = targets[0] if targets else None
        if len(targets) > 1:
            fields["checks"] = [{"scorer": name, "value": targets} for name in TEXT_SCORERS]
    fields["tags"] = tags_value(metadata.get("tags"), line, "metadata.tags")
    fields["metadata"] = {**extra, **metadata}
    given = text_value(record.get("id"), "id", line)
    given = given.strip() if given and given.strip() else None
    fields["case_id"] = given or derived_case_id(fields["input"])
    return build_case(fields, line), given is None


def parse_inspect(text: str) -> Imported:
    """Cases from an Inspect dataset (JSON array, JSON lines or CSV), as the module docstring says.

    Args:
        text: the whole file (a leading UTF-8 byte order mark is ignored).

    Returns:
        The cases in file order; `required` is `["regex"]` when a sample has choices.

    Raises:
        InvalidInputError: field "source", `details["line"]` and `details["source_field"]` naming
            the sample's line and field at fault, or an id used twice.
    """
    text = text.lstrip("\ufeff")
    head = text.lstrip()[:1]
    records: Iterator[tuple[int, Any]]
    if head == "[":
        records = _json_array(text)
    elif head == "{":
        records = json_lines(text)
    else:
        records = _csv_records(text)
    cases: list[Case] = []
    required: list[str] = []
    ids = CaseIds()
    for line, record in records:
        case, derived = _sample(line, record, required)
        ids.claim(case.case_id, line, derived=derived, hint="give each an id", source_field="id")
        cases.append(case)
    return Imported(cases, required)
