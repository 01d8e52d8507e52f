"""Agents: a draft edited in place, immutable published versions, and the publish pipeline's
`version_published` messages on the agent-events queue (schema:
`chalicelib.services.agent_events`)."""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from typing import Any

import boto3
import pytest

from assay.client import sign_event
from chalicelib import names
from infra.resources import AGENT_EVENTS_VISIBILITY_TIMEOUT_SECONDS as RETRY_AFTER_S
from tests.e2e.conftest import sleepy_spec, wait_for
from tests.support.e2e import Api, signing_key


def sha256_of_canonical_json(value: Any) -> str:
    """A spec's hash: sha256 of canonical JSON (sorted keys, no whitespace), written out
    by hand here."""
    return hashlib.sha256(
        json.dumps(value, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()


SPEC = {
    "runtime": "python",
    "entrypoint": "bench.agents:sleepy",
    "options": {"sleep_ms": 0, "answer": "42"},
}
SAME_SPEC_OTHER_ORDER = {
    "options": {"answer": "42", "sleep_ms": 0},
    "entrypoint": "bench.agents:sleepy",
    "runtime": "python",
}
OTHER_SPEC = {
    "runtime": "python",
    "entrypoint": "bench.agents:sleepy",
    "options": {"sleep_ms": 0, "answer": "43"},
}


# --- drafts ----------------------------------------------------------------------------------


def test_a_new_agent_has_its_spec_as_draft_hashed_over_canonical_json(api):
    status, agent = api.call("POST", "/api/v1/agents", json={"name": "Support bot", "spec": SPEC})
    assert status == 201, agent
    assert agent["name"] == "Support bot" and agent["org_id"] == api.org_id
    assert agent["agent_id"].startswith("agt_")
    assert agent["latest_version"] is None and agent["live_version"] is None
    assert agent["draft"]["spec"] == SPEC
    assert agent["draft"]["spec_hash"] == sha256_of_canonical_json(SPEC)
    assert agent["draft"]["updated_at"].endswith("Z")
    read = api.ok("GET", f"/api/v1/agents/{agent['agent_id']}")
    assert {k: read[k] for k in agent} == agent
    assert read["draft_differs"] is True and read["last_run"] is None
    assert read["verdicts"]["live"] is None and read["verdicts"]["draft"]["verdict"] == "none"
    assert api.ok("GET", f"/api/v1/agents/{agent['agent_id']}/draft") == agent["draft"]
    assert [a["agent_id"] for a in api.ok("GET", "/api/v1/agents")["agents"]] == [agent["agent_id"]]


def test_the_same_spec_with_keys_in_another_order_has_the_same_hash_and_keeps_updated_at(api):
    agent = api.ok("POST", "/api/v1/agents", json={"name": "a", "spec": SPEC})
    time.sleep(0.01)
    after = api.ok(
        "PUT", f"/api/v1/agents/{agent['agent_id']}/draft", json={"spec": SAME_SPEC_OTHER_ORDER}
    )
    assert after["draft"]["spec_hash"] == agent["draft"]["spec_hash"]
    assert after["draft"]["updated_at"] == agent["draft"]["updated_at"]

    # A rename alone changes neither either.
    renamed = api.ok("PUT", f"/api/v1/agents/{agent['agent_id']}/draft", json={"name": "renamed"})
    assert renamed["name"] == "renamed"
    assert renamed["draft"]["spec_hash"] == agent["draft"]["spec_hash"]
    assert renamed["draft"]["updated_at"] == agent["draft"]["updated_at"]


def test_another_spec_changes_the_hash_and_moves_updated_at(api):
    agent = api.ok("POST", "/api/v1/agents", json={"name": "a", "spec": SPEC})
    time.sleep(0.01)
    after = api.ok("PUT", f"/api/v1/agents/{agent['agent_id']}/draft", json={"spec": OTHER_SPEC})
    assert after["draft"]["spec"] == OTHER_SPEC
    assert (
        after["draft"]["spec_hash"]
        == sha256_of_canonical_json(OTHER_SPEC)
        != agent["draft"]["spec_hash"]
    )
    assert after["draft"]["updated_at"] > agent["draft"]["updated_at"]
    assert after["name"] == "a"
    assert api.ok("GET", f"/api/v1/agents/{agent['agent_id']}/draft")["spec"] == OTHER_SPEC


# --- publishing over the API -----------------------------------------------------------------


def test_publishing_the_draft_makes_versions_1_and_2_immutable_copies(api):
    agent_id = api.ok("POST", "/api/v1/agents", json={"name": "a", "spec": SPEC})["agent_id"]
    status, v1 = api.call("POST", f"/api/v1/agents/{agent_id}/versions")
    assert status == 201, v1
    assert (v1["version"], v1["created"], v1["spec"]) == (1, True, SPEC)
    assert v1["spec_hash"] == sha256_of_canonical_json(SPEC)
    assert (v1["published_by"], v1["source"]) == (api.user_id, "api")

    api.ok("PUT", f"/api/v1/agents/{agent_id}/draft", json={"spec": OTHER_SPEC})
    status, v2 = api.call("POST", f"/api/v1/agents/{agent_id}/versions", json={})
    assert status == 201, v2
    assert (v2["version"], v2["spec"]) == (2, OTHER_SPEC)

    # Editing the draft afterwards changes neither version.
    api.ok("PUT", f"/api/v1/agents/{agent_id}/draft", json={"spec": sleepy_spec(answer="99")})
    assert api.ok("GET", f"/api/v1/agents/{agent_id}/versions/1")["spec"] == SPEC
    assert api.ok("GET", f"/api/v1/agents/{agent_id}/versions/2")["spec"] == OTHER_SPEC
    listed = api.ok("GET", f"/api/v1/agents/{agent_id}/versions")["versions"]
    assert [v["version"] for v in listed] == [2, 1]
    agent = api.ok("GET", f"/api/v1/agents/{agent_id}")
    assert (agent["latest_version"], agent["live_version"]) == (2, 2)


def test_republishing_a_number_with_the_same_spec_is_a_no_op_and_with_another_spec_is_409(api):
    agent_id = api.ok("POST", "/api/v1/agents", json={"name": "a", "spec": SPEC})["agent_id"]
    v1 = api.ok("POST", f"/api/v1/agents/{agent_id}/versions", json={"version": 1})

    # The same spec, even re-saved with its keys in another order: 200, nothing created.
    api.ok("PUT", f"/api/v1/agents/{agent_id}/draft", json={"spec": SAME_SPEC_OTHER_ORDER})
    status, again = api.call("POST", f"/api/v1/agents/{agent_id}/versions", json={"version": 1})
    assert status == 200, again
    assert again["created"] is False
    assert (again["version"], again["spec_hash"], again["published_at"]) == (
        1,
        v1["spec_hash"],
        v1["published_at"],
    )

    # Another spec under a published number: refused, and version 1 is unchanged.
    api.ok("PUT", f"/api/v1/agents/{agent_id}/draft", json={"spec": OTHER_SPEC})
    status, body = api.call("POST", f"/api/v1/agents/{agent_id}/versions", json={"version": 1})
    assert status == 409, body
    assert body["error"]["code"] == "conflict" and body["error"]["field"] == "version"
    assert "immutable" in body["error"]["message"]
    assert api.ok("GET", f"/api/v1/agents/{agent_id}/versions/1")["spec"] == SPEC
    assert [
        v["version"] for v in api.ok("GET", f"/api/v1/agents/{agent_id}/versions")["versions"]
    ] == [1]
    assert api.ok("GET", f"/api/v1/agents/{agent_id}")["latest_version"] == 1


def test_publishing_an_earlier_number_later_keeps_latest_version(api):
    agent_id = api.ok("POST", "/api/v1/agents", json={"name": "a", "spec": SPEC})["agent_id"]
    api.ok("POST", f"/api/v1/agents/{agent_id}/versions", json={"version": 3})
    api.ok("PUT", f"/api/v1/agents/{agent_id}/draft", json={"spec": OTHER_SPEC})
    status, v2 = api.call("POST", f"/api/v1/agents/{agent_id}/versions", json={"version": 2})
    assert status == 201, v2
    assert api.ok("GET", f"/api/v1/agents/{agent_id}")["latest_version"] == 3
    assert [
        v["version"] for v in api.ok("GET", f"/api/v1/agents/{agent_id}/versions")["versions"]
    ] == [3, 2]
    # The next default number follows the latest.
    assert api.ok("POST", f"/api/v1/agents/{agent_id}/versions")["version"] == 4


# --- the publish pipeline (SQS agent-events) -------------------------------------------------


class AgentEvents:
    """The agent-events queue and its DLQ, as a publish pipeline and an operator see them."""

    def __init__(self, stack) -> None:
        self.sqs = boto3.client(
            "sqs",
            endpoint_url=stack.endpoint_url,
            region_name=stack.settings.aws_default_region,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        self.queue = stack.queue_urls[names.AGENT_EVENTS_QUEUE]
        self.dlq = stack.queue_urls[names.AGENT_EVENTS_DLQ]
        self.keys: dict[str, str] = {}

    def trust(self, api: Api) -> str:
        """Give `api`'s organization its pipeline signing key: messages for it are signed from
        now on (`send`). Returns the key."""
        self.keys[api.org_id] = signing_key(api)
        return self.keys[api.org_id]

    def send(self, body: str | dict[str, Any], *, sign: bool = True) -> str:
        """Put a message on the queue, a dict for a trusted organization signed with its key (as
        its pipeline does); returns the text sent."""
        if isinstance(body, dict) and sign and body.get("org_id") in self.keys:
            body = sign_event(body, self.keys[body["org_id"]])
        text = body if isinstance(body, str) else json.dumps(body)
        self.sqs.send_message(QueueUrl=self.queue, MessageBody=text)
        return text

    def queue_counts(self) -> tuple[int, int]:
        """(visible, in flight) messages of the main queue."""
        attrs = self.sqs.get_queue_attributes(
            QueueUrl=self.queue,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return int(attrs["ApproximateNumberOfMessages"]), int(
            attrs["ApproximateNumberOfMessagesNotVisible"]
        )

    def dead(
        self, marker: str, timeout_s: float, linger_s: float = 0.0, count: int = 1
    ) -> list[dict[str, Any]]:
        """The DLQ messages whose body contains `marker`: polled until `count` arrived or
        `timeout_s` passes, then for `linger_s` more so a further copy would show. Each is deleted
        once read, so a copy is never counted twice; other messages are left visible for whoever
        owns them. Each message gets `"seconds"`: how long after this call it was seen."""
        found: list[dict[str, Any]] = []
        started = time.monotonic()
        deadline = started + timeout_s
        while time.monotonic() < deadline:
            got = self.sqs.receive_message(
                QueueUrl=self.dlq,
                MaxNumberOfMessages=10,
                WaitTimeSeconds=0,
                VisibilityTimeout=5,
                MessageAttributeNames=["All"],
                AttributeNames=["All"],
            ).get("Messages", [])
            for m in got:
                if marker in m["Body"]:
                    found.append({**m, "seconds": time.monotonic() - started})
                    if len(found) == count:
                        deadline = time.monotonic() + linger_s
                    self.sqs.delete_message(QueueUrl=self.dlq, ReceiptHandle=m["ReceiptHandle"])
                else:
                    self.sqs.change_message_visibility(
                        QueueUrl=self.dlq, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0
                    )
            if not got:
                time.sleep(0.05)
        return found


@pytest.fixture
def events(stack) -> AgentEvents:
    return AgentEvents(stack)


def test_a_version_published_message_registers_the_version(api, events):
    events.trust(api)
    agent_id = api.ok("POST", "/api/v1/agents", json={"name": "a", "spec": SPEC})["agent_id"]
    events.send(
        {
            "type": "version_published",
            "org_id": api.org_id,
            "agent_id": agent_id,
            "version": 1,
            "spec": OTHER_SPEC,
            "published_by": "release-bot",
        }
    )

    def version_1():
        status, body = api.call("GET", f"/api/v1/agents/{agent_id}/versions/1")
        return body if status == 200 else None

    v1 = wait_for(version_1)
    assert v1["spec"] == OTHER_SPEC and v1["spec_hash"] == sha256_of_canonical_json(OTHER_SPEC)
    assert (v1["published_by"], v1["source"]) == ("release-bot", "pipeline")
    agent = api.ok("GET", f"/api/v1/agents/{agent_id}")
    assert agent["latest_version"] == 1
    assert agent["draft"]["spec"] == SPEC  # the pipeline publishes; it does not touch the draft

    # The same message again (at-least-once delivery, or a pipeline retry) changes nothing and is no
    # error.
    events.send(
        {
            "type": "version_published",
            "org_id": api.org_id,
            "agent_id": agent_id,
            "version": 1,
            "spec": OTHER_SPEC,
            "published_by": "release-bot",
        }
    )
    events.send(
        {
            "type": "version_published",
            "org_id": api.org_id,
            "agent_id": agent_id,
            "version": 2,
            "spec": SPEC,
        }
    )
    wait_for(lambda: api.ok("GET", f"/api/v1/agents/{agent_id}")["latest_version"] == 2)
    wait_for(lambda: events.queue_counts() == (0, 0))
    assert (
        events.dead(agent_id, timeout_s=0.5) == []
    )  # (sent last, so its dead copy would be there by now)
    versions = api.ok("GET", f"/api/v1/agents/{agent_id}/versions")["versions"]
    assert [(v["version"], v["spec"], v["published_by"]) for v in versions] == [
        (2, SPEC, "pipeline"),
        (1, OTHER_SPEC, "release-bot"),
    ]


def _version_2(org: str, agent: str) -> dict[str, Any]:
    """A well-formed publish of version 2 (refused for its signature alone)."""
    return {
        "type": "version_published",
        "org_id": org,
        "agent_id": agent,
        "version": 2,
        "spec": OTHER_SPEC,
    }


MALFORMED = {
    "not-json": (lambda org, agent: f"this is not JSON {org}", "not JSON"),
    "not-an-object": (lambda org, agent: json.dumps([org, agent]), "unknown event type"),
    "unknown-type": (
        lambda org, agent: {
            "type": "version_deleted",
            "org_id": org,
            "agent_id": agent,
            "version": 1,
        },
        "unknown event type 'version_deleted'",
    ),
    "missing-fields": (
        lambda org, agent: {"type": "version_published", "org_id": org, "agent_id": agent},
        "version",
    ),
    "bad-version": (
        lambda org, agent: {
            "type": "version_published",
            "org_id": org,
            "agent_id": agent,
            "version": 0,
            "spec": SPEC,
        },
        "version",
    ),
    "version-true": (
        lambda org, agent: {
            "type": "version_published",
            "org_id": org,
            "agent_id": agent,
            "version": True,
            "spec": SPEC,
        },
        "version",
    ),
    "unknown-agent": (
        lambda org, agent: {
            "type": "version_published",
            "org_id": org,
            "agent_id": f"ghost-{org}",
            "version": 1,
            "spec": SPEC,
        },
        "not found",
    ),
    "unknown-runtime": (
        lambda org, agent: {
            "type": "version_published",
            "org_id": org,
            "agent_id": agent,
            "version": 2,
            "spec": {"runtime": "telepathy"},
        },
        "spec.runtime",
    ),
    "unsigned": (_version_2, "not signed"),
    "forged": (_version_2, "does not verify"),  # signed with another key
    "same-version-other-spec": (
        lambda org, agent: {
            "type": "version_published",
            "org_id": org,
            "agent_id": agent,
            "version": 1,
            "spec": OTHER_SPEC,
        },
        "immutable",
    ),
}


@pytest.mark.parametrize("kind", list(MALFORMED))
def test_a_malformed_message_goes_to_the_dlq_once_with_its_reason(api, events, kind):
    agent_id = api.ok("POST", "/api/v1/agents", json={"name": "a", "spec": SPEC})["agent_id"]
    api.ok("POST", f"/api/v1/agents/{agent_id}/versions")  # version 1 is SPEC
    make, reason_says = MALFORMED[kind]
    key = events.trust(api)
    body = make(api.org_id, agent_id)
    if kind == "forged":
        body = {**sign_event(body, key + "x")}
    sent = events.send(body, sign=kind not in ("unsigned", "forged"))

    dead = events.dead(api.org_id, timeout_s=RETRY_AFTER_S - 5, linger_s=0.6)
    assert len(dead) == 1, f"{kind}: {len(dead)} copies in the DLQ"
    message = dead[0]
    # Straight there: sooner than the visibility timeout after which a retry could have sent it.
    assert message["seconds"] < RETRY_AFTER_S
    assert message["Body"] == sent
    reason = message["MessageAttributes"]["reason"]["StringValue"]
    assert reason_says in reason, reason
    # Received once and acknowledged: nothing waits or hides in the main queue for a retry, and
    # no second copy followed.
    wait_for(lambda: events.queue_counts() == (0, 0), what="the main queue empty")
    assert events.dead(api.org_id, timeout_s=0.3) == [], f"{kind}: a second copy in the DLQ"
    # ...and nothing was published.
    assert [
        v["version"] for v in api.ok("GET", f"/api/v1/agents/{agent_id}/versions")["versions"]
    ] == [1]
    assert api.ok("GET", f"/api/v1/agents/{agent_id}/versions/1")["spec"] == SPEC


def test_a_message_for_another_organization_s_agent_does_not_publish_it(new_api, events):
    owner, other = new_api(), new_api()
    agent_id = owner.ok("POST", "/api/v1/agents", json={"name": "a", "spec": SPEC})["agent_id"]
    events.trust(other)
    events.send(
        {
            "type": "version_published",
            "org_id": other.org_id,
            "agent_id": agent_id,
            "version": 1,
            "spec": OTHER_SPEC,
            "marker": uuid.uuid4().hex,
        }
    )
    events.send(
        {
            "type": "version_published",
            "org_id": other.org_id,
            "agent_id": agent_id,
            "version": 1,
            "spec": OTHER_SPEC,
        }
    )
    dead = events.dead(other.org_id, timeout_s=RETRY_AFTER_S - 5, linger_s=0.6, count=2)
    assert len(dead) == 2
    wait_for(lambda: events.queue_counts() == (0, 0), what="the main queue empty")
    assert events.dead(other.org_id, timeout_s=0.3) == [], "a third copy in the DLQ"
    assert (
        "marker"
        in dead[0]["MessageAttributes"]["reason"]["StringValue"]
        + dead[1]["MessageAttributes"]["reason"]["StringValue"]
    )
    assert owner.ok("GET", f"/api/v1/agents/{agent_id}/versions")["versions"] == []


def test_a_message_signed_with_another_organization_s_key_publishes_nothing(new_api, events):
    owner, stranger = new_api(), new_api()
    agent_id = owner.ok("POST", "/api/v1/agents", json={"name": "a", "spec": SPEC})["agent_id"]
    events.trust(owner)
    stranger_key = events.trust(stranger)
    forged = sign_event(
        {
            "type": "version_published",
            "org_id": owner.org_id,
            "agent_id": agent_id,
            "version": 1,
            "spec": OTHER_SPEC,
        },
        stranger_key,
    )
    events.send(forged, sign=False)
    [dead] = events.dead(owner.org_id, timeout_s=RETRY_AFTER_S - 5, linger_s=0.6)
    assert "does not verify" in dead["MessageAttributes"]["reason"]["StringValue"]
    assert owner.ok("GET", f"/api/v1/agents/{agent_id}/versions")["versions"] == []
