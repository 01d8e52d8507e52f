"""promptfoo test files -> cases (issue 13 scope 3: "bring existing tests").

A promptfoo test file is YAML or JSON: a list of tests, or an object whose `tests:` is that list
(a whole `promptfooconfig.yaml` is fine: its `prompts`, `providers` and other keys are not read,
because in assay the agent under test brings its own prompt and model; `defaultTest:` is read).
Each test is `{description?, vars?, assert?, metadata?}` and becomes one case (or several, see
"lists"):

- **input**: the single var when there is one; else the first of the vars `input`, `question`,
  `prompt`, `query`, `message`; else the vars as JSON (sorted keys). A var that is not text is
  written as JSON. Every var is kept in `metadata["vars"]` when there are several (an `http` agent
  receives the case's metadata), and `defaultTest.vars` lie under each test's own.
- **lists**: a var whose value is a list makes one test per value, as promptfoo does (several
  such vars: every combination, in order).
- **case_id**: the `description` (whitespace runs made one space; ` [k]` added, 1-based, when its
  vars expand into several cases); without one, `case-` + sha256 of the input as for jsonl.
- **assert** (`defaultTest.assert` first, then the test's): each assertion becomes a check of our
  scorers, as `ASSERTIONS` lists. `{{ var }}` in an assertion's value is the var's text, as
  promptfoo renders it; any other template syntax is refused. `metric` becomes a tag; `weight` is
  accepted (every assertion must pass in assay, whatever its weight).
- **llm-rubric**: a judge criterion `rubric-<sha256(text)[:12]>`, scoped to the tag of the same
  name, which the case carries. The dataset version must name a judge whose criteria include it.
- **metadata**: kept as the case's metadata (`defaultTest.metadata` under it).

Refused with a 400 naming the line and the file's field (`tests[2].assert[1].type`): assertion
types that do not map onto a scorer (`javascript` and `python` above all: assay runs no code
from a dataset), keys that would change grading or asking in ways assay does not do (`threshold`,
`provider`, `options`, `transform`...), and anything naming a file (`file://...`): assay reads no
file named by tenant data.

YAML is read by PyYAML's safe loader only (no tags that build objects; libyaml's parser when the
wheel has it), and a document whose
aliases would expand past `MAX_EXPANDED_NODES` is refused before it is built (a "billion laughs"
file is a few lines long). PyYAML is imported on the first promptfoo import, never at a start.

Pure: no I/O.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from chalicelib.domain.importers import (
    CaseIds,
    Imported,
    build_case,
    derived_case_id,
    source_error,
)
from chalicelib.domain.judge_rules import JUDGE_SCORER, Criterion
from chalicelib.domain.models import Case
from chalicelib.domain.scorers import ScorerName
from chalicelib.errors import InvalidInputError

MAX_EXPANDED_NODES = 1_000_000
"""The most YAML nodes a document may stand for with its aliases expanded."""

INPUT_VARS = ("input", "question", "prompt", "query", "message")
"""Vars that are the question itself when a test has several, in order of preference."""

RUBRIC_PREFIX = "rubric-"
"""Start of the criterion id (and tag) an `llm-rubric` assertion becomes."""

_TEST_KEYS = frozenset({"description", "vars", "assert", "metadata"})
_ASSERTION_KEYS = frozenset({"type", "value", "weight", "metric"})

_WHY_NOT: dict[str, str] = {
    "threshold": "a pass threshold over weighted assertions: in assay every assertion must pass",
    "provider": "in assay the agent under test is chosen when a run starts",
    "providers": "in assay the agent under test is chosen when a run starts",
    "prompts": "in assay the agent under test brings its own prompt",
    "options": "test options (a provider, a transform, a prefix...) are not imported",
    "transform": "assay grades the answer as the agent gave it",
    "rubricPrompt": "the judge's own prompt is the judge's (POST /api/v1/judges/{id}/versions)",
}
"""Why a key assay cannot honour is refused rather than dropped."""

_TEMPLATE_VAR = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


@dataclass(frozen=True)
class _At:
    """Where a value sits in the file: its path and its 1-based line (None when not known)."""

    path: str
    line: int | None

    def error(self, message: str, suffix: str = "") -> InvalidInputError:
        return source_error(self.line, message, self.path + suffix)


class _Node:
    """A value of the document beside its YAML node (None for JSON read without positions)."""

    def __init__(self, value: Any, node: Any, path: str, fallback_line: int | None) -> None:
        self.value = value
        self.node = node
        self.at = _At(path, node.start_mark.line + 1 if node is not None else fallback_line)

    def key(self, name: str) -> _Node:
        """The value under `name` of a mapping (None if absent), with its position."""
        child = None
        if self.node is not None and type(self.node).__name__ == "MappingNode":
            for key_node, value_node in self.node.value:
                if getattr(key_node, "value", None) == name:
                    child = value_node
        value = self.value.get(name) if isinstance(self.value, dict) else None
        sep = "." if self.at.path else ""
        return _Node(value, child, f"{self.at.path}{sep}{name}", self.at.line)

    def items(self) -> Iterator[_Node]:
        """Each item of a list, with its position."""
        is_list = self.node is not None and type(self.node).__name__ == "SequenceNode"
        nodes = list(self.node.value) if is_list else []
        for i, value in enumerate(self.value):
            node = nodes[i] if i < len(nodes) else None
            yield _Node(value, node, f"{self.at.path}[{i}]", self.at.line)


# --- reading the document ----------------------------------------------------------------------


def _expanded_size(root: Any) -> None:
    """Refuse a YAML node graph that refers to itself or expands past `MAX_EXPANDED_NODES`.

    Raises:
        InvalidInputError: naming the line of the node at fault.
    """
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: Any) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        line = node.start_mark.line + 1
        if key in open_nodes:
            raise source_error(line, "a YAML alias refers to a node that holds it")
        open_nodes.add(key)
        children: list[Any] = []
        if isinstance(node.value, list):
            for child in node.value:
                children.extend(child if isinstance(child, tuple) else (child,))
        total = 1 + sum(size(child) for child in children)
        open_nodes.discard(key)
        if total > MAX_EXPANDED_NODES:
            raise source_error(
                line,
                f"the YAML's aliases expand to more than {MAX_EXPANDED_NODES:,} values",
            )
        sizes[key] = total
        return total

    size(root)


def _load(text: str) -> tuple[Any, Any]:
    """`(document, its root YAML node, or None when lines are not known)`.

    A JSON file is read as JSON (YAML 1.1 would read `1e5` as text), its lines from the same text
    composed as YAML where PyYAML can (JSON's structure is YAML's); anything else as YAML.

    Raises:
        InvalidInputError: neither YAML nor JSON, or a document `_expanded_size` refuses.
    """
    import yaml  # on the first promptfoo import only: no Lambda start pays for it

    # libyaml's parser under the same safe constructor, where the wheel has it: ~10x faster.
    safe_loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        as_json = json.loads(text)
    except (ValueError, RecursionError):
        pass
    else:
        try:
            loader = safe_loader(text)
            try:
                return as_json, loader.get_single_node()
            finally:
                loader.dispose()
        except (yaml.YAMLError, RecursionError):
            return as_json, None
    try:
        loader = safe_loader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None, None
            _expanded_size(node)
            try:
                return loader.construct_document(node), node
            except (ValueError, TypeError, AttributeError, OverflowError, KeyError) as exc:
                # PyYAML's constructors raise these for values it parsed but cannot build: a date
                # that does not exist (2024-02-30), a malformed !!timestamp, a list as a key.
                raise source_error(None, f"a value YAML cannot build ({exc})") from None
        finally:
            loader.dispose()
    except RecursionError:
        raise source_error(None, "the file nests too deeply to read") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise source_error(line, f"not valid YAML or JSON ({problem})") from None


def _plain(value: Any, at: _At) -> Any:
    """`value` as JSON data: dates as ISO text, keys as text; refuses what JSON cannot hold."""
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise at.error(f"{value} is not a number JSON can hold")
        return value
    if isinstance(value, dt.date):  # datetime too: YAML reads 2024-01-01 as a date
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [_plain(item, at) for item in value]
    if isinstance(value, set):
        return sorted((_plain(item, at) for item in value), key=json.dumps)
    if isinstance(value, dict):
        return {_key_text(k): _plain(v, at) for k, v in value.items()}
    raise at.error(f"a {type(value).__name__} value cannot be imported (binary or a YAML tag?)")


def _key_text(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, dt.date):
        return key.isoformat()
    return json.dumps(key) if isinstance(key, bool | int | float) or key is None else str(key)


# --- vars and templates ------------------------------------------------------------------------


def _as_text(value: Any) -> str:
    """A var's text: itself when it is text, else its JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _refuse_file(value: Any, at: _At) -> None:
    if isinstance(value, str) and value.strip().startswith("file://"):
        raise at.error(
            f"names a file ({value.strip()[:80]!r}): assay reads no file named in a dataset; "
            "put its content here"
        )


