"""An organization's concurrency limit (docs/architecture/slots.md, "An organization's limit"):
`EVAL_ORG_CONCURRENCY` is the live default of every organization without a limit of its own, and
the operator sets or removes one organization's own (`PUT /api/v1/organizations/{id}/limits`, the
deployment's operator key only); either holds from the next slot claimed.

The agent holds every call until the test lets it answer (`tests.support.agents.hold`): the calls
in flight only grow while the test looks, so "at most n at once" is checked while they are held and
over the whole run (the agent's own peak).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from assay.client import AssayClient
from tests.e2e.conftest import cases
from tests.support.agents import held_spec, hold
from tests.support.e2e import Api

KEY = "operator-" + uuid.uuid4().hex + uuid.uuid4().hex


@pytest.fixture
def as_operator(stack, operator) -> Api:
    """The operator (`ASSAY_OPERATOR_KEY` set for this test, and its key as the bearer), with the
    defaults of a fresh deployment: 3 slots a run, 6 an organization."""
    operator(assay_operator_key=KEY, eval_run_concurrency=3, eval_org_concurrency=6)
    return Api(stack.api_url, "-", "operator", KEY)


def _limits(op: Api, org_id: str, concurrency: Any) -> dict[str, Any]:
    return op.ok("PUT", f"/api/v1/organizations/{org_id}/limits", json={"concurrency": concurrency})


def _held_run(api: Api, n: int) -> tuple[Any, str]:
    """A hold and the run of a new agent held on it, over `n` cases."""
    h = hold(f"limits-{uuid.uuid4().hex}")
    agent = api.agent(held_spec(h.name))
    return h, api.start(agent, api.dataset(cases(n)))["run_id"]


def test_an_organization_follows_the_default_as_it_is_now_not_as_it_first_was(
    api, container, operator
):
    operator(eval_run_concurrency=3, eval_org_concurrency=6)
    first, run = _held_run(api, 3)
    first.wait_in_flight(3)
    first.open()
    assert api.wait(run)["status"] == "completed"
    assert container.orgs.get(api.org_id).own_concurrency_limit is None

    # The stack starts again with EVAL_ORG_CONCURRENCY=1: the organization, used before, follows it.
    operator(eval_run_concurrency=3, eval_org_concurrency=1)
    h, run = _held_run(api, 3)
    h.wait_in_flight(1)
    assert container.orgs.get(api.org_id).in_flight == 1
    assert api.ok("GET", f"/api/v1/eval-runs/{run}/progress")["in_flight"] == 1
    h.open()
    assert api.wait(run)["status"] == "completed"
    assert (h.peak, h.run_calls[run]) == (1, 3), h.seen()


def test_the_operator_sets_one_organization_s_limit_and_it_holds_from_the_next_claim(
    api, new_api, as_operator, container
):
    other = new_api()
    assert _limits(as_operator, api.org_id, 1) == {
        "org_id": api.org_id,
        "concurrency": 1,
        "default_concurrency": 6,
        "effective_concurrency": 1,
        "in_flight": 0,
        "started": 0,
    }
    h, run = _held_run(api, 4)
    h.wait_in_flight(1)
    assert (container.orgs.get(api.org_id).in_flight, h.in_flight) == (1, 1), h.seen()
    # another organization keeps the default
    g, elsewhere = _held_run(other, 3)
    g.wait_in_flight(3)

    # raised while the run waits for slots: the free one goes to it at once
    raised = _limits(as_operator, api.org_id, 2)
    assert (raised["effective_concurrency"], raised["in_flight"], raised["started"]) == (2, 2, 1)
    h.wait_in_flight(2)

    # lowered: the slots in flight stay with their run, but the next claim is held to it
    assert _limits(as_operator, api.org_id, 1)["in_flight"] == 2
    second = api.start(api.agent(held_spec(h.name)), api.dataset(cases(1)))
    assert second["status"] == "queued"
    assert api.ok("GET", f"/api/v1/eval-runs/{second['run_id']}/progress")["in_flight"] == 0

    # removed: back to the default (6), handed out at once
    removed = _limits(as_operator, api.org_id, None)
    assert (removed["concurrency"], removed["effective_concurrency"]) == (None, 6)
    assert removed["started"] >= 1
    h.wait_in_flight(3)
    h.open()
    g.open()
    for done in (run, second["run_id"]):
        assert api.wait(done)["status"] == "completed"
    assert other.wait(elsewhere)["status"] == "completed"
    assert g.peak == 3 and h.run_peak[run] <= 3, (g.seen(), h.seen())
    assert container.orgs.get(api.org_id).own_concurrency_limit is None


def test_a_limit_set_before_an_organization_s_first_use_holds_from_its_first_run(
    new_api, as_operator
):
    org_id = f"org_{uuid.uuid4().hex[:10]}"
    assert _limits(as_operator, org_id, 1)["effective_concurrency"] == 1
    api = new_api(org_id=org_id, role=None)  # its first sign-in: its admin
    h, run = _held_run(api, 3)
    h.wait_in_flight(1)
    h.open()
    assert api.wait(run)["status"] == "completed"
    assert h.peak == 1, h.seen()


def test_the_client_sets_and_removes_a_limit_with_the_operator_key(stack, api, as_operator):
    client = AssayClient(stack.api_url, KEY)
    assert client.set_org_limits(api.org_id, concurrency=5)["effective_concurrency"] == 5
    assert client.set_org_limits(api.org_id, concurrency=None)["concurrency"] is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"concurrency": 0}, "concurrency"),
        ({"concurrency": 1001}, "concurrency"),
        ({"concurrency": "3"}, "concurrency"),
        ({"concurrency": True}, "concurrency"),
        ({"concurrency": 2.5}, "concurrency"),
        ({}, "concurrency"),
        ({"concurrency": 2, "slots": 3}, "slots"),
    ],
)
def test_a_limit_out_of_range_or_not_an_integer_is_a_400_naming_it(
    api, as_operator, container, body, field
):
    status, answer = as_operator.call(
        "PUT", f"/api/v1/organizations/{api.org_id}/limits", json=body
    )
    assert (status, answer["error"]["field"]) == (400, field), answer
    org = container.orgs.get(api.org_id)
    assert org is None or org.own_concurrency_limit is None


def test_an_organization_id_nothing_can_be_is_a_400_naming_it(as_operator):
    status, answer = as_operator.call(
        "PUT", "/api/v1/organizations/-not..an-id/limits", json={"concurrency": 2}
    )
    assert (status, answer["error"]["field"]) == (400, "org_id"), answer


def test_who_is_not_the_operator_is_refused(stack, api, operator, container):
    path = f"/api/v1/organizations/{api.org_id}/limits"
    body = {"concurrency": 100}
    # no operator key on this deployment: nobody is the operator, the admin neither
    status, answer = api.call("PUT", path, json=body)
    assert (status, answer["error"]["permission"]) == (403, "operator"), answer
    assert "ASSAY_OPERATOR_KEY" in answer["error"]["message"]

    operator(assay_operator_key=KEY)
    status, answer = api.call("PUT", path, json=body)  # the organization's admin
    assert (status, answer["error"]["permission"]) == (403, "operator"), answer
    assert "ASSAY_OPERATOR_KEY" not in answer["error"]["message"]
    for token in (None, KEY[:-1], KEY + "x", "Bearer"):
        stranger = Api(stack.api_url, "-", "-", token)
        status, answer = stranger.call("PUT", path, json=body)
        assert (status, answer["error"]["code"]) == (401, "unauthenticated"), (token, answer)
    assert container.orgs.get(api.org_id) is None  # nothing made it, nor set a limit
