"""The JSON scorers: `json_valid` and `json_schema`, with what `json_schema` needs - reading
JSON written inside prose (`_embedded_json`) and keeping a tenant's schema from reaching outside
itself (`_outside_references`, `_no_retrieval`) (docs/reference/scorers.md).

Pure: `jsonschema` and `referencing` are imported by the checks that use them, so a Lambda's cold
start does not pay for them (issue 12).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from typing import Any

from chalicelib.domain.models import AgentAnswer, Case, ScoreResult
from chalicelib.domain.scorer_base import Scorer, ScorerName, Settings, _combine, check_params
from chalicelib.errors import InvalidInputError


def _parse_json(text: str) -> tuple[Any, str | None]:
    """(document, None) when `text` is JSON, else (None, why not). Strict: no code fences."""
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"answer is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
    except RecursionError:
        return None, "answer is JSON nested too deeply to read"


class JsonValidScorer(Scorer):
    """The whole answer parses as JSON (surrounding whitespace allowed, nothing else)."""

    name = ScorerName.JSON_VALID

    def applies(self, case: Case, settings: Settings) -> bool:
        return True

    def score(self, case: Case, answer: AgentAnswer, settings: Settings) -> ScoreResult:
        _, error = _parse_json(answer.answer)
        if error:
            return ScoreResult(scorer=self.name, passed=False, score=0.0, reason=error)
        return ScoreResult(scorer=self.name, passed=True, score=1.0, reason="answer is valid JSON")


def _json_path(path: Sequence[Any]) -> str:
    """A jsonschema error path as "$.items[0].name"."""
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


_REFERENCE_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")


@cache
def _no_retrieval() -> Any:
    """A registry that holds nothing and retrieves nothing: jsonschema adds the meta-schemas to it,
    so a schema's references resolve into itself or the meta-schemas only (never a URL or a file).

    jsonschema and referencing are imported on the first JSON Schema check, never at a cold start.
    """
    import referencing

    return referencing.Registry()


def _outside_references(schema: Any) -> list[str]:
    """The references in `schema` that point neither into it nor at a meta-schema (pure)."""
    from jsonschema_specifications import REGISTRY as META_SCHEMAS

    ids: set[str] = set()
    refs: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("$id", "id") and isinstance(value, str):
                    ids.add(value.split("#", 1)[0].rstrip("/"))
                elif key in _REFERENCE_KEYWORDS and isinstance(value, str):
                    refs.append(value)
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(schema)
    known = {uri.rstrip("/") for uri in META_SCHEMAS} | {
        uri.rstrip("#").rstrip("/") for uri in META_SCHEMAS
    }
    outside = []
    for ref in refs:
        base = ref.split("#", 1)[0].rstrip("/")
        if not base or base in ids or base in known or any(i.endswith("/" + base) for i in ids):
            continue
        outside.append(ref)
    return outside


EMBEDDED_JSON_TRIES = 50
"""How many `{` / `[` of an answer an `embedded` JSON check tries to read a JSON value from: an
answer of 1 MiB of unclosed brackets must not cost a worker more than that many reads."""


def _embedded_json(text: str) -> list[Any]:
    """The JSON objects and arrays written inside `text`, in order (prose, code fences and other
    text around them ignored; a value inside one found is not listed again).

    The whole text is read first; then a value is read from each `{` or `[` after the last one
    found, at most `EMBEDDED_JSON_TRIES` times.
    """
    whole, error = _parse_json(text)
    if error is None and isinstance(whole, dict | list):
        return [whole]
    decoder = json.JSONDecoder()
    found: list[Any] = []
    position = tries = 0
    while tries < EMBEDDED_JSON_TRIES:
        starts = [i for i in (text.find("{", position), text.find("[", position)) if i >= 0]
        if not starts:
            break
        start = min(starts)
        tries += 1
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            position = start + 1
            continue
        found.append(value)
        position = end
    return found


class JsonSchemaScorer(Scorer):
    """The answer is JSON valid against a JSON Schema (each check's `schema`, else settings').

    A check with `embedded: true` asks instead that the answer CONTAIN a JSON object or array
    valid against the schema, prose around it allowed (promptfoo's `contains-json`): any of the
    values `_embedded_json` finds may pass it.

    The schema's own `$schema` picks the draft (default: the latest `jsonschema` knows). A
    broken schema raises (`SchemaError`), so the attempt is `incomplete`, not `failed`: the
    fault is the check's, not the agent's.

    A schema is tenant input: its references (`$ref`, `$dynamicRef`, `$recursiveRef`) may point
    into the schema itself (`#...`, or a `$id` it defines) or at the JSON Schema meta-schemas,
    never elsewhere - jsonschema's default would fetch any URL (or `file:` path) the schema names,
    past every egress check (issue 9). Saving refuses other references; validating uses a registry
    that retrieves nothing, so one that slipped through is unresolvable (the attempt incomplete).
    """

    name = ScorerName.JSON_SCHEMA

    def applies(self, case: Case, settings: Settings) -> bool:
        return bool(check_params(case, self.name)) or settings.get("schema") is not None

    def check_settings(self, settings: Settings, field: str) -> None:
        schema = settings.get("schema")
        if schema is None:
            return
        import jsonschema.validators
        from jsonschema.exceptions import SchemaError

        try:
            jsonschema.validators.validator_for(schema).check_schema(schema)
        except SchemaError as exc:
            raise InvalidInputError(
                f"bad JSON schema: {exc.message}", field=f"{field}.schema"
            ) from exc
        outside = _outside_references(schema)
        if outside:
            raise InvalidInputError(
                f"the JSON schema refers to {outside[0]!r}, outside itself: a schema may refer "
                "only into itself ('#/...' or a $id it defines) or to the JSON Schema "
                "meta-schemas; assay never fetches a schema",
                field=f"{field}.schema",
            )

    def check_params(self, params: Settings, field: str) -> None:
        if params.get("schema") is None:
            raise InvalidInputError("a json_schema check needs a schema", field=f"{field}.schema")
        if not isinstance(params.get("embedded", False), bool):
            raise InvalidInputError("embedded must be true or false", field=f"{field}.embedded")
        self.check_settings(params, field)

    def score(self, case: Case, answer: AgentAnswer, settings: Settings) -> ScoreResult:
        checks = check_params(case, self.name) or [{"schema": settings.get("schema")}]
        whole, error = _parse_json(answer.answer)
        embedded: list[Any] | None = None
        verdicts = []
        for params in checks:
            schema = params.get("schema")
            if schema is None:
                raise ValueError("a json_schema check has no schema")
            if params.get("embedded") is True:
                if embedded is None:
                    embedded = _embedded_json(answer.answer)
                verdicts.append(self._any_matches(schema, embedded))
            elif error:
                verdicts.append((False, error))
            else:
                found = _schema_error(schema, whole)
                verdicts.append((True, "answer matches the schema") if found is None else found)
        return _combine(self.name, verdicts)

    @staticmethod
    def _any_matches(schema: Any, values: list[Any]) -> tuple[bool, str]:
        """(passed, reason): whether any of the JSON values found in an answer matches."""
        if not values:
            return False, "the answer holds no JSON object or array"
        problems = []
        for value in values:
            found = _schema_error(schema, value)
            if found is None:
                return True, "the answer holds JSON that matches the schema"
            problems.append(found[1])
        many = f" (the first of {len(values)} JSON values in it)" if len(values) > 1 else ""
        return False, f"{problems[0]}{many}"


def _schema_error(schema: Any, document: Any) -> tuple[bool, str] | None:
    """None when `document` is valid against `schema`, else (False, where and why not).

    Raises:
        jsonschema.exceptions.SchemaError: a broken schema (the attempt is then `incomplete`).
    """
    import jsonschema.validators
    from jsonschema.exceptions import best_match

    validator_cls = jsonschema.validators.validator_for(schema)
    validator_cls.check_schema(schema)
    worst = best_match(validator_cls(schema, registry=_no_retrieval()).iter_errors(document))
    if worst is None:
        return None
    where = _json_path(worst.absolute_path)
    return False, f"answer does not match the schema at {where}: {worst.message}"
