"""Agent runtimes (docs/reference/runtimes.md): how an agent spec is asked one case.

A spec is a JSON object whose `runtime` picks the runtime: `http`, `openai`, `lambda`,
`python` or `recorded` (each module's docstring gives its shape). Any spec may also carry
prices, used to cost answers that do not report a cost::

    "price": {"input_per_mtok_usd": "0.15", "output_per_mtok_usd": "0.60"}   # USD per 1M tokens

Error contract of every `ask` (one try, bounded by `timeout_s`; the caller retries):
`ProviderError` is retryable only when its status is None, 408, 429 or 5xx
(`errors.is_retryable_status`); 401/403 mean credentials rejected. `AgentCrashError` is the
agent's own failure: `failed` with `crash: true`. `DivergentCallError` (a `recorded` agent asked a
case its recording lacks) is neither: the attempt is `incomplete`, divergent, and not retried.
`InvalidInputError` names the spec field that cannot run.

Trust boundary (docs/reference/security.md): what a spec may make the service do is bounded by the
operator's settings, read at call time (`build_runtimes` takes callables, so `bootstrap.override`
applies at once): `python` only under `ASSAY_PYTHON_AGENT_MODULES`, `lambda` only under
`ASSAY_LAMBDA_FUNCTION_PREFIX`, `http`/`openai` egress through `chalicelib.adapters.egress`
(`ASSAY_ALLOW_PRIVATE_NETWORK`). Credentials and recordings are the organization's, read through
the `AskContext` by name; no spec names an environment variable (`api_key_env` is refused in every
spec) or a server path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from chalicelib.adapters.egress import Egress, Resolver, system_resolver
from chalicelib.adapters.runtimes.http import HttpRuntime
from chalicelib.adapters.runtimes.lambda_ import LambdaRuntime
from chalicelib.adapters.runtimes.openai import (
    OpenAIRuntime,
    check_max_tokens,
    check_system_prompt,
)
from chalicelib.adapters.runtimes.python import PythonRuntime
from chalicelib.adapters.runtimes.recorded import RecordedRuntime
from chalicelib.adapters.runtimes.spec_fields import (
    check_headers,
    check_secret_name,
    refuse_api_key_env,
    require_url,
)
from chalicelib.config import Settings
from chalicelib.domain.enums import RuntimeKind
from chalicelib.domain.models import Usage
from chalicelib.domain.money import MAX_PRICE_PER_MTOK_USD
from chalicelib.domain.tools import parse_mcp_connections, parse_tools
from chalicelib.errors import InvalidInputError
from chalicelib.services.ports import AgentRuntime

__all__ = [
    "PROFILE_SETTING_KEYS",
    "Prices",
    "RuntimeRegistry",
    "build_runtimes",
    "runtime_for",
    "spec_prices",
    "validate_profile_settings",
    "validate_spec",
]

_PRICE_KEYS = ("input_per_mtok_usd", "output_per_mtok_usd")
_MICROS_PER_USD = Decimal(1_000_000)
_TOKENS_PER_MTOK = Decimal(1_000_000)


class RuntimeRegistry(dict[RuntimeKind, AgentRuntime]):
    """One runtime of each kind (port `services.ports.Runtimes`): which runtime a spec names, and
    the checks a spec or a model profile's settings pass before they are kept."""

    def runtime_for(self, spec: Any) -> AgentRuntime:
        """The runtime `spec["runtime"]` names (see the module function `runtime_for`)."""
        return runtime_for(spec, self)

    def validate_spec(self, spec: Any) -> None:
        """Check a spec can run (see the module function `validate_spec`)."""
        validate_spec(spec, self)

    def validate_profile_settings(self, settings: Any) -> dict[str, Any]:
        """Check a model profile's settings (see the module function
        `validate_profile_settings`)."""
        return validate_profile_settings(settings, self)


