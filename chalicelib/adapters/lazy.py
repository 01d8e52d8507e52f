"""A boto3 client built on first use: a Lambda cold start pays for no client it does not use."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class LazyClient:
    """Holds a client factory and builds the client the first time `client` is read."""

    def __init__(self, client_factory: Callable[[], Any]) -> None:
        self._client_factory = client_factory
        self._client: Any = None

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = self._client_factory()
        return self._client
