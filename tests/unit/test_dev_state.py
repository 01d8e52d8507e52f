"""What `assay dev` checks and keeps around the stack (assay_local.devstate, assay_local.motostate):
the gate that makes a snapshot one instant, atomic snapshot writes, the data folder (its lock, its
signing secret, `--fresh`), and the one-line refusals of a port in use and an endpoint that does
not answer (assay_local.probes). No AWS here; the moto process is tested in
tests/integration/test_moto_state.py."""

from __future__ import annotations

import os
import socket
import stat
import threading
from pathlib import Path

import pytest

from assay_local import motostate
from assay_local.devstate import DataFolder, DevError
from assay_local.motostate import GateClosedError, StateGate
from assay_local.probes import ProbeError, check_endpoint, check_port_free, endpoint_hint
from tests.support.e2e import wait_for

# --- the gate ----------------------------------------------------------------------------------


def test_a_snapshot_waits_for_the_requests_being_handled_and_holds_new_ones() -> None:
    gate = StateGate()
    inside, release = threading.Event(), threading.Event()
    order: list[str] = []

    def request(name: str) -> None:
        with gate.shared():
            order.append(f"{name} in")
            inside.set()
            release.wait(30)
            order.append(f"{name} out")

    first = threading.Thread(target=request, args=("first",))
    first.start()
    inside.wait(30)

    def snapshot() -> None:
        with gate.exclusive():
            order.append("snapshot")

    taker = threading.Thread(target=snapshot)
    taker.start()
    wait_for(lambda: gate._writers_waiting == 1, what="the snapshot to wait")  # noqa: SLF001
    inside.clear()
    second = threading.Thread(target=request, args=("second",))
    second.start()
    release.set()
    for thread in (first, taker, second):
        thread.join(30)
    assert order == ["first in", "first out", "snapshot", "second in", "second out"]


def test_a_request_waiting_for_messages_lets_a_snapshot_pass() -> None:
    gate = StateGate()
    waiting, done_waiting = threading.Event(), threading.Event()

    def long_poll() -> None:
        with gate.shared():
            with gate.stepped_out():
                waiting.set()
                done_waiting.wait(30)

    poll = threading.Thread(target=long_poll)
    poll.start()
    waiting.wait(30)
    with gate.exclusive():  # would wait for ever if the poll still held the gate
        pass
    done_waiting.set()
    poll.join(30)
    assert not poll.is_alive()


def test_a_closed_gate_refuses_requests() -> None:
    gate = StateGate()
    with gate.exclusive():
        gate.close()
    with pytest.raises(GateClosedError), gate.shared():
        pass


# --- snapshot files ----------------------------------------------------------------------------


def test_a_save_that_fails_midway_leaves_the_previous_snapshot_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "moto-state"
    motostate.write_snapshot(path, b"first state")
    before = path.read_bytes()

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(motostate.os, "fsync", disk_full)
    with pytest.raises(OSError):
        motostate.write_snapshot(path, b"second state")
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["moto-state"]
    assert read_payload(path) == b"first state"


def read_payload(path: Path) -> bytes:
    with open(path, "rb") as f:
        f.readline()
        f.readline()
        return f.read()


def test_a_snapshot_header_names_versions_size_and_checksum(tmp_path: Path) -> None:
    path = tmp_path / "moto-state"
    motostate.write_snapshot(path, b"payload")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # every organization's data and secrets
    header = motostate.read_header(path)
    assert header["bytes"] == 7
    assert header["python"] == "3.12"
    assert len(header["sha256"]) == 64
    assert header["saved_at"].endswith("Z")


# --- the data folder ---------------------------------------------------------------------------


def test_a_data_folder_is_locked_while_an_assay_dev_uses_it(tmp_path: Path) -> None:
    first = DataFolder(tmp_path / "dev")
    first.lock()
    assert stat.S_IMODE((tmp_path / "dev").stat().st_mode) == 0o700
    with pytest.raises(DevError) as refused:
        DataFolder(tmp_path / "dev").lock(wait_s=0)
    assert f"in use by another assay dev (pid {os.getpid()})" in str(refused.value)
    assert "--data" in str(refused.value)
    os.close(first.lock_fd)
    again = DataFolder(tmp_path / "dev")
    again.lock(wait_s=0)  # free again once its holder is gone
    os.close(again.lock_fd)


def test_the_signing_secret_is_made_once_and_kept_private(tmp_path: Path) -> None:
    folder = DataFolder(tmp_path / "dev")
    folder.lock()
    secret = folder.signing_secret()
    assert len(secret) >= 32
    assert folder.signing_secret() == secret
    assert stat.S_IMODE((tmp_path / "dev" / "signing-secret").stat().st_mode) == 0o600


def test_fresh_keeps_the_previous_state_beside_it(tmp_path: Path) -> None:
    folder = DataFolder(tmp_path / "dev")
    folder.lock()
    assert folder.discard_state() is None
    folder.state_file.write_bytes(b"old state")
    kept = folder.discard_state()
    assert kept == tmp_path / "dev" / "moto-state.old"
    assert kept.read_bytes() == b"old state"
    assert not folder.state_file.exists()


# --- one-line refusals -------------------------------------------------------------------------


def test_a_port_in_use_is_refused_naming_the_option() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ProbeError) as refused:
            check_port_free(port, "--aws-port")
    assert str(refused.value) == (
        f"port {port} on 127.0.0.1 is in use (another assay dev?): stop what holds it, or "
        "choose another with --aws-port"
    )
    check_port_free(port, "--port")  # closed now: free
    check_port_free(0, "--port")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_endpoint_nothing_answers_at_is_refused_saying_how_to_fix_it() -> None:
    port = closed_port()
    url = f"http://127.0.0.1:{port}"
    with pytest.raises(ProbeError) as refused:
        check_endpoint(url, named=f"AWS_ENDPOINT_URL={url}", hint=endpoint_hint(from_env=True))
    message = str(refused.value)
    assert message.startswith(f"AWS_ENDPOINT_URL={url} does not answer (connection refused); ")
    assert "unset AWS_ENDPOINT_URL" in message and "localstack-compose.yml up -d" in message
    assert "\n" not in message


@pytest.mark.parametrize("url", ["localhost:4566", "ftp://127.0.0.1:21", "http://", "http://h:x"])
def test_an_endpoint_that_is_not_a_url_is_refused(url: str) -> None:
    with pytest.raises(ProbeError) as refused:
        check_endpoint(url, named="--endpoint", hint="fix it")
    assert "is not an http(s) URL with a host" in str(refused.value)


def test_an_endpoint_that_answers_passes() -> None:
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        check_endpoint(
            f"http://127.0.0.1:{listening.getsockname()[1]}", named="--endpoint", hint="-"
        )
