"""Names of the queues and the bucket (Chalice needs queue names when `app.py` is imported).

Table names come from `adapters.tables.configure` (prefix + base name).
"""

CASE_TASKS_QUEUE = "assay-case-tasks"
"""One message per case attempt: `{org_id, run_id, arm_id, case_id, attempt}` (DESIGN §5)."""
CASE_TASKS_DLQ = "assay-case-tasks-dlq"
AGENT_EVENTS_QUEUE = "assay-agent-events"
"""Messages from publish pipelines: `version_published`, `dependency_changed`."""
AGENT_EVENTS_DLQ = "assay-agent-events-dlq"
RESULTS_BUCKET = "assay-results"
"""Answers over `assay_answer_inline_bytes` (DynamoDB items stop at 400 KB)."""
MAX_RECEIVE_COUNT = 5
"""Deliveries of a message before SQS moves it to its DLQ (DESIGN §11: at least 5)."""


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
