"""The embedded moto server's state on disk: `assay dev` keeps what a user made (issue 13, 4).

moto 5.2 keeps everything in process-global backends (one object per service, account and region)
and has no persistence of its own (getmoto/moto#1069: "pickle the backends"). The moto process
(`python -m assay_local.motoserver --state FILE`) pickles the backends of `PERSISTED_SERVICES` in
one snapshot and, at its next start, puts them back before it serves its first request. Nothing
is read through the AWS APIs (no table is scanned): the snapshot is moto's own objects.

- One instant: every AWS request passes `StateGate` shared and a snapshot takes it alone, so
  DynamoDB, SQS, S3 and Secrets Manager are saved as one state: a case task is queued in the
  snapshot exactly when the write that sent it is recorded there. A receive waiting for messages
  steps out of the gate while it waits (it holds nothing then), so a snapshot never waits for a
  long poll.
- When: `Saver` saves a changed state at most every `min_interval_s` seconds, never holding
  requests for more than `busy_share` of the time (a snapshot that took 0.3 s waits 3 s for the
  next), and once more on a clean stop (the parent closed our stdin, or SIGTERM), so a `kill -9`
  of the moto process loses at most the last seconds and a `kill -9` of `assay dev` nothing
  (its moto process sees stdin close and saves).
- Atomic: a snapshot is written to a temporary file beside the old one, flushed to disk and
  renamed over it, then the folder is synced: a crash mid-save leaves the previous snapshot.
- Checked: a header names the format, the moto and Python versions and the payload's sha256; a
  file another moto wrote, or a damaged one, is a `SnapshotError` (one line, naming `--fresh`)
  and is never overwritten, rather than half a stack restored.

SQS messages keep their receive counts and visibility (both moto's, in epoch milliseconds): a
message a worker held when the stack stopped comes back when its visibility lapses, as after a
Lambda that died.
"""

from __future__ import annotations

import copyreg
import hashlib
import io
import json
import os
import pickle
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

MAGIC = b"ASSAY-MOTO-STATE 1\n"
"""First line of a snapshot file: what it is and its format (a new format gets a new number)."""

PERSISTED_SERVICES = ("dynamodb", "sqs", "s3", "secretsmanager", "ses")
"""The moto backends a snapshot holds: every service the embedded stack's code calls that keeps
state (tables, queues and their messages, the results bucket with answers and recordings, the
organizations' secrets, the verified sender). `lambda` is only ever invoked, never created."""


_PARTS = {"accounts", "attributes"}
"""What a snapshot keeps of each service (`_backends`)."""


class SnapshotError(Exception):
    """A snapshot that cannot be restored (another moto or Python wrote it, or it is damaged);
    the message is one line for a person and names `--fresh`."""


class GateClosedError(Exception):
    """The gate was closed by the final snapshot: the server is stopping and takes no request."""


def _refuse(path: Path, why: str) -> SnapshotError:
    return SnapshotError(
        f"the saved state {path} {why}: start with --fresh to begin empty "
        f"(it keeps this file as {path.name}.old)"
    )


# --- the gate --------------------------------------------------------------------------------


class StateGate:
    """Requests pass together (`shared`), a snapshot alone (`exclusive`); writer-preferring, so a
    snapshot waits only for the requests already being handled.

    `changes` counts the requests that may have changed state (`touch`); a `Saver` compares it
    with the count it last saved. After `close()` (the final snapshot) `shared` raises
    `GateClosedError`.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._active = 0
        self._writer = False
        self._writers_waiting = 0
        self._closed = False
        self._local = threading.local()
        self.changes = 0

    def _enter(self, *, closing_ok: bool = False) -> None:
        with self._cond:
            while self._writer or self._writers_waiting:
                self._cond.wait()
            if self._closed and not closing_ok:
                raise GateClosedError
            self._active += 1

    def _leave(self) -> None:
        with self._cond:
            self._active -= 1
            if self._active == 0:
                self._cond.notify_all()

    @contextmanager
    def shared(self) -> Iterator[None]:
        """Hold the gate with other requests for the block. Raises `GateClosedError` once
        closed."""
        self._enter()
        self._local.depth = getattr(self._local, "depth", 0) + 1
        try:
            yield
        finally:
            self._local.depth -= 1
            self._leave()

    @contextmanager
    def stepped_out(self) -> Iterator[None]:
        """Let a snapshot pass while this thread waits on something that holds no state (a
        receive waiting for messages); re-enters after. A thread outside the gate just waits."""
        if getattr(self._local, "depth", 0) != 1:
            yield
            return
        self._leave()
        try:
            yield
        finally:
            # The request this wait belongs to finishes even once closed: its answer goes to a
            # server that is stopping.
            self._enter(closing_ok=True)

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the gate alone for the block: no request is being handled meanwhile."""
        with self._cond:
            self._writers_waiting += 1
            try:
                while self._writer or self._active:
                    self._cond.wait()
            finally:
                self._writers_waiting -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()

    def touch(self) -> None:
        """Count one request that may have changed state."""
        with self._cond:
            self.changes += 1

    def close(self) -> None:
        """Refuse every request from now on (call inside `exclusive`, after the final
        snapshot)."""
        with self._cond:
            self._closed = True


