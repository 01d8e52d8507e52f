"""One botocore data loader for every session of the embedded stack's process.

Each botocore session reads and parses botocore's data files - the endpoints, the partitions, each
service's model and endpoint rules - on its own: ~40 ms for a session's first client, more under
load. The stack's process makes several sessions as it starts (bootstrap's, the pollers', the
container's, PynamoDB's), each parsing the same files. `share()` makes every session made after
it use one loader per data path, so each file is parsed once per process; `warm()` has it parse
what the stack's clients need while the process would otherwise wait (moto's process starting).

The data is read-only: a session's clients already share their session's loader, across threads.
"""

from __future__ import annotations

import threading
from typing import Any

_lock = threading.Lock()
_loaders: dict[Any, Any] = {}
_shared: list[bool] = []

STACK_SERVICES = ("dynamodb", "sqs", "s3", "ses")
"""The services the embedded stack's process makes clients of as it starts."""


def share() -> None:
    """Make every botocore session created from now on in this process share one data loader per
    data path (`AWS_DATA_PATH`); idempotent."""
    import botocore.session

    with _lock:
        if _shared:
            return
        _shared.append(True)
        create = botocore.session.create_loader

        def shared_loader(search_path_string: str | None = None) -> Any:
            with _lock:
                loader = _loaders.get(search_path_string)
                if loader is None:
                    loader = _loaders[search_path_string] = create(search_path_string)
                return loader

        botocore.session.create_loader = shared_loader


def warm(endpoint_url: str, region: str, services: tuple[str, ...] = STACK_SERVICES) -> None:
    """Make one client of each of `services` (no request is sent), so the shared loader holds what
    their clients need; `share()` first."""
    import boto3

    share()
    session = boto3.session.Session()
    for service in services:
        session.client(
            service,
            endpoint_url=endpoint_url,
            region_name=region,
            aws_access_key_id="warm",
            aws_secret_access_key="warm",
        )
