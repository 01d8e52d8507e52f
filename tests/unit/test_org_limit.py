"""An organization's concurrency limit (docs/architecture/slots.md, "An organization's limit"): its
own when the operator set one, else the deployment's default as it is now."""

from __future__ import annotations

from chalicelib.domain.records import Organization

T0 = "2026-12-01T08:00:00.000Z"


def test_an_organization_without_its_own_limit_follows_the_default_it_is_given() -> None:
    org = Organization(org_id="acme", created_at=T0, in_flight=3)
    assert org.own_concurrency_limit is None
    assert (org.concurrency_limit(6), org.concurrency_limit(1), org.concurrency_limit(40)) == (
        6,
        1,
        40,
    )


def test_its_own_limit_wins_over_any_default() -> None:
    org = Organization(org_id="acme", created_at=T0, own_concurrency_limit=2)
    assert (org.concurrency_limit(6), org.concurrency_limit(1)) == (2, 2)


def test_its_own_limit_of_zero_is_kept_not_read_as_none() -> None:
    org = Organization(org_id="acme", created_at=T0, own_concurrency_limit=0)
    assert org.concurrency_limit(6) == 0
