"""Names of the stack's queues and bucket, all built from one prefix (`ASSAY_RESOURCE_PREFIX`).

One prefix names every table (`adapters.tables.configure`), queue and bucket of a stack, so two
stacks (`assay-`, `staging-`) never share one (issue 13). Chalice needs the queue names when a
worker module is imported: the workers build them from the settings as they start.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_PREFIX = "assay-"
"""`ASSAY_RESOURCE_PREFIX`'s default: the embedded stack's and the tests'."""

MAX_RECEIVE_COUNT = 5
"""Deliveries of a message before SQS moves it to its DLQ (at least 5; docs/guides/deploy.md)."""


@dataclass(frozen=True)
class StackNames:
    """The queue and bucket names of the stack with resource prefix `prefix`.

    `StackNames("staging-").case_tasks_queue == "staging-case-tasks"`; the results bucket is
    `<prefix>results` unless the operator names another (`ASSAY_RESULTS_BUCKET`: S3 names are
    global, so a deployment names it after its account, `infra.package`).
    """

    prefix: str = DEFAULT_PREFIX
    bucket: str = ""
    """The results bucket's name; empty: `<prefix>results`."""

    @property
    def case_tasks_queue(self) -> str:
        """One message per case attempt: `{org_id, run_id, arm_id, case_id, attempt}`
        (docs/architecture/exactly-once.md)."""
        return f"{self.prefix}case-tasks"

    @property
    def case_tasks_dlq(self) -> str:
        return f"{self.prefix}case-tasks-dlq"

    @property
    def agent_events_queue(self) -> str:
        """Messages from publish pipelines: `version_published`, `dependency_changed`."""
        return f"{self.prefix}agent-events"

    @property
    def agent_events_dlq(self) -> str:
        return f"{self.prefix}agent-events-dlq"

    @property
    def queues(self) -> tuple[str, str, str, str]:
        """Every queue of the stack: case tasks, its DLQ, agent events, its DLQ."""
        return (
            self.case_tasks_queue,
            self.case_tasks_dlq,
            self.agent_events_queue,
            self.agent_events_dlq,
        )

    @property
    def results_bucket(self) -> str:
        """Answers over `assay_answer_inline_bytes` (DynamoDB items stop at 400 KB) and the
        organizations' recordings."""
        return self.bucket or f"{self.prefix}results"


DEFAULT = StackNames()
CASE_TASKS_QUEUE = DEFAULT.case_tasks_queue
"""The default stack's names (`assay-`), for local tools and tests; the service itself always
builds them from its settings (`Settings.names`)."""
CASE_TASKS_DLQ = DEFAULT.case_tasks_dlq
AGENT_EVENTS_QUEUE = DEFAULT.agent_events_queue
AGENT_EVENTS_DLQ = DEFAULT.agent_events_dlq
RESULTS_BUCKET = DEFAULT.results_bucket


# --- the organization's secrets and recordings (issue 9) -------------------------------------
# Defined here, not in `infra/`, because the Lambda bundle (chalicelib/) builds these names at run
# time; `infra.resources` re-exports them for the IAM policy and the local stack.

SECRET_ORG_TAG = "assay:org"
"""Tag every organization secret carries in Secrets Manager; its value is the organization id."""


def secret_name_prefix(resource_prefix: str) -> str:
    """The root of every secret's name: the resource prefix without its trailing '-'.

    `"assay-"` -> `"assay"`; an empty prefix gives `"assay"` (a secret name never starts with '/').
    """
    return resource_prefix.rstrip("-") or "assay"


def org_secret_prefix(resource_prefix: str, org_id: str) -> str:
    """`<root>/<org>/`: the Secrets Manager name prefix of one organization's secrets."""
    return f"{secret_name_prefix(resource_prefix)}/{org_id}/"


def secret_name(resource_prefix: str, org_id: str, name: str) -> str:
    """`<root>/<org>/<name>` (default `assay/<org>/<name>`): an organization secret in Secrets
    Manager."""
    return org_secret_prefix(resource_prefix, org_id) + name


def org_recordings_prefix(org_id: str) -> str:
    """`<org>/recordings/`: where an organization's recordings live in the results bucket."""
    return f"{org_id}/recordings/"


def recording_key(org_id: str, recording_id: str) -> str:
    """`<org>/recordings/<id>.jsonl`: the results-bucket key of one recording."""
    return f"{org_recordings_prefix(org_id)}{recording_id}.jsonl"


def run_answers_prefix(org_id: str, run_id: str) -> str:
    """`<org>/answers/<run_id>/`: where a run's long answers live in the results bucket (deleted
    with the run)."""
    return f"{org_id}/answers/{run_id}/"


def answer_key(org_id: str, run_id: str, attempt_key: str) -> str:
    """`<org>/answers/<run_id>/<attempt_key>.txt`: the results-bucket key of one long answer."""
    return f"{run_answers_prefix(org_id, run_id)}{attempt_key}.txt"
