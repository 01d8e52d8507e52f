"""What the operator sets for one organization: its concurrency limit (docs/architecture/slots.md).

An organization without a limit of its own follows the deployment's `EVAL_ORG_CONCURRENCY` as it
is now; the operator may give one organization its own (`PUT /api/v1/organizations/{id}/limits`,
an operator route: no tenant, whatever its role). Either is read when a slot is claimed, so a
change holds from the next claim on: slots already in flight stay with their runs until they are
given back (a lowered limit takes none away), and a raised one is handed to the waiting runs at
once.
"""

from __future__ import annotations

from dataclasses import dataclass

from chalicelib.bootstrap import Container
from chalicelib.clock import iso
from chalicelib.domain.identity import is_org_id
from chalicelib.domain.records import Organization
from chalicelib.errors import InvalidInputError
from chalicelib.services import slots


@dataclass(frozen=True)
class OrgLimits:
    """One organization's concurrency as it stands: `own` its own limit (None: it follows the
    default), `default` the deployment's `EVAL_ORG_CONCURRENCY` now, `effective` the one a claim
    is held to, `in_flight` the slots it holds, `started` tasks started by this change (slots a
    raised limit handed to waiting runs at once)."""

    org_id: str
    own: int | None
    default: int
    effective: int
    in_flight: int
    started: int = 0


def limits_of(c: Container, org: Organization, started: int = 0) -> OrgLimits:
    """`org`'s `OrgLimits` under the settings as they are now."""
    default = int(c.settings.eval_org_concurrency)
    return OrgLimits(
        org_id=org.org_id,
        own=None if org.own_concurrency_limit is None else int(org.own_concurrency_limit),
        default=default,
        effective=org.concurrency_limit(default),
        in_flight=int(org.in_flight),
        started=started,
    )


def set_concurrency(c: Container, org_id: str, limit: int | None) -> OrgLimits:
    """Give the organization `org_id` its own concurrency limit (`limit` slots, 1-1000, checked by
    the route's body), or remove it (None: it follows the default again). The operator's: the
    route checks who asks (`api.common.operator_from`).

    An organization not used yet is created (so the limit holds from its first run). Free slots
    under the new limit go to the organization's waiting runs at once (`slots.assign_free_slots`).

    Raises:
        InvalidInputError: `org_id` is no organization id (`domain.identity.ORG_ID`).
    """
    if not is_org_id(org_id):
        raise InvalidInputError(
            "org_id must be 1-100 letters, digits and _ . @ -, starting with a letter or digit",
            field="org_id",
        )
    c.orgs.ensure(org_id, now_iso=iso(c.clock.now()))
    c.orgs.set_limit(org_id, limit)
    started = slots.assign_free_slots(c, org_id)
    org = c.orgs.get(org_id)
    assert org is not None  # ensured above; organizations are never deleted
    return limits_of(c, org, started)
