"""MkDocs hooks: the reference pages generated at build time, so they cannot drift from the code.

- `reference/api.md`: every operation of the OpenAPI document the service serves at
  `GET /openapi.json` (`chalicelib.api.openapi.build` over the app's route table): method, path,
  summary, parameters, request body and responses, and the fields of every request body.
- `reference/cli.md`: the `assay` command and every subcommand, walked from its argparse parser:
  usage, help and each flag.

`on_files` adds both as generated files (`File.generated`); `mkdocs.yml` names them in `nav`. The
page builders (`api_page`, `cli_page`) are plain functions of plain data, which
`tests/unit/test_docs.py` calls too.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
API_PAGE = "reference/api.md"
CLI_PAGE = "reference/cli.md"

_CITATION = re.compile(
    r"\s*\((?:seed|issue) \d+[^)]*\)?|\bseed \d+'s names for\b|\s*\(README, (\w+)\)", re.IGNORECASE
)
"""Notes in the code's docstrings that cite documents a reader of the site does not have."""

_GROUPS = {
    "evaluations": "Evaluations",
    "agent-summaries": "Verdicts",
    "agents": "Agents",
    "api-keys": "API keys",
    "budget": "Budgets",
    "connections": "Connections",
    "datasets": "Datasets",
    "environments": "Environments",
    "eval-runs": "Eval runs",
    "judges": "Judges",
    "me": "Members and identity",
    "members": "Members and identity",
    "model-profiles": "Model profiles",
    "notifications": "Notifications",
    "recordings": "Recordings",
    "secrets": "Secrets",
    "openapi.json": "The OpenAPI document",
}
"""The section of the page a path belongs to, by its first segment after the API's prefix."""


def _on_path() -> None:
    root = str(ROOT)
    if root not in sys.path:
        sys.path.insert(0, root)


# --- text helpers --------------------------------------------------------------------------------


def plain(text: str) -> str:
    """`text` without citations of documents the reader does not have, on one line."""

    def replace(match: re.Match[str]) -> str:
        return f" (see {match.group(1)})" if match.group(1) else ""

    return " ".join(_CITATION.sub(replace, text).split())


def cell(text: str) -> str:
    """`text` safe inside a Markdown table cell: one line, `|` escaped (also inside code)."""
    parts = plain(text).split("`")
    out = []
    for i, part in enumerate(parts):
        if i % 2 and "|" in part:  # a code span holding a pipe: HTML code, the pipe an entity
            out.append("<code>" + part.replace("&", "&amp;").replace("|", "&#124;") + "</code>")
        elif i % 2:
            out.append(f"`{part}`")
        else:
            out.append(part.replace("|", "&#124;"))
    if len(parts) % 2 == 0:  # an unbalanced backtick: keep it as text
        return plain(text).replace("|", "&#124;")
    return "".join(out)


def anchor(name: str) -> str:
    """The id the toc extension gives a heading of one word (a schema's name)."""
    return name.lower()


# --- the HTTP API --------------------------------------------------------------------------------


def openapi_document() -> dict[str, Any]:
    """The service's OpenAPI document, built from the app as `GET /openapi.json` builds it."""
    _on_path()
    import app
    from chalicelib.api import openapi

    return openapi.build(app.app)


def group_of(path: str) -> str:
    """The page section of `path`: `/api/v1/agents/{id}` -> "Agents"."""
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        parts = parts[2:]
    elif parts[:1] == ["api"]:
        parts = parts[1:]
    return _GROUPS.get(parts[0], parts[0].capitalize()) if parts else "Other"


def _summary(operation: dict[str, Any]) -> str:
    summary = plain(operation.get("summary") or "")
    if summary.count("(") > summary.count(")"):  # a first line cut inside a parenthesis
        summary = summary[: summary.rfind("(")].rstrip(" ,;:")
    if not summary:
        name = re.sub(r"^seed_", "", operation.get("operationId", ""))
        summary = name.replace("_", " ").capitalize().replace("api key", "API key")
    return summary.rstrip(".") + "."


def type_of(schema: dict[str, Any]) -> str:
    """A schema as a short phrase of Markdown: `string`, `integer 1-5`, `one of a, b`, a link to
    a body's fields (`[Source](#source)`), `... or null`."""
    if not schema:
        return "any JSON"
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{anchor(name)})"
    if "anyOf" in schema or "oneOf" in schema:
        options = schema.get("anyOf") or schema.get("oneOf")
        shown = [type_of(o) for o in options if o.get("type") != "null"]
        nullable = any(o.get("type") == "null" for o in options)
        return " or ".join(shown) + (" or null" if nullable else "")
    if "const" in schema:
        return f"`{schema['const']}`"
    if "enum" in schema:
        return "one of " + ", ".join(f"`{v}`" for v in schema["enum"])
    kind = schema.get("type", "any JSON")
    if isinstance(kind, list):
        kind = " or ".join(kind)
    if kind == "array":
        text = "array of " + type_of(schema.get("items") or {})
        if "maxItems" in schema:
            text += f" (at most {schema['maxItems']})"
        return text
    if kind == "object" and "additionalProperties" in schema:
        extra = schema["additionalProperties"]
        if isinstance(extra, dict):
            return "object of " + type_of(extra)
    bounds = []
    if "minimum" in schema and "maximum" in schema:
        bounds.append(f"{schema['minimum']}-{schema['maximum']}")
    elif "minimum" in schema:
        bounds.append(f"at least {schema['minimum']}")
    elif "maximum" in schema:
        bounds.append(f"at most {schema['maximum']}")
    if "maxLength" in schema:
        bounds.append(f"{schema.get('minLength', 0)}-{schema['maxLength']} characters")
    if schema.get("pattern") == "^[^#/]+$":
        bounds.append("no `#` or `/`")
    return f"{kind} ({', '.join(bounds)})" if bounds else kind


