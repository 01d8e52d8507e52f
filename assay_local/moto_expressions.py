"""Update and condition expressions in moto's process, faster (issue 12; installed by
`assay_local.motofast.install`, behind its moto release check): plain update expressions
(`SET #n = :v`, `SET #n[i] = :v`, `ADD #n :v`, `REMOVE #n`) checked and applied directly
(`_plain_updates`, compared with moto's own path under `motofast.VERIFY`), and each update
expression parsed, and each condition expression lexed, once per text
(`_cache_expression_parsing`), and a condition's parse reused for the same text, names and
values (`_cache_condition_parses`, compared with a fresh parse under `motofast.VERIFY`).
"""

from __future__ import annotations

import copy
import json
import re
import threading
from collections import OrderedDict, deque
from typing import Any

from assay_local import motofast

# --- update expressions of plain SET / ADD / REMOVE actions ------------------------------------

_CLAUSE = re.compile(r"\s*(SET|ADD|REMOVE)\s+", re.IGNORECASE)
_SET_ACTION = re.compile(r"\s*(#[A-Za-z0-9_]+)(?:\[(\d+)\])?\s*=\s*(:[A-Za-z0-9_]+)\s*")
_ADD_ACTION = re.compile(r"\s*(#[A-Za-z0-9_]+)\s+(:[A-Za-z0-9_]+)\s*")
_REMOVE_ACTION = re.compile(r"\s*(#[A-Za-z0-9_]+)\s*")


def plain_plan(expression: str) -> list[tuple[str, str, int | None, str | None]] | None:
    """The actions of an update expression made only of `SET #n = :v`, `SET #n[i] = :v`,
    `ADD #n :v` and `REMOVE #n` (names and values as placeholders, each clause once, each
    attribute once: what PynamoDB writes), in the order written; None for anything else (moto's
    own validator and executor handle it, errors included)."""
    plan: list[tuple[str, str, int | None, str | None]] = []
    seen_clauses: set[str] = set()
    pos = 0
    while pos < len(expression):
        clause = _CLAUSE.match(expression, pos)
        if clause is None:
            return None
        verb = clause.group(1).upper()
        if verb in seen_clauses:
            return None
        seen_clauses.add(verb)
        pos = clause.end()
        pattern = {"SET": _SET_ACTION, "ADD": _ADD_ACTION, "REMOVE": _REMOVE_ACTION}[verb]
        while True:
            action = pattern.match(expression, pos)
            if action is None:
                return None
            if verb == "SET":
                name, index, value = action.group(1), action.group(2), action.group(3)
                plan.append((verb, name, int(index) if index is not None else None, value))
            elif verb == "ADD":
                plan.append((verb, action.group(1), None, action.group(2)))
            else:
                plan.append((verb, action.group(1), None, None))
            pos = action.end()
            if pos < len(expression) and expression[pos] == ",":
                pos += 1
                continue
            break
    names = [name for _, name, _, _ in plan]
    return plan if plan and len(set(names)) == len(names) else None