def _vars_of(node: _Node) -> dict[str, Any]:
    """A test's (or defaultTest's) vars. Raises InvalidInputError for anything but an object."""
    if node.value is None:
        return {}
    _refuse_file(node.value, node.at)
    if not isinstance(node.value, dict):
        raise node.at.error("must be an object of var names to values")
    for name, value in node.value.items():
        _refuse_file(value, node.key(name).at)
        if isinstance(value, list):
            for item in value:
                _refuse_file(item, node.key(name).at)
    return dict(node.value)


def _expand(variables: dict[str, Any], at: _At) -> list[dict[str, Any]]:
    """promptfoo's list vars: one set of vars per combination of their values, in order."""
    listed = [name for name, value in variables.items() if isinstance(value, list)]
    if not listed:
        return [variables]
    for name in listed:
        if not variables[name]:
            raise at.error("is an empty list: it would make no test", f".{name}")
    combos = itertools.product(*(variables[name] for name in listed))
    return [{**variables, **dict(zip(listed, combo, strict=True))} for combo in combos]


def _render(template: str, variables: Mapping[str, Any], at: _At) -> str:
    """`{{ var }}` replaced by the var's text (promptfoo's Nunjucks, for plain var references).

    Raises:
        InvalidInputError: an unknown var, or template syntax beyond `{{ var }}`.
    """

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in variables:
            raise at.error(f"refers to the var {name!r}, which the test does not set")
        return _as_text(variables[name])

    rendered = _TEMPLATE_VAR.sub(fill, template)
    leftover = _TEMPLATE_VAR.sub("", template)
    if "{{" in leftover or "{%" in leftover:
        raise at.error("uses template syntax assay does not fill (only {{ var }} is)")
    return rendered


