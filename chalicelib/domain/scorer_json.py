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
from chalicelib.domain.redaction import Known, redact, redact_value, value_holds_placeholder
from chalicelib.domain.redaction_patterns import (
    pattern_holds_placeholder,
    pattern_placeholders_literal,
)
from chalicelib.domain.scorer_base import (
    AnswerSecrets,
    Scorer,
    ScorerName,
    Settings,
    _combine,
    check_params,
)
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

    def score(
        self, case: Case, answer: AgentAnswer, settings: Settings, known: Sequence[Known] = ()
    ) -> ScoreResult:
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

    A schema kept redacted (a `const`, an `enum` or a `pattern` named a secret, saved as
    `[REDACTED:aws_access_key]`) is checked in the redacted space, as a text check is: the answer's
    JSON is redacted by the same rules first (`_whole_matches`). A failure's reason never reads as
    a pass. When the answer holds a secret (by shape, or an organization's stored value), a
    failure's reason names where the answer fails and the keyword, never the value (jsonschema's
    message quotes it, and a value may be a piece of a secret: `{"tail": "Qx7Lm2Pz9Wk3Hh"}`).
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

    def score(
        self, case: Case, answer: AgentAnswer, settings: Settings, known: Sequence[Known] = ()
    ) -> ScoreResult:
        checks = check_params(case, self.name) or [{"schema": settings.get("schema")}]
        # The answer's secrets as given, and as redacted by shape (a schema kept redacted is
        # checked so): a failing value that touches one is not quoted.
        secrets = (
            AnswerSecrets.of(answer.answer, known),
            AnswerSecrets.of(redact(answer.answer), known),
        )
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
                verdicts.append(_any_matches(schema, embedded, secrets))
            elif error:
                verdicts.append((False, error))
            else:
                verdicts.append(_whole_matches(schema, whole, secrets))
        return _combine(self.name, verdicts)


_BY_KIND = " (secrets compared by their kind, with the answer's secrets redacted)"
_NOT_QUOTED = (
    " (the answer's values are not quoted: they hold a secret, and redacted as every reason is "
    "kept they could seem to match)"
)
_NOT_QUOTED_PIECE = (
    " (the answer's values are not quoted: the answer holds a secret, and a value may be a piece "
    "of it)"
)


def schema_holds_placeholder(schema: Any) -> bool:
    """Whether a JSON Schema was kept redacted: a string in it holds a placeholder, or a `pattern`
    keyword holds one escaped (`\\[REDACTED:jwt\\]`)."""
    if value_holds_placeholder(schema):
        return True
    if isinstance(schema, dict):
        return any(
            (key == "pattern" and isinstance(value, str) and pattern_holds_placeholder(value))
            or schema_holds_placeholder(value)
            for key, value in schema.items()
        )
    if isinstance(schema, list):
        return any(schema_holds_placeholder(item) for item in schema)
    return False


def schema_in_redacted_space(schema: Any) -> Any:
    """`schema` as it is checked against an answer redacted: each `pattern` keyword's placeholders
    match themselves as written (`redaction_patterns.pattern_placeholders_literal`); `const`,
    `enum` and the rest compare the placeholder's text as it is."""
    if isinstance(schema, dict):
        return {
            key: pattern_placeholders_literal(value)
            if key == "pattern" and isinstance(value, str)
            else schema_in_redacted_space(value)
            for key, value in schema.items()
        }
    if isinstance(schema, list):
        return [schema_in_redacted_space(item) for item in schema]
    return schema