def _plain_updates() -> None:
    """Apply plain update expressions (`plain_plan`) directly to the item.

    moto validates an update by running ten visitors over a copy of its parsed tree (about a
    third of its process under the pipeline benchmark: every recording updates a run and a
    lease), then executes the tree. For a plain plan, whose only checks are that its
    placeholders resolve, that it leaves the table's key alone, that a `SET #n[i]` has a list to
    set in and that an `ADD` meets a number or nothing, those checks are made here and the actions
    applied in order as moto's executors do (a top-level set through the item's size-checked
    dict, a list element through `DynamoType.__setitem__`, `ADD` by `DynamoType.__add__`).
    Anything else, or a plan whose checks fail (so that moto raises its own error), goes to
    moto's validator. With `VERIFY`, moto's path runs on a copy and the two items are compared.
    """
    from moto.dynamodb import models as dynamodb_models
    from moto.dynamodb.exceptions import ItemSizeTooLarge
    from moto.dynamodb.models.dynamo_type import DynamoType, LimitedSizeDict
    from moto.dynamodb.models.utilities import bytesize
    from moto.dynamodb.parsing.expressions import UpdateExpressionParser

    def _size(value: Any) -> int:
        # What `LimitedSizeDict.__setitem__` counts for a value.
        return value.size() if type(value) is DynamoType else bytesize(str(value))  # type: ignore[no-any-return]

    validator_class = dynamodb_models.UpdateExpressionValidator
    executor_class = dynamodb_models.UpdateExpressionExecutor
    plans: dict[int, Any] = {}
    make = UpdateExpressionParser.make.__func__  # type: ignore[attr-defined]

    def planned_make(cls: Any, expression_str: str) -> Any:
        tree = make(cls, expression_str)
        if id(tree) not in plans and len(plans) < _EXPRESSIONS_KEPT:
            plans[id(tree)] = (tree, plain_plan(expression_str))
        return tree

    UpdateExpressionParser.make = classmethod(planned_make)  # type: ignore[assignment,method-assign]

    class Plain:
        """A validated plain plan: the steps `execute` applies, values as `DynamoType`s."""

        def __init__(self, steps: list[tuple[str, str, int | None, Any]], tree: Any) -> None:
            self.steps, self.tree = steps, tree

        def normalize(self) -> None:
            """The steps are in the order moto's `normalize` leaves distinct attributes."""

    def checked(tree: Any, names: Any, values: Any, item: Any, table: Any) -> Plain | None:
        kept = plans.get(id(tree))
        if kept is None or kept[0] is not tree or kept[1] is None:
            return None
        names, values = names or {}, values or {}
        # moto refuses an update of the table's own key; its type and empty-string checks of
        # defined attributes compare the name as written, never a `#placeholder`: no-ops here.
        keys = set(table.table_key_attrs)
        steps: list[tuple[str, str, int | None, Any]] = []
        for verb, placeholder, index, value in kept[1]:
            name = names.get(placeholder)
            if name is None or name in keys or (value is not None and value not in values):
                return None
            current = item.attrs.get(name)
            typed = DynamoType(values[value]) if value is not None else None
            if verb == "SET" and index is not None:
                if current is None or not current.is_list():
                    return None
            elif verb == "ADD":
                if (
                    typed is None
                    or typed.type != "N"
                    or (current is not None and current.type != "N")
                ):
                    return None
            steps.append((verb, name, index, typed))
        return Plain(steps, tree)

    def apply(plain: Plain, item: Any) -> None:
        attrs = item.attrs
        if type(attrs) is not LimitedSizeDict:
            return apply_checked(plain, attrs)
        # moto's `LimitedSizeDict.__setitem__` sums every name and value of the item at each
        # top-level set (a run's item holds its case ids): the sum is made once here and kept
        # up to date, and each set refused exactly when moto's own check refuses it.
        total: int | None = None
        for verb, name, index, value in plain.steps:
            old = attrs.get(name)
            if verb == "REMOVE":
                if old is not None:
                    del attrs[name]
                    if total is not None:
                        total -= bytesize(name) + _size(old)
                continue
            if verb == "SET" and index is not None:
                before = _size(old) if total is not None else 0
                old[index] = value  # a list element: no size check (moto makes none either)
                if total is not None:
                    total += _size(old) - before
                continue
            new = value
            if verb == "ADD":
                new = (old if old is not None else DynamoType({"N": "0"})) + value
            if total is None:
                total = sum(bytesize(k) + _size(v) for k, v in attrs.items())
            added = _size(new)
            if total + bytesize(name) + added > motofast._ITEM_LIMIT:
                raise ItemSizeTooLarge
            dict.__setitem__(attrs, name, new)
            total += added - _size(old) if old is not None else bytesize(name) + added

    def apply_checked(plain: Plain, attrs: Any) -> None:
        # moto's own dict assignments (an item whose attributes are not moto's sized dict).
        for verb, name, index, value in plain.steps:
            if verb == "REMOVE":
                attrs.pop(name, None)
            elif verb == "ADD":
                current = attrs.get(name)
                base = current if current is not None else DynamoType({"N": "0"})
                attrs[name] = base + value
            elif index is not None:
                attrs[name][index] = value
            else:
                attrs[name] = value

    class Validator:
        """moto's `UpdateExpressionValidator`, or a `Plain` plan when the update is one."""

        def __init__(
            self,
            expression: Any,
            expression_attribute_names: Any,
            expression_attribute_values: Any,
            item: Any,
            table: Any,
        ) -> None:
            self.args = (
                expression,
                expression_attribute_names,
                expression_attribute_values,
                item,
                table,
            )

        def validate(self) -> Any:
            plain = checked(*self.args)
            if plain is not None:
                motofast.FAST_HITS["dynamodb.plain-update"] += 1
                if motofast.VERIFY:
                    verify(plain, self.args)
                return plain
            expression, names, values, item, table = self.args
            return validator_class(
                expression,
                expression_attribute_names=names,
                expression_attribute_values=values,
                item=item,
                table=table,
            ).validate()

    class Executor:
        """moto's `UpdateExpressionExecutor`, or `apply` for a `Plain` plan."""

        def __init__(self, validated: Any, item: Any, names: Any) -> None:
            self.validated, self.item, self.names = validated, item, names

        def execute(self) -> None:
            if isinstance(self.validated, Plain):
                apply(self.validated, self.item)
            else:
                executor_class(self.validated, self.item, self.names).execute()

    def verify(plain: Plain, args: tuple[Any, ...]) -> None:
        # moto's own path and ours, each on a copy of the item, compared.
        expression, names, values, item, table = args
        theirs, ours = copy.deepcopy(item), copy.deepcopy(item)
        try:
            apply(plain, ours)
        except Exception as exc:  # noqa: BLE001 - moto's path must fail the same way
            ours_failed: Exception | None = exc
        else:
            ours_failed = None
        try:
            validated = validator_class(
                expression,
                expression_attribute_names=names,
                expression_attribute_values=values,
                item=theirs,
                table=table,
            ).validate()
            validated.normalize()
            executor_class(validated, theirs, names).execute()
        except Exception as exc:  # noqa: BLE001 - a difference is what is recorded
            if type(exc) is not type(ours_failed) or theirs.attrs != ours.attrs:
                motofast.MISMATCHES.append(
                    {
                        "operation": "dynamodb.plain-update",
                        "moto": repr(exc),
                        "fast": repr(ours_failed),
                    }
                )
            return
        if ours_failed is not None or theirs.attrs != ours.attrs:
            motofast.MISMATCHES.append(
                {
                    "operation": "dynamodb.plain-update",
                    "fast": ours.to_json() if ours_failed is None else repr(ours_failed),
                    "moto": theirs.to_json(),
                }
            )

    dynamodb_models.UpdateExpressionValidator = Validator  # type: ignore[attr-defined,misc]
    dynamodb_models.UpdateExpressionExecutor = Executor  # type: ignore[attr-defined,misc]