def _parameters(operation: dict[str, Any]) -> list[str]:
    params = operation.get("parameters") or []
    if not params:
        return []
    lines = ["| parameter | in | type | required | description |", "|---|---|---|---|---|"]
    for p in params:
        schema = p.get("schema") or {}
        description = p.get("description") or schema.get("description") or ""
        default = schema.get("default")
        if default is not None:
            description = f"{description} (default `{json.dumps(default)}`)".strip()
        lines.append(
            f"| `{p['name']}` | {p['in']} | {cell(type_of(schema))} | "
            f"{'yes' if p.get('required') else 'no'} | {cell(description)} |"
        )
    return lines + [""]


def _status_order(status: str) -> tuple[int, str]:
    return (0 if status.startswith("2") else 2 if status.endswith("XX") else 1, status)


def _responses(operation: dict[str, Any]) -> list[str]:
    statuses = sorted(operation.get("responses", {}), key=_status_order)
    return ["**Responses:** " + " · ".join(statuses) + " ([what each means](#responses))", ""]


def _shared_responses(document: dict[str, Any]) -> list[str]:
    shared = document.get("components", {}).get("responses", {})
    seen: dict[str, str] = {}
    for _, _, operation in operations(document):
        for status, response in operation.get("responses", {}).items():
            if "$ref" in response:
                response = shared.get(response["$ref"].rsplit("/", 1)[-1], {})
            seen.setdefault(status, response.get("description", ""))
    lines = ["## Responses", "", "| status | meaning |", "|---|---|"]
    for status in sorted(seen, key=_status_order):
        lines.append(f"| {status} | {cell(seen[status])} |")
    return lines + [
        "",
        'Every error body is `{"error": {"code", "message", "field"?, '
        '"request_id"}}`; see [HTTP API conventions](api-overview.md#errors).',
        "",
    ]


def _fields(schema: dict[str, Any]) -> list[str]:
    properties = schema.get("properties") or {}
    if not properties:
        return ["Any JSON object.", ""]
    required = set(schema.get("required") or [])
    lines = ["| field | type | required | description |", "|---|---|---|---|"]
    for name, field in properties.items():
        description = field.get("description", "")
        default = field.get("default")
        if name not in required and default not in (None, [], {}):
            description = f"{description} (default `{json.dumps(default)}`)".strip()
        lines.append(
            f"| `{name}` | {cell(type_of(field))} | {'yes' if name in required else 'no'} | "
            f"{cell(description)} |"
        )
    extra = schema.get("additionalProperties")
    note = "Other fields are refused (400 naming the field)." if extra is False else ""
    return lines + ["", note, ""] if note else lines + [""]


def operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Every `(METHOD, path, operation)` of `document`, in the document's order."""
    for path, methods in document.get("paths", {}).items():
        for method, operation in methods.items():
            yield method.upper(), path, operation


def api_page(document: dict[str, Any] | None = None) -> str:
    """The Markdown of the HTTP API reference: one section per resource, one heading per
    operation (`GET /api/v1/agents`), then the fields of every request body.

    Args:
        document: an OpenAPI 3.1 document; default the service's own (`openapi_document`).
    """
    document = document if document is not None else openapi_document()
    info = document.get("info", {})
    out = [
        "# HTTP API",
        "",
        "Generated when the site is built from the OpenAPI "
        f"{document.get('openapi', '3.1')} document the service serves at `GET /openapi.json`, "
        "itself built from the route table and the request models the views check. The "
        "conventions every route shares (tokens, errors, ids, pages) are in "
        "[HTTP API conventions](api-overview.md).",
        "",
        cell(info.get("description", "")),
        "",
        "Every operation needs `Authorization: Bearer <token or API key>` unless it says "
        "otherwise.",
        "",
    ]
    grouped: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for method, path, operation in operations(document):
        grouped.setdefault(group_of(path), []).append((method, path, operation))
    for group in sorted(grouped):
        out += [f"## {group}", ""]
        for method, path, operation in grouped[group]:
            out += [f"### {method} {path}", "", _summary(operation), ""]
            if operation.get("security") == []:
                out += ["No token needed.", ""]
            out += _parameters(operation)
            body = operation.get("requestBody")
            if body:
                schema = body.get("content", {}).get("application/json", {}).get("schema", {})
                needed = "required" if body.get("required") else "optional"
                out += [f"**Request body** ({needed}): {type_of(schema)}", ""]
            out += _responses(operation)
    out += _shared_responses(document)
    schemas = document.get("components", {}).get("schemas", {})
    if schemas:
        out += ["## Request bodies", ""]
        for name in sorted(schemas):
            schema = schemas[name]
            out += [f"### {name}", ""]
            if schema.get("description"):
                out += [plain(schema["description"]), ""]
            out += _fields(schema)
    return "\n".join(out).rstrip() + "\n"


