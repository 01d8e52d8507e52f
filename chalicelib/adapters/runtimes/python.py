"""The `python` runtime: an agent that is a Python function (DESIGN §8; local use and tests).

Spec::

    {"runtime": "python",
     "entrypoint": "package.module:function",   # required, importable from sys.path
     "options": {...}}                          # optional, passed to the function as is

The function is called as ``function(request: dict, options: dict) -> dict | str`` where
`request` is `CaseRequest.model_dump(mode="json")` and `options` a deep copy of the spec's
options (so a function cannot change the spec). A `str` is the answer text; a `dict` is the
answer payload of the `http` runtime (`answer`, `calls`, `usage`, `model`, `cost_usd`,
`guardrail`, or `{"error": ..., "crash": true}`). A guardrail block
(``{"guardrail": "pii detected"}``, answer optional) is an answer graded as a refusal, not a
crash.

Errors: a `ProviderError` or `AgentCrashError` the function raises propagates unchanged; any
other exception becomes `AgentCrashError` with its text (the agent's own run failed). The call
runs in a daemon thread bounded by `timeout_s`; past it, `ProviderError("... timed out")` (the
attempt is `incomplete`). A thread cannot be killed, so a timed-out function keeps running in
the background until it returns.
"""

from __future__ import annotations

import copy
import importlib
import re
from collections.abc import Callable
from typing import Any

from chalicelib.adapters.runtimes.http import (
    answer_from_payload,
    check_timeout,
    clip,
    run_with_timeout,
)
from chalicelib.domain.models import AgentAnswer, CaseRequest
from chalicelib.errors import AgentCrashError, InvalidInputError, ProviderError

_DOTTED = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
_ENTRYPOINT_RE = re.compile(rf"^{_DOTTED}:{_DOTTED}$")


def resolve_entrypoint(entrypoint: Any) -> Callable[..., Any]:
    """Import `"package.module:function"` (attribute paths like `mod:Class.method` allowed).

    Raises:
        InvalidInputError: (field "spec.entrypoint") when malformed, not importable, missing
            or not callable.
    """
    if not isinstance(entrypoint, str) or not _ENTRYPOINT_RE.match(entrypoint):
        raise InvalidInputError(
            "spec.entrypoint must look like 'package.module:function'", field="spec.entrypoint"
        )
    module_name, _, attr_path = entrypoint.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - any import failure means the spec cannot run
        raise InvalidInputError(
            f"spec.entrypoint: cannot import {module_name}: {clip(str(exc), 200)}",
            field="spec.entrypoint",
        ) from exc
    for part in attr_path.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise InvalidInputError(
                f"spec.entrypoint: {module_name} has no {attr_path}", field="spec.entrypoint"
            )
    if not callable(target):
        raise InvalidInputError(
            f"spec.entrypoint: {entrypoint} is not callable", field="spec.entrypoint"
        )
    return target


class PythonRuntime:
    """Calls an importable Python function as the agent (`AgentRuntime`)."""

    def validate(self, spec: dict[str, Any]) -> None:
        """Check the entrypoint imports to a callable and `options` is an object.

        Raises:
            InvalidInputError: naming `spec.entrypoint` or `spec.options`.
        """
        resolve_entrypoint(spec.get("entrypoint"))
        _options(spec)

    def ask(self, spec: dict[str, Any], request: CaseRequest, timeout_s: float) -> AgentAnswer:
        """Call the entrypoint with the case; one try, bounded by `timeout_s` seconds.

        Returns:
            The answer (calls without a status default to `executed`).

        Raises:
            ProviderError: raised by the function, or a timeout.
            AgentCrashError: raised by the function, any other exception it raised, or a
                return value that is neither a str nor an answer payload.
            InvalidInputError: the entrypoint does not resolve.
        """
        timeout_s = check_timeout(timeout_s)
        entrypoint = spec.get("entrypoint")
        function = resolve_entrypoint(entrypoint)
        options = copy.deepcopy(_options(spec))
        payload = request.model_dump(mode="json")
        source = f"python agent {entrypoint}"

        def call() -> Any:
            try:
                return function(payload, options)
            except (ProviderError, AgentCrashError):
                raise
            except Exception as exc:  # noqa: BLE001 - the agent's own failure, whatever it is
                raise AgentCrashError(
                    f"{source} raised {type(exc).__name__}: {clip(str(exc))}"
                ) from exc

        result = run_with_timeout(call, timeout_s, source)
        if isinstance(result, str):
            return AgentAnswer(answer=result)
        return answer_from_payload(result, source=source)


def _options(spec: dict[str, Any]) -> dict[str, Any]:
    options = spec.get("options")
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise InvalidInputError("spec.options must be an object", field="spec.options")
    return options