_original_wait_for_messages: Callable[..., None] | None = None


def release_gate_while_receives_wait(gate: StateGate) -> None:
    """Make moto's SQS long poll step out of `gate` while it waits (`Queue.wait_for_messages`,
    which moto's `receive_message` calls only when it holds no message). Process-wide."""
    global _original_wait_for_messages
    from moto.sqs.models import Queue

    if _original_wait_for_messages is None:
        _original_wait_for_messages = Queue.wait_for_messages
    original = _original_wait_for_messages

    def wait_for_messages(self: Any, timeout: int) -> None:
        with gate.stepped_out():
            original(self, timeout)

    Queue.wait_for_messages = wait_for_messages  # type: ignore[method-assign]


# --- pickling the backends -------------------------------------------------------------------


def _fresh(make: Callable[[], Any]) -> Callable[[Any], tuple[Callable[[], Any], tuple[()]]]:
    return lambda _: (make, ())


def _read_all(fd: int) -> bytes:
    """Every byte of the file `fd`, read with `pread` (its shared offset left alone)."""
    chunks, offset = [], 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _reduce_fake_key(key: Any) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """moto's S3 key as `FakeKey.__getstate__` keeps it (its bytes in place of its buffer and
    lock), read without its lock or its buffer's file offset: in a forked snapshot process
    (`Saver`) a lock may be a copy of one held at the fork, and a buffer spooled to disk shares
    its offset with the server's reads of the same key."""
    state = dict(key.__dict__)
    buffer = state.pop("_value_buffer")
    state.pop("lock", None)
    if getattr(buffer, "_rolled", True):
        state["value"] = _read_all(buffer.fileno())
    else:
        state["value"] = buffer._file.getvalue()  # noqa: SLF001 - the in-memory buffer's bytes
    return _restore_fake_key, (type(key), state)


def _restore_fake_key(cls: type, state: dict[str, Any]) -> Any:
    key = cls.__new__(cls)
    key.__setstate__(state)
    return key


def _dispatch_table() -> dict[type, Callable[[Any], Any]]:
    """How moto's objects that do not pickle as they are are kept: locks and conditions (an SQS
    queue's, an S3 key's) are made anew, unlocked, on load; S3 keys by `_reduce_fake_key`. A
    table, not `reducer_override`: looked up in C, not a Python call per object."""
    from moto.s3.models import FakeKey

    table: dict[type, Callable[[Any], Any]] = dict(copyreg.dispatch_table)
    table[type(threading.Lock())] = _fresh(threading.Lock)
    table[type(threading.RLock())] = _fresh(threading.RLock)
    table[threading.Condition] = _fresh(threading.Condition)
    table[FakeKey] = _reduce_fake_key
    return table


def _backend_dict(service: str) -> Any:
    """moto's `BackendDict` of `service` (`{account_id: {region: backend}}`)."""
    from moto.backends import get_backend

    return get_backend(service)  # type: ignore[call-overload]


def _own_attributes(backends: Any) -> dict[str, Any]:
    """What a service's `BackendDict` subclass keeps beside its backends (S3's `bucket_accounts`,
    the owner of every bucket name, without which a bucket restored is created again empty)."""
    from moto.core.base_backend import BackendDict, BaseBackend

    plain = vars(BackendDict(BaseBackend, "assay-probe")).keys()
    return {name: value for name, value in vars(backends).items() if name not in plain}