def build_runtimes(
    settings: Callable[[], Settings] | None = None,
    resolver: Callable[[], Resolver] | None = None,
    lambda_client_factory: Callable[[], Any] | None = None,
) -> RuntimeRegistry:
    """One runtime of each kind. Nothing connects until a runtime is first asked.

    Args:
        settings: returns the operator's settings now (bootstrap: `lambda: container.settings`);
            default the settings' defaults (no python modules, the default lambda prefix, private
            networks refused), never the environment.
        resolver: returns the resolver egress uses now (bootstrap: `lambda: container.resolver`);
            default the system resolver.
        lambda_client_factory: builds the boto3 Lambda client lazily (endpoint, timeouts);
            default `boto3.client("lambda")`.

    Returns:
        `{RuntimeKind: runtime}` for all five kinds, with the registry's checks.
    """
    defaults = Settings.model_construct()
    current = settings or (lambda: defaults)
    egress = Egress(
        resolver or (lambda: system_resolver), lambda: current().assay_allow_private_network
    )
    return RuntimeRegistry(
        {
            RuntimeKind.HTTP: HttpRuntime(egress=egress),
            RuntimeKind.OPENAI: OpenAIRuntime(egress=egress),
            RuntimeKind.LAMBDA: LambdaRuntime(
                lambda_client_factory, prefix=lambda: current().assay_lambda_function_prefix
            ),
            RuntimeKind.PYTHON: PythonRuntime(lambda: current().assay_python_agent_modules),
            RuntimeKind.RECORDED: RecordedRuntime(),
        }
    )


def runtime_for(spec: Any, runtimes: Mapping[RuntimeKind, AgentRuntime]) -> AgentRuntime:
    """The runtime `spec["runtime"]` names.

    Raises:
        InvalidInputError: (field "spec") `spec` is not an object; (field "spec.runtime")
            the runtime is missing or not one of `runtimes`, naming the allowed values.
    """
    if not isinstance(spec, Mapping):
        raise InvalidInputError("an agent spec must be a JSON object", field="spec")
    allowed = ", ".join(sorted(str(kind) for kind in runtimes))
    name = spec.get("runtime")
    try:
        kind = RuntimeKind(name) if isinstance(name, str) else None
    except ValueError:
        kind = None
    if kind is None or kind not in runtimes:
        shown = "missing" if name is None else repr(name)
        raise InvalidInputError(
            f"spec.runtime is {shown}; it must be one of: {allowed}",
            field="spec.runtime",
            allowed=sorted(str(k) for k in runtimes),
        )
    return runtimes[kind]


def validate_spec(spec: Any, runtimes: Mapping[RuntimeKind, AgentRuntime]) -> None:
    """Check a spec can run: its runtime, its prices, its tools (`domain.tools.parse_tools`,
    whatever the runtime), then the runtime's own fields.

    The runtime checks the spec with its tools in the OpenAI shape
    (`{"type": "function", "function": {...}}`), the one shape every runtime's own check knows,
    so a spec may declare them flat (`{"name", "effect", "connection_id", ...}`) or in that shape.

    Raises:
        InvalidInputError: naming the field at fault (`spec.runtime`, `spec.price...`,
            `spec.tools[i]...`, or a runtime field such as `spec.url`).
    """
    runtime = runtime_for(spec, runtimes)
    refuse_api_key_env(spec)
    spec_prices(spec)
    declared = parse_tools(spec.get("tools"))
    parse_mcp_connections(spec.get("mcp_connections"))
    checked = dict(spec)
    if "tools" in checked and checked["tools"] is not None:
        checked["tools"] = [tool.openai_tool() for tool in declared]
    runtime.validate(checked)


PROFILE_SETTING_KEYS = (
    "base_url",
    "api_key_secret",
    "extra_headers",
    "max_tokens",
    "system_prompt",
    "url",
    "headers",
)
"""The only keys a model profile's `settings` may hold: how to reach the model, never what runs."""