def _cache_expression_parsing() -> None:
    """Parse each update expression, and lex each condition expression, once per text.

    assay sends a handful of expression texts (values travel apart, as `:placeholders`), and moto
    parses an update expression up to three times per request (validation in the handler, the
    transaction, the update). moto only reads a parsed tree (`find_clauses`) except in its
    `Validator`, which rewrites a deep copy of it: the cached tree is handed out as it is, and
    the validator's copy is made by `_clone_tree` (`copy.deepcopy` cost as much as parsing).
    """
    import copy

    from moto.dynamodb.comparisons import ConditionExpressionParser
    from moto.dynamodb.parsing import validators
    from moto.dynamodb.parsing.ast_nodes import Node
    from moto.dynamodb.parsing.expressions import UpdateExpressionParser

    parsed: dict[str, Any] = {}
    make = UpdateExpressionParser.make.__func__  # type: ignore[attr-defined]

    def cached_make(cls: Any, expression_str: str) -> Any:
        tree = parsed.get(expression_str)
        if tree is None:
            tree = make(cls, expression_str)  # a text that does not parse raises, uncached
            if len(parsed) < _EXPRESSIONS_KEPT:
                parsed[expression_str] = tree
        return tree

    UpdateExpressionParser.make = classmethod(cached_make)  # type: ignore[assignment,method-assign]

    def leaf(value: Any) -> Any:
        return value if type(value) in _IMMUTABLE else copy.deepcopy(value)

    def clone(node: Any, parent: Any) -> Any:
        # A parsed tree's nodes hold `type`, `children` and `parent`, their leaves names,
        # placeholders and indexes: the nodes and children lists are copied, immutable leaves
        # shared, and anything else deep-copied as before.
        copied = object.__new__(type(node))
        fields: dict[str, Any] = {}
        for name, value in node.__dict__.items():
            if name == "parent":
                fields[name] = parent
            elif name == "children" and type(value) is list:
                fields[name] = [
                    clone(child, copied) if isinstance(child, Node) else leaf(child)
                    for child in value
                ]
            else:
                fields[name] = leaf(value)
        copied.__dict__.update(fields)
        return copied

    def validators_deepcopy(value: Any, memo: Any = None) -> Any:
        if isinstance(value, Node):
            return clone(value, value.parent)
        return copy.deepcopy(value, memo)

    validators.deepcopy = validators_deepcopy  # type: ignore[attr-defined]

    lexed: dict[str, Any] = {}
    lex = ConditionExpressionParser._lex_condition_expression

    def cached_lex(self: Any) -> Any:
        text = self.condition_expression
        nodes = lexed.get(text)
        if nodes is None:
            nodes = lex(self)
            if len(lexed) < _EXPRESSIONS_KEPT:
                lexed[text] = nodes
        # Lexed nodes are namedtuples of strings; only a children list could be changed later.
        return deque(
            n._replace(children=list(n.children)) if type(n.children) is list else n for n in nodes
        )

    ConditionExpressionParser._lex_condition_expression = cached_lex  # type: ignore[method-assign]


