"""The `python` runtime: an agent that is a Python function (docs/reference/runtimes.md; local use
and tests).

Spec::

    {"runtime": "python",
     "entrypoint": "package.module:function",   # required, under an allowed module prefix
     "options": {...}}                          # optional, passed to the function as is

Code by import path only where the operator allows it (docs/reference/security.md): the module
must equal or sit under one of the prefixes in `ASSAY_PYTHON_AGENT_MODULES` (comma-separated;
`bench.agents` allows `bench.agents` and `bench.agents.x`), checked before anything is imported;
the function is one public name (no dots, no leading `_`) defined in that module itself (not
something it imported), and callable. With the setting empty (a deployed stage) `runtime: python`
is refused, naming the setting. Both are checked when the spec is saved and again when asked, and
a refusal reads the same whether or not a module outside the prefixes exists.

The function is called as ``function(request: dict, options: dict) -> dict | str`` where
`request` is `CaseRequest.model_dump(mode="json")` and `options` a deep copy of the spec's
options (so a function cannot change the spec). A function that takes a `tools` keyword gets the
attempt's tools as well (`AgentTools`, None outside an eval attempt): ``tools.call("lookup",
{"id": "a1"})`` is decided by the isolation rule like any runtime's call (docs/guides/tools.md),
kept on the attempt, and answers `{"status", "result"?, "error"?, "note"?}`. A `str` is the
answer text; a `dict` is the answer payload of the `http` runtime (`answer`, `calls`, `usage`,
`model`, `cost_usd`, `guardrail`, or `{"error": ..., "crash": true}`). A guardrail block
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
import inspect
import re
from collections.abc import Callable, Sequence
from typing import Any

from chalicelib.adapters.runtimes.answer_payload import answer_from_payload
from chalicelib.adapters.runtimes.transport import check_timeout, clip, run_with_timeout
from chalicelib.domain.agent_output import printed
from chalicelib.domain.models import AgentAnswer, CaseRequest
from chalicelib.errors import AgentCrashError, InvalidInputError, ProviderError
from chalicelib.services.ports import AskContext, ToolCaller

MODULES_SETTING = "ASSAY_PYTHON_AGENT_MODULES"
"""The operator setting listing the module prefixes entrypoints may live under."""

_DOTTED = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
_ENTRYPOINT_RE = re.compile(rf"^({_DOTTED}):([A-Za-z][A-Za-z0-9_]*)$")
_SHAPE = (
    "spec.entrypoint must be 'package.module:function': a module under the allowed prefixes and "
    "one public function defined in it (no dots, no leading '_')"
)


def allowed_prefixes(setting: str | Sequence[str]) -> tuple[str, ...]:
    """The module prefixes of `ASSAY_PYTHON_AGENT_MODULES` ("a.b, c" -> ("a.b", "c"))."""
    parts = setting.split(",") if isinstance(setting, str) else setting
    return tuple(p.strip() for p in parts if p.strip())


def module_allowed(module: str, prefixes: Sequence[str]) -> bool:
    """Whether `module` equals one of `prefixes` or sits under one (at a dot)."""
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def resolve_entrypoint(entrypoint: Any, prefixes: Sequence[str]) -> Callable[..., Any]:
    """The function `"package.module:function"` names, if the operator allows it.

    Nothing is imported unless the module is under `prefixes`.

    Raises:
        InvalidInputError: (field "spec.runtime") no prefixes are allowed; (field
            "spec.entrypoint") malformed, outside the prefixes, not importable, not a function
            defined in the module, or not callable.
    """
    if not prefixes:
        raise InvalidInputError(
            "runtime python is not enabled on this service: the operator allows no modules "
            f"({MODULES_SETTING} is empty)",
            field="spec.runtime",
            setting=MODULES_SETTING,
        )
    match = _ENTRYPOINT_RE.fullmatch(entrypoint) if isinstance(entrypoint, str) else None
    if match is None:
        raise InvalidInputError(_SHAPE, field="spec.entrypoint")
    module_name, name = match.groups()
    if not module_allowed(module_name, prefixes):
        raise InvalidInputError(
            f"spec.entrypoint: {module_name} is not under the modules this service runs agents "
            f"from ({MODULES_SETTING}: {', '.join(prefixes)})",
            field="spec.entrypoint",
            setting=MODULES_SETTING,
        )
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - any import failure means the spec cannot run
        raise InvalidInputError(
            f"spec.entrypoint: cannot import {module_name}: {clip(str(exc), 200)}",
            field="spec.entrypoint",
        ) from exc
    target = vars(module).get(name)
    if target is None or getattr(target, "__module__", None) != module_name:
        raise InvalidInputError(
            f"spec.entrypoint: {module_name} defines no function {name}", field="spec.entrypoint"
        )
    if not callable(target):
        raise InvalidInputError(
            f"spec.entrypoint: {entrypoint} is not callable", field="spec.entrypoint"
        )
    return target


class PythonRuntime:
    """Calls an allowed Python function as the agent (`AgentRuntime`)."""

    def __init__(self, modules: Callable[[], str | Sequence[str]] | None = None) -> None:
        """Args:
        modules: returns the allowed module prefixes now (`Settings.assay_python_agent_modules`,
            read at call time); default none, so nothing runs.
        """
        self._modules = modules or (lambda: "")

    def prefixes(self) -> tuple[str, ...]:
        """The module prefixes allowed now."""
        return allowed_prefixes(self._modules())

    def validate(self, spec: dict[str, Any]) -> None:
        """Check the entrypoint is allowed and resolves to a callable, and `options` is an object.

        Raises:
            InvalidInputError: naming `spec.runtime` (nothing allowed), `spec.entrypoint` or
                `spec.options`.
        """
        resolve_entrypoint(spec.get("entrypoint"), self.prefixes())
        _options(spec)

    def ask(
        self, spec: dict[str, Any], request: CaseRequest, timeout_s: float, ctx: AskContext
    ) -> AgentAnswer:
        """Call the entrypoint with the case; one try, bounded by `timeout_s` seconds.

        Returns:
            The answer (calls without a status default to `executed`).

        Raises:
            ProviderError: raised by the function, or a timeout.
            AgentCrashError: raised by the function, any other exception it raised, or a
                return value that is neither a str nor an answer payload.
            InvalidInputError: the entrypoint is not allowed (any more) or does not resolve.
        """
        timeout_s = check_timeout(timeout_s)
        entrypoint = spec.get("entrypoint")
        function = resolve_entrypoint(entrypoint, self.prefixes())
        options = copy.deepcopy(_options(spec))
        payload = request.model_dump(mode="json")
        source = f"python agent {entrypoint}"

        extra = (
            {"tools": AgentTools(ctx.tools) if ctx.tools else None}
            if _takes_tools(function)
            else {}
        )

        def call() -> Any:
            try:
                return function(payload, options, **extra)
            except (ProviderError, AgentCrashError):
                raise
            except Exception as exc:  # noqa: BLE001 - the agent's own failure, whatever it is
                raise AgentCrashError(
                    f"{source} raised {type(exc).__name__}: {clip(printed(exc))}"
                ) from exc

        result = run_with_timeout(call, timeout_s, source)
        if isinstance(result, str):
            return AgentAnswer(answer=result)
        return answer_from_payload(result, source=source)


class AgentTools:
    """The tools of one eval attempt as a python agent's function calls them (its `tools`
    keyword)."""

    def __init__(self, caller: ToolCaller) -> None:
        self._caller = caller

    @property
    def names(self) -> list[str]:
        """The tools the attempt may call: the spec's, then the workspace's."""
        return list(self._caller.tools)

    def call(self, name: str, arguments: Any) -> dict[str, Any]:
        """Make one call, decided by the isolation rule and kept on the attempt: `{"status",
        "result"?, "error"?, "note"?}` (`domain.tools.ToolReply.for_agent`). Never raises for
        what the agent asked (an unknown tool or bad arguments are `blocked`, saying why)."""
        return self._caller.call(name, arguments).for_agent()


def _takes_tools(function: Callable[..., Any]) -> bool:
    """Whether the agent function takes a `tools` keyword (named, or any keyword)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        p.kind is inspect.Parameter.VAR_KEYWORD
        or (p.name == "tools" and p.kind is not inspect.Parameter.POSITIONAL_ONLY)
        for p in parameters
    )


def _options(spec: dict[str, Any]) -> dict[str, Any]:
    options = spec.get("options")
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise InvalidInputError("spec.options must be an object", field="spec.options")
    return options
