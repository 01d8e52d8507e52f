"""botocore's parsed data shared by every session of the embedded stack's process.

Each botocore session reads and parses botocore's data files - the endpoints, the partitions, each
service's model and endpoint rules - on its own: ~40 ms for a session's first client, more under
load. The stack's process makes several sessions as it starts (bootstrap's, the pollers', the
container's, PynamoDB's), each parsing the same files. `share()` makes every session made after
it keep what its data loader parsed in one cache per data path, so each file is parsed once per
process; `warm()` has it parse what the stack's clients need while the process would otherwise
wait (moto's process starting).

Each session keeps a loader of its own (boto3 adds its data folder to its session's loader's
search path, once per session): only the parsed data is shared. It is read-only: a session's
clients already share their session's loader, across threads.
"""

from __future__ import annotations

import threading
from typing import Any

_lock = threading.Lock()
_caches: dict[str | None, dict[Any, Any]] = {}
_shared: list[bool] = []

STACK_SERVICES = ("dynamodb", "sqs", "s3", "ses")
"""The services the embedded stack's process makes clients of as it starts."""


def share() -> None:
    """Make every botocore session created from now on in this process share what its data
    loader parses with the others of the same data path (`AWS_DATA_PATH`); idempotent."""
    import botocore.session

    with _lock:
        if _shared:
            return
        _shared.append(True)
        create = botocore.session.create_loader

        def sharing_loader(search_path_string: str | None = None) -> Any:
            loader = create(search_path_string)
            with _lock:
                # botocore's `instance_cache` keeps what `load_service_model`,
                # `load_data_with_path`... returned here, by method and arguments.
                cache = _caches.setdefault(search_path_string, loader._cache)  # noqa: SLF001
                loader._cache = cache  # noqa: SLF001
            return loader

        botocore.session.create_loader = sharing_loader


def warm(endpoint_url: str, region: str, services: tuple[str, ...] = STACK_SERVICES) -> None:
    """Make one client of each of `services` (no request is sent), so the shared data holds what
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