_IMMUTABLE = frozenset({str, int, float, bool, type(None)})

_EXPRESSIONS_KEPT = 2048
"""Distinct expression texts cached, at most (a client building texts with values inlined must
not grow the server's memory without bound)."""


_PARSES_KEPT = 256
"""Condition parses kept (the most recently used): a recording's conditions are parsed twice in
one request (the handler's validation, the transaction) and its attempt's is the same text with
no values every time."""


def _cache_condition_parses() -> None:
    """Parse a condition expression once per text, names and values
    (`ConditionExpressionParser.parse`, ~15 % of moto's process under the pipeline benchmark).

    moto parses each condition of a transaction twice (its handler validates every item before
    the transaction runs it), and a recording's attempt carries the same condition each time.
    The parse's result (an `Op` tree, which moto only evaluates, never changes) and the names
    and values it found are kept by the expression text, its names and its values (as canonical
    JSON; values with binaries are not kept), so an equal request reuses them. A text that does
    not parse raises each time, as before. With `VERIFY` each reuse is parsed again and compared.
    """
    from moto.dynamodb.comparisons import ConditionExpressionParser

    original = ConditionExpressionParser.parse
    kept: OrderedDict[tuple[str, str, str], tuple[Any, list[str], list[str]]] = OrderedDict()
    lock = threading.Lock()

    def parse(self: Any) -> Any:
        text = self.condition_expression
        if not text:
            return original(self)
        try:
            key = (
                text,
                json.dumps(self.expression_attribute_names, sort_keys=True),
                json.dumps(self.expression_attribute_values, sort_keys=True),
            )
        except (TypeError, ValueError):
            return original(self)
        with lock:
            found = kept.get(key)
            if found is not None:
                kept.move_to_end(key)
        if found is None:
            op = original(self)
            with lock:
                kept[key] = (
                    op,
                    list(self.expr_attr_names_found),
                    list(self.expr_attr_values_found),
                )
                if len(kept) > _PARSES_KEPT:
                    kept.popitem(last=False)
            return op
        op, names, values = found
        motofast.FAST_HITS["dynamodb.condition-reused"] += 1
        if motofast.VERIFY:
            fresh = ConditionExpressionParser(
                text, self.expression_attribute_names, self.expression_attribute_values
            )
            again = original(fresh)
            if (_shape(again), fresh.expr_attr_names_found, fresh.expr_attr_values_found) != (
                _shape(op),
                names,
                values,
            ):
                motofast.MISMATCHES.append(
                    {
                        "operation": "dynamodb.condition-reused",
                        "fast": repr(op),
                        "moto": repr(again),
                    }
                )
        self.expr_attr_names_found.extend(names)
        self.expr_attr_values_found.extend(values)
        return op

    ConditionExpressionParser.parse = parse  # type: ignore[method-assign]


def _shape(value: Any) -> Any:
    """A parsed condition as nested tuples of its classes and fields (to compare two parses)."""
    if isinstance(value, (list, tuple)):
        return tuple(_shape(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _shape(v)) for k, v in value.items()))
    if hasattr(value, "__dict__"):
        return (type(value).__name__, _shape(vars(value)))
    return value
