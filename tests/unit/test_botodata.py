"""botocore's parsed data shared between sessions (`assay_local.botodata`): a service's model is
parsed once for every session made after `share()`, and each session's search path stays its own
(boto3 adds its data folder to it once per session).
"""

from __future__ import annotations

from typing import Any

import boto3

from assay_local import botodata


def _loader(session: Any) -> Any:
    return session._session.get_component("data_loader")  # noqa: SLF001 - botocore's own


def test_sessions_made_after_share_parse_a_model_once_and_keep_their_own_search_path() -> None:
    botodata.share()
    botodata.share()  # idempotent
    first, second = boto3.session.Session(), boto3.session.Session()
    a, b = _loader(first), _loader(second)

    assert a is not b
    assert a.load_service_model("sqs", "service-2") is b.load_service_model("sqs", "service-2")
    assert a.search_paths == b.search_paths
    assert len(a.search_paths) == len(set(a.search_paths))  # boto3's folder added once


def test_warm_makes_the_stack_s_clients_without_a_request() -> None:
    botodata.warm("http://127.0.0.1:9", "us-east-1")  # nothing listens on port 9 (discard)

    later = _loader(boto3.session.Session())
    for service in botodata.STACK_SERVICES:
        model = later.load_service_model(service, "service-2")
        assert model["metadata"]["endpointPrefix"] in (service, "email")  # SES's is "email"
