"""One attempt's kept answer, whole (issue 11, scope 7; docs/concepts/verdicts.md,
docs/reference/data-protection.md).

A run's reads show an answer kept in the results bucket as its first 1,000 characters; this read
gives the whole kept answer: inline when the attempt holds it, else a short-lived presigned URL
of the bucket's copy (an answer may be larger than an API response can carry). It reads a run as
every other read does: another organization's run is a 404.
"""

from __future__ import annotations

from dataclasses import dataclass

from chalicelib.bootstrap import Container
from chalicelib.domain.identity import Identity
from chalicelib.domain.records import Attempt, Run
from chalicelib.domain.text import utf8_length
from chalicelib.errors import InvalidInputError, NotFoundError
from chalicelib.services import access as access_service


@dataclass(frozen=True)
class AnswerRead:
    """A kept answer: the text itself (`answer`), or where to fetch it (`url`, valid
    `expires_in_seconds`) when it is kept in the bucket; exactly one of the two is set, or
    neither for an attempt without an answer."""

    run_id: str
    attempt: Attempt
    answer: str | None
    answer_bytes: int | None
    """The whole answer's UTF-8 length in bytes (the kept one is shorter when truncated)."""
    url: str | None = None
    expires_in_seconds: int | None = None


def split_key(attempt_key: str) -> tuple[str, str, int]:
    """`(arm_id, case_id, attempt)` of an attempt key `arm#case#attempt` (a case id may hold `#`).

    Raises InvalidInputError (field `attempt_key`) for anything else.
    """
    arm_id, _, rest = attempt_key.partition("#")
    case_id, _, number = rest.rpartition("#")
    if not arm_id or not case_id or not number.isdigit() or len(number) > 3:
        raise InvalidInputError(
            "attempt_key must be <arm_id>#<case_id>#<attempt>, as the run's attempts give it",
            field="attempt_key",
        )
    return arm_id, case_id, int(number)


def _find(c: Container, run: Run, attempt_key: str) -> Attempt | None:
    """The attempt of that key, also when it is a first answer a baseline arm borrowed from an
    earlier run of the same organization."""
    found = c.runs.get_attempt(run.org_id, run.run_id, attempt_key)
    if found is not None:
        return found
    arm_id, case_id, number = split_key(attempt_key)
    arm = next((a for a in run.arms if a.arm_id == arm_id), None)
    if arm is None or arm.answers or not arm.source_run_id or number != 1:
        return None
    return c.runs.get_attempt(run.org_id, arm.source_run_id, f"{arm.source_arm_id}#{case_id}#001")


def read_answer(c: Container, who: Identity, run_id: str, attempt_key: str) -> AnswerRead:
    """The whole kept answer of one attempt of an organization's run.

    Args:
        attempt_key: `<arm_id>#<case_id>#<attempt, 3 digits>`, as the run's attempts give it.
    Returns:
        The answer inline, or a presigned URL of the bucket's copy valid
        `ASSAY_ANSWER_URL_SECONDS` (300 s by default).
    Raises:
        NotFoundError: no such run in the organization (another organization's too), or no such
            attempt in the run. InvalidInputError: a malformed `attempt_key`.
    """
    run = access_service.readable_run(c, who, run_id)  # before the key: a 404 tells nothing
    split_key(attempt_key)
    attempt = _find(c, run, attempt_key)
    if attempt is None:
        raise NotFoundError(
            f"attempt {attempt_key} not found in eval run {run_id}", field="attempt_key"
        )
    size = attempt.answer_bytes
    if size is None and attempt.answer is not None and not attempt.answer_ref:
        size = utf8_length(attempt.answer)  # recorded before the size was kept: it is all here
    if attempt.answer_ref:
        expires = c.settings.assay_answer_url_seconds
        return AnswerRead(
            run_id, attempt, None, size, c.bucket.url(attempt.answer_ref, expires), expires
        )
    return AnswerRead(run_id, attempt, attempt.answer, size)
