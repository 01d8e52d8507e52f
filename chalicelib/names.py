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
