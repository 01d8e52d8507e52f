"""Agent runtimes (DESIGN §8): how an agent spec is asked one case.

A spec is a JSON object whose `runtime` picks the runtime: `http`, `openai`, `lambda`,
`python` or `recorded` (each module's docstring gives its shape). Any spec may also carry
prices, used to cost answers that do not report a cost::

    "price": {"input_per_mtok_usd": "0.15", "output_per_mtok_usd": "0.60"}   # USD per 1M tokens

Error contract of every `ask` (one try, bounded by `timeout_s`; the caller retries):
`ProviderError` is retryable only when its status is None, 408, 429 or 5xx
(`is_retryable_status`); 401/403 mean credentials rejected. `AgentCrashError` (and its
`DivergentCallError`) is the agent's own failure: `failed` with `crash: true`.
`InvalidInputError` names the spec field that cannot run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from chalicelib.adapters.runtimes.http import HttpRuntime, is_retryable_status
from chalicelib.adapters.runtimes.lambda_ import LambdaRuntime
from chalicelib.adapters.runtimes.openai import OpenAIRuntime
from chalicelib.adapters.runtimes.python import PythonRuntime
from chalicelib.adapters.runtimes.recorded import RecordedRuntime
from chalicelib.domain.money import MAX_PRICE_PER_MTOK_USD
from chalicelib.domain.enums import RuntimeKind
from chalicelib.domain.models import Usage
from chalicelib.errors import InvalidInputError
from chalicelib.services.ports import AgentRuntime

__all__ = [
    "Prices",
    "build_runtimes",
    "is_retryable_status",
    "runtime_for",
    "spec_prices",
    "validate_spec",
]

_PRICE_KEYS = ("input_per_mtok_usd", "output_per_mtok_usd")
_MICROS_PER_USD = Decimal(1_000_000)
_TOKENS_PER_MTOK = Decimal(1_000_000)


def build_runtimes(
    recordings_dir: str | None, lambda_client_factory: Callable[[], Any] | None = None
) -> dict[RuntimeKind, AgentRuntime]:
    """One runtime of each kind. Nothing connects until a runtime is first asked.

    Args:
        recordings_dir: where `recorded` specs' relative paths resolve (None or "": the
            working directory at call time), e.g. `Settings.assay_recordings_dir`.
        lambda_client_factory: builds the boto3 Lambda client lazily (endpoint, timeouts);
            default `boto3.client("lambda")`.

    Returns:
        `{RuntimeKind: runtime}` for all five kinds.
    """
    return {
        RuntimeKind.HTTP: HttpRuntime(),
        RuntimeKind.OPENAI: OpenAIRuntime(),
        RuntimeKind.LAMBDA: LambdaRuntime(lambda_client_factory),
        RuntimeKind.PYTHON: PythonRuntime(),
        RuntimeKind.RECORDED: RecordedRuntime(recordings_dir),
    }


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
    """Check a spec can run: its runtime, its prices, then the runtime's own fields.

    Raises:
        InvalidInputError: naming the field at fault (`spec.runtime`, `spec.price...`,
            or a runtime field such as `spec.url`).
    """
    runtime = runtime_for(spec, runtimes)
    spec_prices(spec)
    runtime.validate(dict(spec))


@dataclass(frozen=True)
class Prices:
    """A spec's token prices, in USD per million tokens (exact decimals)."""

    input_per_mtok_usd: Decimal
    output_per_mtok_usd: Decimal

    def cost_micros(self, usage: Usage) -> int:
        """Cost of `usage` in integer micro-USD, rounded half up (Decimal math, no floats)."""
        usd_micros = (
            Decimal(usage.input_tokens) * self.input_per_mtok_usd
            + Decimal(usage.output_tokens) * self.output_per_mtok_usd
        ) * _MICROS_PER_USD / _TOKENS_PER_MTOK
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
            raise InvalidInputError(f"{field} must be a decimal string like \"0.15\"", field=field)
        try:
            value = Decimal(str(raw).strip())
        except InvalidOperation:
            raise InvalidInputError(
                f"{field} must be a decimal string like \"0.15\"", field=field
            ) from None
        if not value.is_finite() or value < 0:
            raise InvalidInputError(f"{field} must be a non-negative decimal", field=field)
        if value > MAX_PRICE_PER_MTOK_USD:
            raise InvalidInputError(f"{field} must be at most {MAX_PRICE_PER_MTOK_USD} USD per 1M tokens",
                                    field=field)
        values.append(value)
    return Prices(input_per_mtok_usd=values[0], output_per_mtok_usd=values[1])
