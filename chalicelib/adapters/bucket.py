"""S3 adapter: answers too large for a DynamoDB item (docs/architecture/tables.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chalicelib.adapters.lazy import LazyClient


class ResultsBucket(LazyClient):
    """The results bucket; the client is built lazily."""

    def __init__(self, client_factory: Callable[[], Any], bucket: str) -> None:
        super().__init__(client_factory)
        self.bucket = bucket

    def put_text(self, key: str, text: str) -> str:
        """Store `text` under `key`; returns the `s3://bucket/key` pointer kept on the attempt."""
        self.client.put_object(
            Bucket=self.bucket,
            Key=key,
            Body=text.encode("utf-8"),
            ContentType="text/plain; charset=utf-8",
        )
        return f"s3://{self.bucket}/{key}"

    def get_text(self, pointer: str) -> str:
        """Read back a text stored by `put_text`."""
        key = pointer.split("/", 3)[3]
        return self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read().decode("utf-8")

    def url(self, pointer: str, expires_s: int) -> str:
        """A presigned GET URL of a text stored by `put_text`, valid `expires_s` seconds (signed
        locally with the client's credentials: no request is made)."""
        return str(
            self.client.generate_presigned_url(
                "get_object",
                Params={
                    "Bucket": self.bucket,
                    "Key": pointer.split("/", 3)[3],
                    "ResponseContentType": "text/plain; charset=utf-8",
                },
                ExpiresIn=expires_s,
            )
        )

    def delete_prefix(self, prefix: str) -> int:
        """Delete every object whose key starts with `prefix`, 1,000 per request (S3's limit for
        one `DeleteObjects`); returns how many were listed. A key that could not be deleted
        raises, so the caller's delete stops before the records that point at it."""
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=prefix
        )
        count = 0
        for page in pages:
            keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
            if not keys:
                continue
            answer = self.client.delete_objects(
                Bucket=self.bucket, Delete={"Objects": keys, "Quiet": True}
            )
            if answer.get("Errors"):
                first = answer["Errors"][0]
                raise RuntimeError(
                    f"results bucket: could not delete {first.get('Key')}: {first.get('Code')}"
                )
            count += len(keys)
        return count