def _input_of(variables: dict[str, Any]) -> str:
    """The case's input from its vars (see the module docstring)."""
    if len(variables) == 1:
        return _as_text(next(iter(variables.values())))
    for name in INPUT_VARS:
        if name in variables:
            return _as_text(variables[name])
    return json.dumps(variables, ensure_ascii=False, sort_keys=True)


# --- assertions ----------------------------------------------------------------------------------

_ANYWHERE = r"[\s\S]*?"


def _texts(value: Any, at: _At, variables: Mapping[str, Any], *, many: bool) -> list[str]:
    """An assertion value as text (`many`: a non-empty list of texts), templates filled."""
    items = value if many and isinstance(value, list) else [value]
    if many and (not isinstance(value, list) or not value):
        raise at.error("must be a non-empty list of texts", ".value")
    out = []
    for item in items:
        if item is None or isinstance(item, dict | list) or isinstance(item, bool):
            raise at.error("must be text" if not many else "must hold texts only", ".value")
        out.append(_render(item if isinstance(item, str) else _as_text(item), variables, at))
    return out


def _none_of(patterns: list[str]) -> str:
    """A pattern that matches (at the start) exactly when none of `patterns` matches anywhere."""
    return r"\A(?!" + _ANYWHERE + "(?:" + "|".join(patterns) + "))"


def _not_all(patterns: list[str]) -> str:
    """A pattern that matches exactly when at least one of `patterns` matches nowhere."""
    return r"\A(?:" + "|".join(f"(?!{_ANYWHERE}(?:{p}))" for p in patterns) + ")"


Translate = Callable[[Any, _At, Mapping[str, Any]], list[dict[str, Any]]]


