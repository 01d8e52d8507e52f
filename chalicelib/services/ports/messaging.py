"""Ports of the messages the service sends: case tasks on their queue, notices by email."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol


class QueueSendError(Exception):
    """Some messages could not be sent; `failed` lists their bodies."""

    def __init__(self, failed: list[dict[str, Any]]) -> None:
        super().__init__(f"{len(failed)} message(s) not sent")
        self.failed = failed


class CaseQueue(Protocol):
    """The case-task queue (SQS): one message per case attempt to run
    (docs/architecture/exactly-once.md)."""

    def send(self, bodies: Sequence[dict[str, Any]]) -> None:
        """Send JSON bodies (in batches).

        Raises:
            QueueSendError: some bodies were not queued (`failed` lists them); the rest were.
        """

    def send_one(self, body: dict[str, Any]) -> None:
        """Send one JSON body."""

    def extend_visibility(self, receipt_handle: str, seconds: int) -> None:
        """Keep a message being worked on hidden for `seconds` more."""

    def waiting(self) -> int:
        """About how many messages wait for a worker (visible, not being handled)."""


class DeadLetterQueue(Protocol):
    """Where a message that can never be handled goes, as it came, with the reason."""

    def send_text(self, body: str, attributes: dict[str, str]) -> None:
        """Send one message's text untouched, with string attributes (`reason`)."""


class Mailer(Protocol):
    """Sends the owners' notices by email (SES)."""

    def send(self, to: str, subject: str, body: str) -> str:
        """Send one plain-text mail; returns the provider's message id."""