# --- the command line ----------------------------------------------------------------------------


class _Captured(Exception):
    """Carries the parser `assay_local.cli.main` built, caught before it parses anything."""


def assay_parser() -> argparse.ArgumentParser:
    """The `assay` command's parser, every subcommand registered.

    `assay_local.cli.build_parser()` when the CLI has one; otherwise the parser `main` builds,
    taken at the moment it would parse (nothing runs).
    """
    _on_path()
    from assay_local import cli

    builder = getattr(cli, "build_parser", None)
    if callable(builder):
        return builder()
    parser_class = cli._Parser
    original = parser_class.parse_args

    def capture(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> Any:
        raise _Captured(self)

    parser_class.parse_args = capture  # type: ignore[method-assign]
    try:
        cli.main([])
    except _Captured as caught:
        return caught.args[0]
    finally:
        parser_class.parse_args = original  # type: ignore[method-assign]
    raise RuntimeError("assay_local.cli.main returned without parsing its arguments")


def subcommands(
    parser: argparse.ArgumentParser,
) -> Iterator[tuple[str, argparse.ArgumentParser, str]]:
    """Every `(prog, parser, help)` under `parser`, depth first, in the order they were added."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield sub.prog, sub, helps.get(name, "")
                yield from subcommands(sub)


def _usage(parser: argparse.ArgumentParser) -> str:
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # the same line breaks on every machine
    try:
        return parser.format_usage().strip()
    finally:
        if saved is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved


def _arguments(parser: argparse.ArgumentParser) -> list[str]:
    formatter = parser._get_formatter()
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        if action.option_strings:
            takes = "" if action.nargs == 0 else f" {action.metavar or action.dest.upper()}"
            name = ", ".join(f"`{o}{takes}`" for o in action.option_strings)
        else:
            name = f"`{action.metavar or action.dest}`"
            if action.nargs in ("+", "*"):
                name += " ..."
        text = formatter._expand_help(action) if action.help else ""
        if action.choices and not isinstance(action.choices, dict):
            text += " (one of " + ", ".join(f"`{c}`" for c in action.choices) + ")"
        if action.required and action.option_strings:
            text += " (required)"
        if (
            action.default not in (None, False, [], argparse.SUPPRESS)
            and action.nargs != 0
            and "default" not in text
        ):
            text += f" (default `{action.default}`)"
        rows.append(f"| {name} | {cell(text)} |")
    if not rows:
        return []
    return ["| argument | what |", "|---|---|", *rows, ""]


def _section(prog: str, parser: argparse.ArgumentParser, help_text: str, level: int) -> list[str]:
    out = [f"{'#' * level} {prog}", ""]
    if help_text:
        out += [cell(help_text[:1].upper() + help_text[1:]).rstrip(".") + ".", ""]
    out += ["```", _usage(parser), "```", ""]
    if parser.description and parser.description != help_text:
        out += [plain(parser.description), ""]
    out += _arguments(parser)
    if parser.epilog:
        out += ["```", parser.epilog.strip(), "```", ""]
    return out


def cli_page(parser: argparse.ArgumentParser | None = None) -> str:
    """The Markdown of the CLI reference: `assay`, then each subcommand (and each of theirs) with
    its usage, help and arguments.

    Args:
        parser: the parser to describe; default the `assay` command's (`assay_parser`).
    """
    parser = parser or assay_parser()
    out = [
        "# Command line",
        "",
        "Generated when the site is built from the `assay` command's own parser. Every command "
        "that talks to the API takes `--url` and `--token` (default `$ASSAY_URL` and "
        "`$ASSAY_TOKEN`, which `assay dev` prints). Exit codes: 0 passed, 1 broke, 2 "
        "inconclusive, 3 an error (the API refused, could not be reached, or a usage error); "
        "see [the CI gate](../guides/ci-gate.md).",
        "",
        "```",
        _usage(parser),
        "```",
        "",
    ]
    if parser.description:
        out += [plain(parser.description), ""]
    for prog, sub, help_text in subcommands(parser):
        level = min(2 + prog.count(" ") - 1, 4)
        out += _section(prog, sub, help_text, level)
    return "\n".join(out).rstrip() + "\n"


# --- MkDocs --------------------------------------------------------------------------------------


def on_files(files: Any, config: Any) -> Any:
    """Add the generated reference pages to the site's files (MkDocs' `on_files` event)."""
    from mkdocs.structure.files import File

    files.append(File.generated(config, API_PAGE, content=api_page()))
    files.append(File.generated(config, CLI_PAGE, content=cli_page()))
    return files