def _text_check(scorer: str) -> Translate:
    return lambda v, at, vs: [{"scorer": scorer, "value": _texts(v, at, vs, many=False)[0]}]


def _any_check(scorer: str) -> Translate:
    return lambda v, at, vs: [{"scorer": scorer, "value": _texts(v, at, vs, many=True)}]


def _all_checks(scorer: str) -> Translate:
    return lambda v, at, vs: [{"scorer": scorer, "value": t} for t in _texts(v, at, vs, many=True)]


def _regex(pattern: str, *, ignore_case: bool = False) -> dict[str, Any]:
    check: dict[str, Any] = {"scorer": ScorerName.REGEX.value, "pattern": pattern}
    if ignore_case:
        check["flags"] = "i"
    return check


def _equals(value: Any, at: _At, variables: Mapping[str, Any]) -> list[dict[str, Any]]:
    if isinstance(value, dict | list):  # promptfoo compares JSON values as values
        return [{"scorer": ScorerName.JSON_SCHEMA.value, "schema": {"const": value}}]
    return [
        {"scorer": ScorerName.EQUALS.value, "value": _texts(value, at, variables, many=False)[0]}
    ]


def _schema(value: Any, at: _At, *, embedded: bool) -> list[dict[str, Any]]:
    if value is not None and not isinstance(value, dict):
        raise at.error("must be a JSON schema (an object), or absent", ".value")
    check: dict[str, Any] = {"scorer": ScorerName.JSON_SCHEMA.value, "schema": value or {}}
    if embedded:
        check["embedded"] = True
    return [check]


def _escaped(value: Any, at: _At, variables: Mapping[str, Any], *, many: bool) -> list[str]:
    return [re.escape(t) for t in _texts(value, at, variables, many=many)]


ASSERTIONS: dict[str, Translate] = {
    "equals": _equals,
    "contains": _text_check(ScorerName.CONTAINS.value),
    "icontains": _text_check(ScorerName.ICONTAINS.value),
    "contains-any": _any_check(ScorerName.CONTAINS.value),
    "icontains-any": _any_check(ScorerName.ICONTAINS.value),
    "contains-all": _all_checks(ScorerName.CONTAINS.value),
    "icontains-all": _all_checks(ScorerName.ICONTAINS.value),
    "regex": lambda v, at, vs: [_regex(_texts(v, at, vs, many=False)[0])],
    "starts-with": lambda v, at, vs: [_regex(r"\A" + _escaped(v, at, vs, many=False)[0])],
    "is-json": lambda v, at, vs: _schema(v, at, embedded=False),
    "contains-json": lambda v, at, vs: _schema(v, at, embedded=True),
    "not-equals": lambda v, at, vs: [
        _regex(r"\A(?!\s*" + re.escape(_texts(v, at, vs, many=False)[0].strip()) + r"\s*\Z)")
    ],
    "not-contains": lambda v, at, vs: [_regex(_none_of(_escaped(v, at, vs, many=False)))],
    "not-icontains": lambda v, at, vs: [
        _regex(_none_of(_escaped(v, at, vs, many=False)), ignore_case=True)
    ],
    "not-contains-any": lambda v, at, vs: [_regex(_none_of(_escaped(v, at, vs, many=True)))],
    "not-icontains-any": lambda v, at, vs: [
        _regex(_none_of(_escaped(v, at, vs, many=True)), ignore_case=True)
    ],
    "not-contains-all": lambda v, at, vs: [_regex(_not_all(_escaped(v, at, vs, many=True)))],
    "not-icontains-all": lambda v, at, vs: [
        _regex(_not_all(_escaped(v, at, vs, many=True)), ignore_case=True)
    ],
    "not-regex": lambda v, at, vs: [_regex(_none_of([_texts(v, at, vs, many=False)[0]]))],
    "not-starts-with": lambda v, at, vs: [
        _regex(r"\A(?!" + _escaped(v, at, vs, many=False)[0] + ")")
    ],
}
"""promptfoo assertion type -> the checks it becomes (`llm-rubric` is a judge criterion instead).

`equals` compares the texts with surrounding whitespace stripped, as assay's `equals` does
(promptfoo's compares them exactly). `starts-with` and every `not-` variant are `regex` checks
(negative lookaheads at the start);
`is-json` is a `json_schema` check (the value's schema, or `{}`: any JSON); `contains-json` the
same with `embedded: true`; `equals` with an object or a list is a `json_schema` `const`.
"""