def _whole_matches(
    schema: Any, document: Any, secrets: tuple[AnswerSecrets, AnswerSecrets] | None = None
) -> tuple[bool, str]:
    """(passed, reason) of the whole answer, read as JSON `document`, against `schema`.

    A schema kept redacted (`schema_holds_placeholder`) is checked against the document redacted,
    so a value holding a secret of the placeholder's kind stands where the placeholder does; its
    reason then speaks of the redacted document, as kept. Otherwise the document is checked as
    given, and a failure's reason names where it fails without quoting it when the document
    redacted would match, or when the value that fails holds a secret (as kept, the reason could
    read as a pass), or when the value that fails may be a piece of a secret the answer holds
    (`secrets`: the answer's, as given and as redacted by shape; `_touches_secret`).
    """
    if schema_holds_placeholder(schema):
        found = _schema_error(
            schema_in_redacted_space(schema),
            redact_value(document),
            secrets=secrets[1] if secrets else None,
        )
        if found is None:
            return True, "answer matches the schema" + _BY_KIND
        return False, found[1] + _BY_KIND
    found = _schema_error(
        schema, document, quoting_secrets=False, secrets=secrets[0] if secrets else None
    )
    if found is None:
        return True, "answer matches the schema"
    redacted = redact_value(document)
    if redacted != document and _schema_error(schema, redacted) is None:
        return False, f"answer does not match the schema{_NOT_QUOTED}"
    return found


def _any_matches(
    schema: Any, values: list[Any], secrets: tuple[AnswerSecrets, AnswerSecrets] | None = None
) -> tuple[bool, str]:
    """(passed, reason): whether any of the JSON values found in an answer matches `schema`, each
    compared as `_whole_matches` compares a whole answer (`secrets` as there)."""
    if not values:
        return False, "the answer holds no JSON object or array"
    problems = []
    for value in values:
        ok, reason = _whole_matches(schema, value, secrets)
        if ok:
            return True, reason.replace("answer matches", "the answer holds JSON that matches", 1)
        problems.append(reason)
    many = f" (the first of {len(values)} JSON values in it)" if len(values) > 1 else ""
    return False, f"{problems[0]}{many}"


def _schema_error(
    schema: Any,
    document: Any,
    *,
    quoting_secrets: bool = True,
    secrets: AnswerSecrets | None = None,
) -> tuple[bool, str] | None:
    """None when `document` is valid against `schema`, else (False, where and why not).

    With `quoting_secrets` False, a failure whose value holds a secret is named by where it is and
    the keyword it fails (`at $.key (pattern)`), not by jsonschema's message, which quotes the
    value: redacted as every reason is kept, it could read as a match. Nor is a failing value
    that may be a piece of one of `secrets` (the secrets of the text `document` was read from:
    `_touches_secret`).

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
    if not quoting_secrets and redact_value(worst.instance) != worst.instance:
        return (
            False,
            f"answer does not match the schema at {where} ({worst.validator}){_NOT_QUOTED}",
        )
    if secrets is not None and _touches_secret(worst.instance, secrets):
        return (
            False,
            f"answer does not match the schema at {where} ({worst.validator}){_NOT_QUOTED_PIECE}",
        )
    return False, f"answer does not match the schema at {where}: {worst.message}"


def _scalars(value: Any) -> list[str]:
    """Every key and scalar inside a JSON value, written as it is inside JSON text (a string
    without its quotes)."""
    if isinstance(value, dict):
        return [part for k, v in value.items() for part in (*_scalars(str(k)), *_scalars(v))]
    if isinstance(value, list):
        return [part for item in value for part in _scalars(item)]
    text = json.dumps(value, ensure_ascii=False)
    return [text[1:-1] if isinstance(value, str) else text]


def _touches_secret(instance: Any, secrets: AnswerSecrets) -> bool:
    """Whether a JSON value read from `secrets.text` may be (or hold) a piece of one of its
    secrets: a key or scalar of it is written where a secret is, or is found nowhere in the text
    as written (escaped some other way: it cannot be placed, so it is not quoted)."""
    if not secrets.spans:
        return False
    for part in _scalars(instance):
        if not part:
            continue
        at = secrets.text.find(part)
        if at == -1:
            return True
        while at != -1:
            if secrets.touches(at, at + len(part)):
                return True
            at = secrets.text.find(part, at + 1)
    return False
