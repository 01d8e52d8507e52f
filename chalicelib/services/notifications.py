"""Owner notices: the notification center and email through SES (docs/guides/suites.md)."""

from __future__ import annotations

import logging
import re
import uuid
from dataclasses import dataclass, replace
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.clock import epoch_ms, iso
from chalicelib.domain.events import SuiteJudgeRepublished, SuiteResultChanged
from chalicelib.domain.identity import Identity
from chalicelib.domain.records import Notification, Suite, SuiteResultEntry
from chalicelib.errors import NotFoundError
from chalicelib.services import redacting

log = logging.getLogger(__name__)

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def email_on(c: Container, org_id: str, user_id: str) -> bool:
    """Whether a person gets notices by email: on by default when their user id is an address."""
    chosen = c.notifications.email_preference(org_id, user_id)
    return bool(_EMAIL.match(user_id)) and (chosen if chosen is not None else True)


@dataclass(frozen=True)
class EmailSetting:
    """Whether a person's notices are emailed, and to which address (None: a user id that is not
    an address, which is never emailed)."""

    email: bool
    address: str | None


def set_email(c: Container, who: Identity, on: bool) -> EmailSetting:
    """Turn email of notices on or off for the caller. Returns the choice as it works: `email` on
    only for a user id that is an address. Raises ForbiddenError (403, `person`) for an API key:
    a person's settings are theirs."""
    who.require_no_key("turning email of notices on or off")
    c.notifications.set_email_preference(who.org_id, who.user_id, on, at=iso(c.clock.now()))
    address = who.user_id if _EMAIL.match(who.user_id) else None
    return EmailSetting(email=on and address is not None, address=address)


def notify(
    c: Container,
    org_id: str,
    user_id: str,
    *,
    kind: str,
    title: str,
    body: str,
    links: dict[str, Any],
) -> Notification:
    """Put a notice in a person's center and, where they have it on, email it. A mail that cannot be
    sent is logged: the notice stays in the center either way. Returns the notice as kept."""
    now = iso(c.clock.now())
    notice_id = (
        f"n{epoch_ms(c.clock.now()):013d}{uuid.uuid4().hex[:8]}"  # sorts by time, safe in a URL
    )
    r = redacting.for_org(c, org_id)  # the center and the mail show no secret
    title, body, links = r.text(title), r.text(body), r.value(links)
    notice = Notification(
        notification_id=notice_id,
        org_id=org_id,
        kind=kind,
        title=title,
        body=body,
        links=links,
        read=False,
        emailed=False,
        created_at=now,
    )
    c.notifications.add(user_id, notice)
    if email_on(c, org_id, user_id):
        try:
            c.mailer.send(user_id, title, body)
            c.notifications.mark_emailed(org_id, user_id, notice_id)
            notice = replace(notice, emailed=True)
        except Exception:  # noqa: BLE001 - the center has it; mail is best effort
            log.exception("could not email %s", user_id)
    return notice


def _result_lines(suite: Suite, result: SuiteResultEntry) -> list[str]:
    """A bad result's notice body: its word, every reason, the cases behind it, its run."""
    name = suite.name or suite.suite_id
    lines = [
        f"Suite {name} of agent {suite.agent_id} came out {result.result} on version "
        f"{result.version}."
    ]
    lines += [f"- {r}" for r in result.reasons]
    if result.cases_broken:
        lines.append("Cases that broke: " + ", ".join(result.cases_broken[:50]))
    if result.cases_undecided:
        lines.append(
            "Cases left undecided (incomplete or ungraded): "
            + ", ".join(result.cases_undecided[:50])
        )
    if result.run_id:
        lines.append(f"Eval run: {result.run_id}")
    return lines


def _links(suite: Suite, result: SuiteResultEntry) -> dict[str, Any]:
    return {
        "suite_id": suite.suite_id,
        "agent_id": suite.agent_id,
        "run_id": result.run_id,
        "result_id": result.result_id,
    }


def suite_result(c: Container, suite: Suite, result: SuiteResultEntry) -> Notification:
    """Tell a suite's owner of a bad result, naming the cases that broke or went undecided."""
    name = suite.name or suite.suite_id
    return notify(
        c,
        suite.org_id,
        suite.owner,
        kind="suite_result",
        title=f"Suite {name}: {result.result.replace('_', ' ')} on version {result.version}",
        body="\n".join(_result_lines(suite, result)),
        links=_links(suite, result),
    )


def suite_judge_republished(c: Container, event: SuiteJudgeRepublished) -> Notification | None:
    """Tell a suite's owner that its result `event.run_id` could not be compared because the judge
    grading its dataset was published again since the run it was compared with, and what the next
    run does (`SuiteJudgeRepublished`); nothing when the suite or the result is gone.

    The notice (kind `suite_judge_republished`) names the judge and both versions above the
    result's own lines (`suite_result`'s)."""
    suite = c.suites.get(event.org_id, event.agent_id, event.suite_id)
    result = (
        c.suites.result_of_run(event.org_id, event.agent_id, event.suite_id, event.run_id)
        if suite is not None
        else None
    )
    if suite is None or result is None:
        return None
    name = suite.name or suite.suite_id
    word = result.result.replace("_", " ")
    headline = (
        f"Judge {event.judge_id} was published again: version {event.before} graded the run this "
        f"result is compared with, version {event.after} grades now. Answers are graded "
        f"differently, so this result is not compared. The next run compares under version "
        f"{event.after} and can pass again."
    )
    return notify(
        c,
        suite.org_id,
        suite.owner,
        kind="suite_judge_republished",
        title=(
            f"Suite {name}: {word} on version {result.version} - judge {event.judge_id} was "
            "published again"
        ),
        body="\n".join([headline, *_result_lines(suite, result)]),
        links=_links(suite, result),
    )


def suite_result_changed(c: Container, event: SuiteResultChanged) -> Notification | None:
    """Tell a suite's owner that a person's decision in the review queue changed one of its
    results (`SuiteResultChanged`); nothing when the suite is gone."""
    suite = c.suites.get(event.org_id, event.agent_id, event.suite_id)
    if suite is None:
        return None
    name = suite.name or suite.suite_id
    before, after = event.before.replace("_", " "), event.after.replace("_", " ")
    return notify(
        c,
        suite.org_id,
        suite.owner,
        kind="suite_result_changed",
        title=f"Suite {name}: now {after} (was {before}) after review",
        body=(
            f"A decision in the review queue by {event.by} changed a result of suite {name} of "
            f"agent {suite.agent_id} from {before} to {after}."
            + (f"\nEval run: {event.run_id}" if event.run_id else "")
        ),
        links={
            "suite_id": suite.suite_id,
            "agent_id": suite.agent_id,
            "run_id": event.run_id,
            "result_id": event.result_id,
        },
    )


def list_for(c: Container, who: Identity, *, unread: bool = False) -> list[Notification]:
    """The caller's newest 100 notices (`unread`: only those not read yet), newest first.
    Raises ForbiddenError (403, `person`) for an API key: a person's notices are theirs."""
    who.require_no_key("reading notices")
    return [n for n in c.notifications.of(who.org_id, who.user_id) if not (unread and n.read)]


def mark_read(c: Container, who: Identity, notification_id: str) -> None:
    """Mark one of the caller's notices read. Raises ForbiddenError (403, `person`) for an API
    key, NotFoundError for a notice the caller does not have."""
    who.require_no_key("marking a notice read")
    if not c.notifications.mark_read(who.org_id, who.user_id, notification_id):
        raise NotFoundError(f"notification {notification_id} not found", field="notification_id")