_REFUSED: dict[str, str] = {
    "javascript": "assay runs no code from a dataset",
    "python": "assay runs no code from a dataset",
    "webhook": "assay calls no address named in a dataset",
    "cost": "cost is an efficiency axis of every run, not a per-case check",
    "latency": "latency is an efficiency axis of every run, not a per-case check",
    "not-is-json": "no scorer of assay passes an answer for not being JSON",
    "not-contains-json": "no scorer of assay passes an answer for holding no JSON",
    "not-llm-rubric": "a judge criterion passes when it is met; write the rubric the other way",
}


@dataclass
class _Grading:
    """What one test's assertions become."""

    checks: list[dict[str, Any]]
    tags: list[str]
    criteria: list[Criterion]


def _assertion(node: _Node, variables: Mapping[str, Any], into: _Grading) -> None:
    """Add one assertion's checks (or criterion) to `into`.

    Raises:
        InvalidInputError: an assertion assay cannot grade the way promptfoo would.
    """
    at = node.at
    _refuse_file(node.value, at)
    if not isinstance(node.value, dict):
        raise at.error("must be an object with a type")
    kind = node.value.get("type")
    if not isinstance(kind, str) or not kind:
        raise at.error("has no type", ".type")
    for key in node.value:
        if key not in _ASSERTION_KEYS:
            why = _WHY_NOT.get(key, "assay reads type, value, weight and metric")
            raise at.error(f"{key!r} is not imported ({why})", f".{key}")
    weight = node.value.get("weight", 1)
    if isinstance(weight, bool) or not isinstance(weight, int | float) or weight <= 0:
        raise at.error("must be a positive number (every assertion must pass)", ".weight")
    metric = node.value.get("metric")
    if metric is not None:
        if not isinstance(metric, str) or not metric.strip():
            raise at.error("must be text (it becomes a tag)", ".metric")
        into.tags.append(metric.strip())
    value = node.value.get("value")
    _refuse_file(value, at)
    if kind == "llm-rubric":
        rubric = _texts(value, at, variables, many=False)[0].strip()
        if not rubric:
            raise at.error("is empty", ".value")
        if len(rubric) > 2000:
            raise at.error("is longer than a judge criterion takes (2000 characters)", ".value")
        try:
            encoded = rubric.encode("utf-8")
        except UnicodeEncodeError:
            raise at.error("holds a lone surrogate: it is not text", ".value") from None
        criterion_id = RUBRIC_PREFIX + hashlib.sha256(encoded).hexdigest()[:12]
        into.criteria.append(Criterion(criterion_id=criterion_id, text=rubric, tags=[criterion_id]))
        into.tags.append(criterion_id)
        return
    translate = ASSERTIONS.get(kind)
    if translate is None:
        known = ", ".join(["llm-rubric", *sorted(ASSERTIONS)])
        why = _REFUSED.get(kind, "no scorer of assay grades it")
        raise at.error(
            f"the promptfoo assertion type {kind!r} is not supported ({why}); "
            f"assay imports {known}",
            ".type",
        )
    for check in translate(value, at, variables):
        into.checks.append({**check, "promptfoo": kind})


# --- tests ---------------------------------------------------------------------------------------


def _description(node: _Node) -> str | None:
    value = node.value
    if value is None:
        return None
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise node.at.error("must be text")
    text = " ".join(str(value).split())
    if len(text) > 250:
        raise node.at.error("is longer than a case id takes (250 characters once trimmed)")
    return text or None


def _metadata(node: _Node) -> dict[str, Any]:
    if node.value is None:
        return {}
    if not isinstance(node.value, dict):
        raise node.at.error("must be an object")
    return dict(node.value)


def _test_keys(node: _Node) -> None:
    for key in node.value:
        if key not in _TEST_KEYS:
            why = _WHY_NOT.get(key, "a test has description, vars, assert and metadata")
            raise node.at.error(f"{key!r} is not imported ({why})", f".{key}")