def validate_profile_settings(
    settings: Any, runtimes: Mapping[RuntimeKind, AgentRuntime]
) -> dict[str, Any]:
    """Check a model profile's `settings`: connection keys only, each valid as in a spec.

    A profile is laid over an agent's spec for an arm and over a judge's runtime, so a key that
    chose what runs (`runtime`, `entrypoint`, `recording_id`, `function_name`) or named the
    service's environment (`api_key_env`) would let a profile do what a spec may not. URLs are
    checked by egress like a spec's.

    Returns:
        The settings.

    Raises:
        InvalidInputError: (field "settings" or "settings.<key>") naming the key at fault.
    """
    if not isinstance(settings, Mapping):
        raise InvalidInputError("settings must be an object", field="settings")
    refuse_api_key_env(settings, prefix="settings")
    for key in settings:
        if key not in PROFILE_SETTING_KEYS:
            raise InvalidInputError(
                f"settings.{key} is not accepted: a model profile's settings hold only connection "
                f"keys ({', '.join(PROFILE_SETTING_KEYS)})",
                field=f"settings.{key}",
            )
    egress = getattr(runtimes.get(RuntimeKind.HTTP), "egress", None) or Egress()
    for key in ("base_url", "url"):
        if key in settings:
            require_url(settings, key, prefix="settings")
            egress.check(settings[key], f"settings.{key}")
    if "api_key_secret" in settings:
        check_secret_name(settings["api_key_secret"], "settings.api_key_secret")
    for key in ("extra_headers", "headers"):
        if key in settings:
            check_headers(settings[key], f"settings.{key}")
    check_max_tokens(settings.get("max_tokens"), "settings.max_tokens")
    check_system_prompt(settings.get("system_prompt"), "settings.system_prompt")
    return dict(settings)


@dataclass(frozen=True)
class Prices:
    """A spec's token prices, in USD per million tokens (exact decimals)."""

    input_per_mtok_usd: Decimal
    output_per_mtok_usd: Decimal

    def cost_micros(self, usage: Usage) -> int:
        """Cost of `usage` in integer micro-USD, rounded half up (Decimal math, no floats)."""
        usd_micros = (
            (
                Decimal(usage.input_tokens) * self.input_per_mtok_usd
                + Decimal(usage.output_tokens) * self.output_per_mtok_usd
            )
            * _MICROS_PER_USD
            / _TOKENS_PER_MTOK
        )
        return int(usd_micros.to_integral_value(rounding=ROUND_HALF_UP))


def spec_prices(spec: Mapping[str, Any]) -> Prices | None:
    """The spec's `price`, parsed; None when the spec has none.

    Both keys are required and no others are allowed (a misspelt key would silently price at
    zero). Values are decimal strings or JSON numbers; numbers go through `str()` so 0.15 is
    Decimal("0.15").

    Raises:
        InvalidInputError: (field "spec.price" or "spec.price.<key>") not an object, a key
            missing or unknown, or a value that is not a finite, non-negative decimal.
    """
    price = spec.get("price")
    if price is None:
        return None
    if not isinstance(price, Mapping):
        raise InvalidInputError(
            "spec.price must be an object {input_per_mtok_usd, output_per_mtok_usd}",
            field="spec.price",
        )
    unknown = sorted(set(price) - set(_PRICE_KEYS))
    if unknown:
        raise InvalidInputError(
            f"spec.price has unknown keys {unknown}; allowed: {', '.join(_PRICE_KEYS)}",
            field="spec.price",
        )
    values = []
    for key in _PRICE_KEYS:
        field = f"spec.price.{key}"
        raw = price.get(key)
        if raw is None:
            raise InvalidInputError(f"{field} is required", field=field)
        if isinstance(raw, bool) or not isinstance(raw, str | int | float):
            raise InvalidInputError(f'{field} must be a decimal string like "0.15"', field=field)
        try:
            value = Decimal(str(raw).strip())
        except InvalidOperation:
            raise InvalidInputError(
                f'{field} must be a decimal string like "0.15"', field=field
            ) from None
        if not value.is_finite() or value < 0:
            raise InvalidInputError(f"{field} must be a non-negative decimal", field=field)
        if value > MAX_PRICE_PER_MTOK_USD:
            raise InvalidInputError(
                f"{field} must be at most {MAX_PRICE_PER_MTOK_USD} USD per 1M tokens", field=field
            )
        values.append(value)
    return Prices(input_per_mtok_usd=values[0], output_per_mtok_usd=values[1])
