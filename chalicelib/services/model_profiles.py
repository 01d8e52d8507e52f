"""Model profiles: which model an arm runs on (docs/reference/runtimes.md).

A profile's settings are laid over an agent's spec for the arms that use it, so one agent version
can be run on several models side by side in one run. They are tenant input laid over a spec, so
they hold only how to reach the model (`runtimes.PROFILE_SETTING_KEYS`: base URL, secret names,
headers, max tokens, system prompt), checked like a spec's (docs/reference/security.md); never
what runs (`runtime`, `entrypoint`, `recording_id`, `function_name`) or an environment variable.
"""

from __future__ import annotations

from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.clock import iso
from chalicelib.domain import access
from chalicelib.domain.identity import Identity
from chalicelib.domain.ids import check_tenant_id
from chalicelib.domain.money import MAX_PRICE_PER_MTOK_USD, to_decimal
from chalicelib.domain.records import ModelProfile
from chalicelib.errors import ConflictError, InvalidInputError
from chalicelib.services import draft_checks, redacting
from chalicelib.services.environments import active_runs_using

PRICE_KEYS = ("input_per_mtok_usd", "output_per_mtok_usd")


def create(
    c: Container,
    who: Identity,
    *,
    model_profile_id: str,
    model: str,
    name: str = "",
    settings: dict[str, Any] | None = None,
    temperature: float | None = None,
    price: dict[str, Any] | None = None,
) -> ModelProfile:
    """Create a profile. A profile laid over a run sends the secrets its settings name to the
    URL they give, so naming a secret needs what naming one in a draft needs
    (`draft_checks.check_profile_settings`: `secrets:manage`); the profile records that its
    saver held it (`secrets_vetted`), which lets a starter without it run on the profile.

    Raises:
        InvalidInputError: a bad price, an id with `#` or `/`, or settings that are not
            connection keys or not valid as a spec's (field `settings.<key>`).
        ForbiddenError: (403, field `settings`, permission `secrets:manage`) settings naming a
            secret, from somebody without `secrets:manage`.
        ConflictError: an id the organization has already.
    """

    check_tenant_id(model_profile_id, "model_profile_id")
    settings = c.runtimes.validate_profile_settings(settings or {})
    redacting.refuse_secrets(c, who.org_id, settings, "settings")
    draft_checks.check_profile_settings(c, who, settings)
    if price is not None:
        if set(price) != set(PRICE_KEYS):
            raise InvalidInputError(
                f"price needs exactly {', '.join(PRICE_KEYS)} (USD per 1M tokens)", field="price"
            )
        try:
            price = {
                k: str(to_decimal(price[k], field=f"price.{k}", maximum=MAX_PRICE_PER_MTOK_USD))
                for k in PRICE_KEYS
            }
        except ValueError as exc:
            raise InvalidInputError(str(exc), field="price") from None
    row = ModelProfile(
        org_id=who.org_id,
        model_profile_id=model_profile_id,
        name=name or model_profile_id,
        model=model,
        settings=settings or {},
        temperature=temperature,
        price=price,
        created_at=iso(c.clock.now()),
        created_by=who.user_id,
        secrets_vetted=who.may(access.SECRETS_MANAGE),
    )
    c.model_profiles.create(row)
    return row


def apply(spec: dict[str, Any], profile: ModelProfile) -> dict[str, Any]:
    """`spec` run on `profile`: its settings over the spec, then its model, temperature and
    price."""
    out = {
        **spec,
        **(profile.settings or {}),
        "model": profile.model,
        "model_profile_id": profile.model_profile_id,
    }
    if profile.temperature is not None:
        out["temperature"] = float(profile.temperature)
    if profile.price:
        out["price"] = dict(profile.price)
    return out


def delete(c: Container, who: Identity, model_profile_id: str) -> None:
    """Remove a model profile: refused (409) while a queued or running run has an arm on it."""
    c.model_profiles.get(who.org_id, model_profile_id)
    busy = active_runs_using(c, who.org_id, model_profile_id=model_profile_id)
    if busy:
        raise ConflictError(
            f"model profile {model_profile_id} is used by eval run {busy[0]} (queued or running)",
            field="model_profile_id",
            run_ids=busy,
        )
    c.model_profiles.delete(who.org_id, model_profile_id)