def _tests_of(root: _Node) -> tuple[_Node, _Node | None]:
    """`(the list of tests, defaultTest or None)` of the document."""
    if isinstance(root.value, list):  # a bare list is the tests themselves: named as such
        return _Node(root.value, root.node, "tests", root.at.line), None
    if not isinstance(root.value, dict) or "tests" not in root.value:
        raise source_error(
            root.at.line or 1,
            "a promptfoo file is a list of tests, or an object with tests: (and defaultTest:)",
        )
    tests, default = root.key("tests"), root.key("defaultTest")
    _refuse_file(tests.value, tests.at)
    if not isinstance(tests.value, list):
        raise tests.at.error("must be a list of tests")
    if default.value is None:
        return tests, None
    _refuse_file(default.value, default.at)
    if not isinstance(default.value, dict):
        raise default.at.error("must be an object (vars, assert, metadata)")
    _test_keys(default)
    return tests, default


def _asserts(node: _Node) -> list[_Node]:
    if node.value is None:
        return []
    if not isinstance(node.value, list):
        raise node.at.error("must be a list of assertions")
    return list(node.items())


def parse_promptfoo(text: str) -> Imported:
    """Cases from a promptfoo test file (YAML or JSON), as the module docstring says.

    Args:
        text: the whole file.

    Returns:
        The cases in file order; `required`: the scorers the assertions map onto, in first-use
        order (`judge` when there is an `llm-rubric`); `criteria`: one judge criterion per distinct
        rubric.

    Raises:
        InvalidInputError: field "source", `details["line"]` (when known) and
            `details["source_field"]` (`tests[2].assert[1].type`) naming what cannot be imported.
    """
    document, node = _load(text)
    try:
        return _cases_of(_Node(document, node, "", None))
    except RecursionError:  # JSON nested near the interpreter's limit, read without YAML
        raise source_error(None, "the file nests too deeply to read") from None


def _cases_of(root: _Node) -> Imported:
    """`parse_promptfoo`'s work on the document read."""
    tests, default = _tests_of(root)
    default_vars = _vars_of(default.key("vars")) if default else {}
    default_asserts = _asserts(default.key("assert")) if default else []
    default_metadata = _metadata(default.key("metadata")) if default else {}

    cases: list[Case] = []
    required: list[str] = []
    criteria: dict[str, Criterion] = {}
    ids = CaseIds()
    for test in tests.items():
        _refuse_file(test.value, test.at)
        if not isinstance(test.value, dict):
            raise test.at.error("must be an object (description, vars, assert)")
        _test_keys(test)
        description = _description(test.key("description"))
        own = _vars_of(test.key("vars"))
        metadata = {**default_metadata, **_metadata(test.key("metadata"))}
        asserts = [*default_asserts, *_asserts(test.key("assert"))]
        expanded = _expand({**default_vars, **own}, test.key("vars").at)
        for k, variables in enumerate(expanded, start=1):
            plain = _plain(variables, test.key("vars").at)
            grading = _Grading([], [], [])
            for assertion in asserts:
                _assertion(assertion, plain, grading)
            for check in grading.checks:
                if check["scorer"] not in required:
                    required.append(check["scorer"])
            for criterion in grading.criteria:
                criteria.setdefault(criterion.criterion_id, criterion)
            input_text = _input_of(plain)
            if description is not None:
                case_id = description if len(expanded) == 1 else f"{description} [{k}]"
            else:
                case_id = derived_case_id(input_text)
            fields: dict[str, Any] = {
                "case_id": case_id,
                "input": input_text,
                "tags": list(dict.fromkeys(grading.tags)),
                "checks": grading.checks,
                "metadata": _plain(
                    {**metadata, **({"vars": plain} if len(plain) > 1 else {})}, test.at
                ),
            }
            case = build_case(fields, test.at.line, test.at.path)
            ids.claim(
                case.case_id,
                test.at.line,
                derived=description is None,
                hint="give each test a description",
                source_field=f"{test.at.path}.description",
            )
            cases.append(case)
    if criteria:
        required.append(JUDGE_SCORER)
    return Imported(cases, required, list(criteria.values()))