def _backends() -> dict[str, dict[str, Any]]:
    """`{service: {"accounts": {account_id: {region: backend}}, "attributes": {...}}}` for every
    persisted service, as they are."""
    state = {}
    for service in PERSISTED_SERVICES:
        backends = _backend_dict(service)
        state[service] = {
            "accounts": {account: dict(regions) for account, regions in backends.items()},
            "attributes": _own_attributes(backends),
        }
    return state


def dump_backends() -> bytes:
    """The persisted backends as one pickle (call with the gate held alone, or in a process
    forked while it was)."""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = _dispatch_table()
    pickler.dump(_backends())
    return buffer.getvalue()


def _install(state: dict[str, dict[str, Any]]) -> None:
    for service, saved in state.items():
        backends = _backend_dict(service)
        for account, regions in saved["accounts"].items():
            for region, backend in regions.items():
                backends[account][region] = backend
        for name, value in saved["attributes"].items():
            setattr(backends, name, value)


def _versions() -> dict[str, str]:
    import moto

    return {"moto": moto.__version__, "python": f"{sys.version_info[0]}.{sys.version_info[1]}"}


# --- the file --------------------------------------------------------------------------------


def write_snapshot(path: Path, payload: bytes, *, now: datetime | None = None) -> None:
    """Write `payload` (from `dump_backends`) to `path` with its header, atomically: a temporary
    file in the same folder (mode 0600), fsync, rename, fsync of the folder. Raises `OSError`."""
    saved_at = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    header = {
        **_versions(),
        "saved_at": saved_at,
        "bytes": len(payload),
        "sha256": hashlib.sha256(payload).hexdigest(),
        "services": list(PERSISTED_SERVICES),
    }
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        # Owner only: the state holds every organization's data and secrets.
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(MAGIC)
            f.write(json.dumps(header, sort_keys=True).encode() + b"\n")
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def read_header(path: Path) -> dict[str, Any]:
    """The header of the snapshot at `path` (`moto`, `python`, `saved_at`, `bytes`, `sha256`).

    Raises:
        SnapshotError: not a snapshot of this format, or its header does not parse.
        OSError: it cannot be read.
    """
    with open(path, "rb") as f:
        return _header(path, f)


def _header(path: Path, f: Any) -> dict[str, Any]:
    if f.read(len(MAGIC)) != MAGIC:
        raise _refuse(path, "is not a snapshot this assay can read")
    try:
        header = json.loads(f.readline())
    except ValueError:
        header = None
    if not isinstance(header, dict):
        raise _refuse(path, "is damaged (its header does not parse)")
    return header


def restore(path: Path) -> dict[str, Any]:
    """Put the backends saved at `path` in place of this process's (before serving); returns
    the header.

    Raises:
        SnapshotError: written by another moto or Python, damaged, or not loadable; nothing is
            installed then.
        OSError: it cannot be read.
    """
    with open(path, "rb") as f:
        header = _header(path, f)
        payload = f.read()
    mine = _versions()
    for name in ("moto", "python"):
        if header.get(name) != mine[name]:
            raise _refuse(
                path,
                f"was written by {name} {header.get(name)} (this is {name} {mine[name]}) "
                "and cannot be read",
            )
    if len(payload) != header.get("bytes") or (
        hashlib.sha256(payload).hexdigest() != header.get("sha256")
    ):
        raise _refuse(path, "is damaged (its content does not match its checksum)")
    try:
        # Our own file, in the user's own data folder, checked against its sha256 above.
        state = pickle.loads(payload)
    except Exception as exc:  # noqa: BLE001 - any failure to load is the same refusal
        raise _refuse(path, f"cannot be loaded ({type(exc).__name__})") from exc
    if not isinstance(state, dict) or not all(
        service in PERSISTED_SERVICES and isinstance(saved, dict) and saved.keys() == _PARTS
        for service, saved in state.items()
    ):
        raise _refuse(path, "holds what this assay does not keep")
    _install(state)
    return header


# --- saving while serving --------------------------------------------------------------------


