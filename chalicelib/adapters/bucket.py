"""S3 adapter: answers too large for a DynamoDB item (DESIGN §4)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class ResultsBucket:
    """The results bucket; the client is built lazily."""

    def __init__(self, client_factory: Callable[[], Any], bucket: str) -> None:
        self._client_factory = client_factory
        self._client: Any = None
        self.bucket = bucket

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = self._client_factory()
        return self._client

    def put_text(self, key: str, text: str) -> str:
        """Store `text` under `key`; returns the `s3://bucket/key` pointer kept on the attempt."""
        self.client.put_object(Bucket=self.bucket, Key=key, Body=text.encode("utf-8"),
                               ContentType="text/plain; charset=utf-8")
        return f"s3://{self.bucket}/{key}"

    def get_text(self, pointer: str) -> str:
        """Read back a text stored by `put_text`."""
        key = pointer.split("/", 3)[3]
        return self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read().decode("utf-8")
