"""moto's server in a child process as the embedded stack starts it (`spawn_moto_process`): its
address known before it serves, its warm-up requests left out of the counts, a port in use
refused before any child starts, and a child stopped while it starts leaving its port free.
"""

from __future__ import annotations

import socket

import boto3
import pytest

from assay_local.motoserver import PortTakenError, spawn_moto_process


def test_a_spawned_moto_is_at_its_address_once_ready_and_its_warm_up_is_not_counted() -> None:
    handle = spawn_moto_process()
    try:
        assert not handle.ready
        port = int(handle.url.rsplit(":", 1)[1])
        assert handle.url == f"http://127.0.0.1:{port}" and port > 0

        assert handle.wait_ready() is handle and handle.ready
        assert handle.url == f"http://127.0.0.1:{port}"
        assert handle.requests() == {}  # its own first request of each service left out
        sqs = boto3.session.Session().client(
            "sqs",
            endpoint_url=handle.url,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        assert "QueueUrls" not in sqs.list_queues()
        assert handle.requests() == {"sqs.ListQueues": 1}
    finally:
        handle.stop()


def test_a_port_in_use_is_refused_before_a_child_starts() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(PortTakenError) as refused:
            spawn_moto_process(port=port)
    assert refused.value.port == port
    assert str(refused.value).startswith(f"port {port} on 127.0.0.1 is in use")


def test_a_moto_stopped_while_it_starts_ends_and_frees_its_port() -> None:
    handle = spawn_moto_process()
    port = int(handle.url.rsplit(":", 1)[1])
    handle.stop()

    assert handle._process.poll() is not None  # noqa: SLF001 - the child itself
    handle.stop()  # idempotent
    with socket.socket() as again:
        again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        again.bind(("127.0.0.1", port))