class Saver:
    """Saves the backends to `path` while the server runs (see module doc).

    A save while serving forks the process with the gate held alone (a few milliseconds, what
    every request waits), and the forked copy pickles and writes the state as it was at the
    fork, while the server goes on; where `os.fork` does not exist the state is pickled under
    the gate. The last save (`stop`) pickles directly: no request is left to wait.

    Args:
        path: the snapshot file.
        gate: the gate every request of the server passes.
        min_interval_s: the shortest time between two saves of a changed state, in seconds.
        busy_share: the largest share of time saving may take (0.1: a save that took 0.3 s is
            followed by the next 3 s later at the soonest), which bounds its CPU.
        on_error: called with a one-line message when a save fails (the server keeps serving,
            and tries again after the next change).

    Attributes: `saves` (snapshots written), `last_bytes` (0 when a forked copy wrote it),
    `last_held_s` (how long the last save held requests), `last_took_s` (how long it took).
    """

    def __init__(
        self,
        path: Path,
        gate: StateGate,
        *,
        min_interval_s: float = 2.0,
        busy_share: float = 0.1,
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        self.path = path
        self._gate = gate
        self._min_interval_s = min_interval_s
        self._busy_share = busy_share
        self._on_error = on_error or (lambda message: print(message, file=sys.stderr))
        self._saved_changes = gate.changes
        self._next_at = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.saves = 0
        self.last_bytes = 0
        self.last_held_s = 0.0
        self.last_took_s = 0.0

    def start(self) -> Saver:
        """Remove what an interrupted save left (its temporary files) and start the thread that
        saves changes."""
        for leftover in self.path.parent.glob(f".{self.path.name}.*.tmp"):
            leftover.unlink(missing_ok=True)
        self._thread = threading.Thread(target=self._run, name="moto-state-saver", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            if self._gate.changes != self._saved_changes and time.monotonic() >= self._next_at:
                try:
                    self.save()
                except Exception as exc:  # noqa: BLE001 - reported; the server keeps serving
                    self._on_error(f"could not save the local state to {self.path}: {exc}")
                    self._next_at = time.monotonic() + max(self._min_interval_s, 10.0)

    def save(self, *, final: bool = False) -> bool:
        """Save now if anything changed since the last save (or nothing was ever saved); `final`
        also closes the gate (no request after it) and pickles in this process. Returns whether
        a snapshot was written. Raises `OSError`."""
        with self._lock:  # one save at a time: an older state never lands after a newer one
            started = time.monotonic()
            forked = None
            payload = None
            with self._gate.exclusive():
                changes = self._gate.changes
                if changes == self._saved_changes and self.path.exists():
                    if final:
                        self._gate.close()
                    return False
                if final or not hasattr(os, "fork"):
                    payload = dump_backends()
                else:
                    forked = _fork_snapshot(self.path)
                if final:
                    self._gate.close()
                self.last_held_s = time.monotonic() - started
            if forked is not None:
                _, status = os.waitpid(forked, 0)
                code = os.waitstatus_to_exitcode(status)
                if code != 0:
                    raise OSError(f"the process writing the snapshot failed (exit status {code})")
                self.last_bytes = 0
            else:
                assert payload is not None
                write_snapshot(self.path, payload)
                self.last_bytes = len(payload)
            self._saved_changes = changes
            self.saves += 1
            self.last_took_s = time.monotonic() - started
            self._next_at = time.monotonic() + max(
                self._min_interval_s, self.last_took_s / self._busy_share
            )
            return True

    def stop(self) -> bool:
        """Stop the thread and save for the last time (see `save(final=True)`)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        return self.save(final=True)


def _fork_snapshot(path: Path) -> int:
    """Fork; the child writes the snapshot of the state as it is at the fork and exits (never
    returns). Returns the child's pid to the caller, which holds the gate alone: no request is
    inside moto at the fork, so no lock the pickling needs is held by a thread the child lacks
    (the child touches no lock at all: `_dispatch_table` is built here, S3 keys are read
    without theirs, and errors are written to fd 2 directly)."""
    table = _dispatch_table()
    with warnings.catch_warnings():
        # Python 3.12 warns that a fork of a threaded process may deadlock in the child: see
        # above for why this child cannot.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the server's own stop follows this save
        buffer = io.BytesIO()
        pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
        pickler.dispatch_table = table
        pickler.dump(_backends())
        write_snapshot(path, buffer.getvalue())
        code = 0
    except BaseException as exc:  # noqa: BLE001 - the child reports any failure and exits
        os.write(2, f"assay dev: could not save the local state to {path}: {exc}\n".encode())
    finally:
        os._exit(code)
