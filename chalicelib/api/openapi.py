"""The OpenAPI 3.1 document of the HTTP API (issue 11 scope 9), built from the app's route table and
each view's `Contract` (`api.common.api_view`): its body models in `api.schemas` and query models
in `api.query_schemas` (and the judge spec the service validates), so the document cannot
describe other routes or other fields than the ones the views check.

`GET /openapi.json` serves it; clients and `tests/fuzz/` read it. It is built on the first request
and kept: pydantic's JSON-schema generation is not paid at a cold start that never asks for it.
So are the fields' descriptions, the docstring under each field of a model (`DocumentedFields`):
pydantic's `use_attribute_docstrings` would read them as every model class is created, a tenth of
the API function's start (issue 12).
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
from functools import cache
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue, models_json_schema
from pydantic_core import core_schema

from chalicelib.api.common import (
    CONTRACT_ATTRIBUTE,
    GATEWAY_ERRORS,
    MAX_PATH_ID_LENGTH,
    Contract,
)

OPENAPI_VERSION = "3.1.0"
SCHEMA_REF = "#/components/schemas/{model}"
NOT_DOCUMENTED_PREFIX = "method_not_allowed_"


def documented(path: str, entry: Any) -> bool:
    """Whether a route is the API's (documented), not a 405 view nor a console page or asset
    (`chalicelib.api.console`), which answer HTML and scripts to a browser."""
    return not entry.view_name.startswith(NOT_DOCUMENTED_PREFIX) and (
        path.startswith("/api/") or path == "/openapi.json"
    )


"""Views `api.common.answer_other_methods` adds: a method a route does not take (405), which the
document describes by leaving that method out."""

_PATH_PARAMETERS: dict[str, dict[str, Any]] = {
    "version": {
        "type": "string",
        "pattern": r"^[0-9]{1,10}$",
        "description": "A version number (1 to 2147483647).",
    },
}
"""Path parameters that are not ids; every other one is an id (`_ID_PARAMETER`)."""

_ID_PARAMETER: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_PATH_ID_LENGTH,
    "pattern": r"^[^#/]+$",
    "description": "An id of the caller's organization (never holds `#` or `/`).",
}

_ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message", "request_id"],
            "properties": {
                "code": {
                    "type": "string",
                    "description": "The error's name in snake case (`invalid_input`, `not_found`).",
                },
                "message": {"type": "string", "description": "What a person should read."},
                "field": {
                    "type": "string",
                    "description": "The request field, parameter or header at fault.",
                },
                "request_id": {
                    "type": "string",
                    "description": "The request's id, as its `X-Request-Id` header gives it.",
                },
            },
        }
    },
}
"""Every error body: `{"error": {"code", "message", "field"?, "request_id", ...details}}`."""


@cache
def _docstrings_in(module: str) -> dict[str, dict[str, str]]:
    """`{class qualname: {field: docstring}}` of every class in a module's source: the string
    right under an annotated name in the class body, cleaned as pydantic cleans it; none when the
    source cannot be read (as pydantic then reads none)."""
    try:
        tree = ast.parse(inspect.getsource(sys.modules[module]))
    except (OSError, TypeError):
        return {}
    found: dict[str, dict[str, str]] = {}

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if not isinstance(node, ast.ClassDef):
                continue
            docs: dict[str, str] = {}
            for field, under in zip(node.body, node.body[1:], strict=False):
                if (
                    isinstance(field, ast.AnnAssign)
                    and isinstance(field.target, ast.Name)
                    and isinstance(under, ast.Expr)
                    and isinstance(under.value, ast.Constant)
                    and isinstance(under.value.value, str)
                ):
                    docs[field.target.id] = inspect.cleandoc(under.value.value)
            found[prefix + node.name] = docs
            visit(node.body, f"{prefix}{node.name}.")

    visit(tree.body, "")
    return found


def field_docstrings(model: type[BaseModel]) -> dict[str, str]:
    """The docstring under each field of an API model (`api.schemas`' bodies, `api.common.Query`'s
    queries) or of the API models it derives from (its own first); none for other models (the
    domain's describe themselves)."""
    docs: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if issubclass(cls, BaseModel) and cls.__module__.startswith("chalicelib.api."):
            docs.update(_docstrings_in(cls.__module__).get(cls.__qualname__, {}))
    return docs


class DocumentedFields(GenerateJsonSchema):
    """pydantic's JSON schema, each field without a `description` described by its docstring
    (`field_docstrings`), as `use_attribute_docstrings` would describe it."""

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        json_schema = super().model_schema(schema)
        docs = field_docstrings(schema["cls"])
        for name, prop in json_schema.get("properties", {}).items():
            if name in docs:
                prop.setdefault("description", docs[name])
        return json_schema


def _operations(app: Any) -> list[tuple[str, str, Any]]:
    """`(path, method, route entry)` of every documented view, sorted by path then method."""
    out = []
    for path, views in sorted(app.routes.items()):
        for method, entry in sorted(views.items()):
            if documented(path, entry):
                out.append((path, method, entry))
    return out


def contract_of(entry: Any) -> Contract:
    """The `Contract` `api_view` attached to a route entry's view.

    Raises:
        TypeError: a view not wrapped by `api_view` (it could not be documented, nor checked).
    """
    contract = getattr(entry.view_function, CONTRACT_ATTRIBUTE, None)
    if not isinstance(contract, Contract):
        raise TypeError(f"view {entry.view_name} is not wrapped by api_view")
    return contract


def _clean(schema: dict[str, Any]) -> dict[str, Any]:
    """A property's schema as a parameter's schema (the title pydantic adds says nothing)."""
    return {k: v for k, v in schema.items() if k != "title"}


def _query_parameters(model: type[BaseModel]) -> list[dict[str, Any]]:
    schema = model.model_json_schema(ref_template=SCHEMA_REF, schema_generator=DocumentedFields)
    required = set(schema.get("required", []))
    out = []
    for name, prop in schema.get("properties", {}).items():
        parameter: dict[str, Any] = {
            "name": name,
            "in": "query",
            "required": name in required,
            "schema": _clean(prop),
        }
        if "description" in prop:
            parameter["description"] = prop["description"]
        out.append(parameter)
    return out


def _path_parameters(path: str) -> list[dict[str, Any]]:
    return [
        {
            "name": name,
            "in": "path",
            "required": True,
            "schema": dict(_PATH_PARAMETERS.get(name, _ID_PARAMETER)),
        }
        for name in re.findall(r"{(\w+)}", path)
    ]


_RESPONSES: dict[str, dict[str, Any]] = {
    name: {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }
    for name, description in {
        "BadRequest": "A malformed request; `field` names the field or parameter.",
        "Unauthenticated": "No bearer token, or one that does not verify.",
        "NotFound": "Nothing of that id in the caller's organization.",
        "TooLarge": "A body over the route's limit (README, Limits).",
        "Refused": "Refused; `code` says why.",
    }.items()
}
"""The error responses operations share (`components.responses`)."""


def _responses(contract: Contract) -> dict[str, Any]:
    def ref(name: str) -> dict[str, str]:
        return {"$ref": f"#/components/responses/{name}"}

    responses: dict[str, Any] = {
        "2XX": {
            "description": "Success: a JSON value (204: no body).",
            "content": {"application/json": {"schema": {}}},
        },
        "400": ref("BadRequest"),
        "404": ref("NotFound"),
        "4XX": ref("Refused"),
    }
    if contract.auth or contract.tool_token or contract.operator:
        responses["401"] = ref("Unauthenticated")
    if contract.body is not None:
        responses["413"] = ref("TooLarge")
    return responses


def build(app: Any) -> dict[str, Any]:
    """The OpenAPI 3.1 document of `app`'s routes.

    Args:
        app: the Chalice app, every blueprint registered (`app.app`).
    Returns:
        The document as a JSON-able dict: one operation per route and method (the 405 views left
        out), operationId the view's name, path ids as strings without `#` or `/`, query
        parameters and request bodies from the view's `Contract`, models under
        `components.schemas`, a bearer (JWT) security scheme required unless the view takes none
        (or takes an eval attempt's tool token: `toolToken`).
    Raises:
        TypeError: a route whose view is not wrapped by `api_view`.
    """
    operations = _operations(app)
    models = sorted(
        {c.body for _, _, e in operations if (c := contract_of(e)).body is not None},
        key=lambda m: m.__name__,
    )
    _, defs = models_json_schema(
        [(m, "validation") for m in models],
        ref_template=SCHEMA_REF,
        schema_generator=DocumentedFields,
    )
    schemas: dict[str, Any] = {**defs.get("$defs", {}), "Error": _ERROR_SCHEMA}
    paths: dict[str, dict[str, Any]] = {}
    for path, method, entry in operations:
        contract = contract_of(entry)
        operation: dict[str, Any] = {
            "operationId": entry.view_name,
            "responses": _responses(contract),
        }
        doc = (entry.view_function.__doc__ or "").strip()
        if doc:
            operation["summary"] = doc.splitlines()[0]
        parameters = _path_parameters(path)
        if contract.query is not None:
            parameters += _query_parameters(contract.query)
        if parameters:
            operation["parameters"] = parameters
        if contract.body is not None:
            operation["requestBody"] = {
                "required": contract.body_required,
                "content": {
                    "application/json": {
                        "schema": {"$ref": SCHEMA_REF.format(model=contract.body.__name__)}
                    }
                },
            }
        if contract.operator:
            operation["security"] = [{"operatorKey": []}]
        elif contract.tool_token:
            operation["security"] = [{"toolToken": []}]
        elif not contract.auth:
            operation["security"] = []
        paths.setdefault(path, {})[method.lower()] = operation
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "assay",
            "version": "1",
            "description": (
                "Evaluations of LLM agents. Every error is "
                '`{"error": {"code", "message", "field"?, "request_id"}}`, and every answer has '
                "an `X-Request-Id` header; gateway errors: "
                + ", ".join(f"{status} `{code}`" for status, (code, _) in GATEWAY_ERRORS.items())
                + "."
            ),
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "responses": _RESPONSES,
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
                "operatorKey": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "The deployment's operator key (`ASSAY_OPERATOR_KEY`): "
                    "the operator's routes take it and no organization's token or API key.",
                },
                "toolToken": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "The `tools_token` of an eval attempt's case payload: it "
                    "opens that attempt's tools only, while the attempt is asked.",
                },
            },
        },
        "security": [{"bearer": []}],
    }


_built: dict[int, dict[str, Any]] = {}


def document(app: Any) -> dict[str, Any]:
    """`build(app)`, built once per app and process (the route table does not change after the
    blueprints are registered)."""
    found = _built.get(id(app))
    if found is None:
        found = _built[id(app)] = build(app)
    return found
