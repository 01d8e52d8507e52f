"""Email through SES: the owner notices of suites (docs/guides/suites.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chalicelib.adapters.lazy import LazyClient


class SesMailer(LazyClient):
    """Sends plain-text mail from one verified sender."""

    def __init__(self, client_factory: Callable[[], Any], sender: str) -> None:
        super().__init__(client_factory)
        self.sender = sender

    def send(self, to: str, subject: str, body: str) -> str:
        """Send one message; returns SES's message id. Raises botocore's errors (the caller
        decides)."""
        reply = self.client.send_email(
            Source=self.sender,
            Destination={"ToAddresses": [to]},
            Message={
                "Subject": {"Data": subject[:200], "Charset": "UTF-8"},
                "Body": {"Text": {"Data": body, "Charset": "UTF-8"}},
            },
        )
        return str(reply.get("MessageId", ""))

    def verify_sender(self) -> None:
        """Ask SES to verify the sender (on a local stack moto verifies it at once)."""
        self.client.verify_email_identity(EmailAddress=self.sender)
