"""moto's server for the embedded stack, in this process or a child of its own
(docs/guides/local-stack.md): `start_moto_server`, `start_moto_process` (or
`spawn_moto_process`, which returns before the child serves) and their handles (`MotoHandle`,
`MotoProcessHandle`: URL, stop, reset, request counts, CPU).

What assay changes in moto lives beside this module: the fixes to its internals
(`assay_local.moto_patches`: transactions whose cost does not grow with the table, SQS receives
that survive concurrent deletes, checked against the moto releases they were written for) and the
request wrapper and HTTP server (`assay_local.moto_http`: every request counted by operation,
every DynamoDB request serialized so conditional writes stay atomic, `assay_local.motofast`'s
faster paths, a keep-alive server).

moto keeps its state in process-global backends: two servers started in one process share it,
and so does `moto.mock_aws` used in the same process. Call `reset()` between tests.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import socket
import sys
import urllib.request
from typing import Any

from assay_local import motofast
from assay_local.moto_http import (
    COUNTS_PATH,
    EMPTY_RECEIVE_KEY,
    CountingSerializingApp,
    KeepAliveWSGIServer,
    RequestCounter,
)
from assay_local.moto_patches import (
    check_moto_version,
    patch_sqs_pending_groups,
    patch_transact_write_items,
)
from assay_local.motostate import StateGate

log = logging.getLogger(__name__)

SERVE_POLL_SECONDS = 0.05
"""How often moto's server checks that it is asked to stop (socketserver's default, 0.5 s, was
most of a stop's wall)."""


class PortTakenError(RuntimeError):
    """A server of the embedded stack could not listen on its port: something else holds it. The
    message is one line naming the port (`port`)."""

    def __init__(self, port: int, message: str) -> None:
        super().__init__(message)
        self.port = port


class MotoStartError(RuntimeError):
    """The moto process did not start; the message is its own one-line reason (a port in use, a
    saved state it cannot restore) when it gave one."""


def port_taken(port: int, flag: str | None = None) -> PortTakenError:
    """The error for `port` of 127.0.0.1 being in use; `flag` names the option that chooses
    another."""
    how = f"choose another with {flag}" if flag else "choose another port"
    return PortTakenError(
        port,
        f"port {port} on 127.0.0.1 is in use (another assay dev?): stop what holds it, or {how}",
    )


class MotoHandle:
    """A running embedded moto server.

    Attributes: `url` (`http://127.0.0.1:<port>`). Methods: `stop()`, `reset()` (wipe every
    backend), `requests()` / `total_requests()` / `reset_counts()` (AWS request counts).
    """

    def __init__(self, server: Any, url: str, counter: RequestCounter) -> None:
        self._server = server
        self.url = url
        self._counter = counter
        self._stopped = False

    def stop(self) -> None:
        """Shut the server down and free its port (idempotent)."""
        if self._stopped:
            return
        self._stopped = True
        self._server.stop()
        inner = getattr(self._server, "_server", None)
        if inner is not None:
            inner.server_close()  # ThreadedMotoServer.stop leaves the socket open

    def reset(self) -> None:
        """Wipe every moto backend in this process (`POST /moto-api/reset`); counts are kept.

        Raises `urllib.error.URLError` if the server is not running.
        """
        request = urllib.request.Request(f"{self.url}/moto-api/reset", data=b"", method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:
            response.read()

    def requests(self) -> dict[str, int]:
        """Requests served since start or `reset_counts()`, by `"service.Operation"`.

        DynamoDB and SQS by operation (`dynamodb.TransactWriteItems`, `sqs.ReceiveMessage`), S3 by
        HTTP method (`s3.PUT`). `EMPTY_RECEIVE_KEY` (`sqs.ReceiveMessage.empty`) counts the
        ReceiveMessage responses that held no message; it is a subset, not extra requests.
        """
        return self._counter.snapshot()

    def total_requests(self) -> int:
        """Sum of `requests()` without the `.empty` subset."""
        return sum(n for key, n in self._counter.snapshot().items() if key != EMPTY_RECEIVE_KEY)

    def reset_counts(self) -> None:
        """Zero every request count."""
        self._counter.clear()

    def cpu_seconds(self) -> float:
        """CPU seconds (user + system) the server has used outside this process: 0.0 here, where
        it runs in this process's threads (its time is this process's own)."""
        return 0.0

    @property
    def pid(self) -> int | None:
        """The id of the process moto runs in when that is not this one (None here)."""
        return None


def start_moto_server(
    *,
    port: int = 0,
    gate: StateGate | None = None,
    serialize_dynamodb: bool = True,
    patch_transactions: bool = True,
    sock: socket.socket | None = None,
) -> MotoHandle:
    """Start moto's `ThreadedMotoServer` on 127.0.0.1 and return its handle.

    `port`: 0 (the default) lets the OS pick a free one. `sock`: a socket already bound to
    127.0.0.1 and listening, served instead of binding `port` (`spawn_moto_process` hands the
    child one). `gate`: every AWS request passes it
    (`assay_local.motostate`, for a saved state), and moto's long polls step out of it while they
    wait. `serialize_dynamodb` and `patch_transactions` exist so the unpatched behaviour can be
    reproduced by hand; leave both on. `patch_transactions=False` does not remove a patch that an
    earlier call installed (see `unpatch_transact_write_items`).

    Raises:
        PortTakenError: `port` is in use.
    """
    import moto
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        create_backend_app,
    )
    from moto.server import ThreadedMotoServer

    check_moto_version(moto.__version__)
    if patch_transactions:
        patch_transact_write_items()
    patch_sqs_pending_groups()
    motofast.install()
    counter = RequestCounter()

    class FastDispatcher(DomainDispatcherApplication):
        # moto matches every request's host against hundreds of URL patterns (and lists its
        # modules) before dispatching: a fifth of the embedded stack's CPU under load. The answer
        # depends on the host alone, so remember it.
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._backend_by_host: dict[str | None, Any] = {}

        def get_backend_for_host(self, host: str | None) -> Any:
            try:
                return self._backend_by_host[host]
            except KeyError:
                backend = super().get_backend_for_host(host)
                self._backend_by_host[host] = backend
                return backend

    if gate is not None:
        from assay_local.motostate import release_gate_while_receives_wait

        release_gate_while_receives_wait(gate)

    class EmbeddedMotoServer(ThreadedMotoServer):
        # ThreadedMotoServer builds its WSGI app inside `_server_entry`; this is the same body
        # with our middleware around the app and a quiet request handler, and a bind that fails
        # reported to `start` (moto's own would leave `start` waiting for ever).
        bind_error: OSError | None = None

        def _server_entry(self) -> None:
            app = CountingSerializingApp(
                FastDispatcher(create_backend_app), counter, serialize_dynamodb, gate
            )
            try:
                self._server = KeepAliveWSGIServer((self._ip_address, self._port), app, sock)
            except OSError as exc:
                self.bind_error = exc
                self._server_ready_event.set()
                return
            self._server_ready_event.set()
            self._server.serve_forever(poll_interval=SERVE_POLL_SECONDS)

    server = EmbeddedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    if server.bind_error is not None:
        if server.bind_error.errno == errno.EADDRINUSE:
            raise port_taken(port) from server.bind_error
        raise server.bind_error
    host, bound = server.get_host_and_port()
    log.info("moto server on http://%s:%s", host, bound)
    return MotoHandle(server, f"http://{host}:{bound}", counter)


class MotoProcessHandle(MotoHandle):
    """A moto server running in a child process (its own interpreter, so its own GIL).

    Same interface as `MotoHandle`; counts are read over HTTP from `COUNTS_PATH`. With a saved
    state (`start_moto_process(state=...)`), `restored` is the header of the snapshot it started
    from (None: it started empty), `stop()` lets the child save a last time and `stopped` is what
    it said: `{"saved": path, "bytes": n}`, `{"unchanged": path}` or `{"error": message}`.

    A handle of `spawn_moto_process` is starting (`ready` False) until `wait_ready()` returns: its
    `url` is known, but nothing is served there yet. `stop()` of a starting handle ends the child
    (it has served nothing, so there is nothing to save).
    """

    def __init__(
        self,
        process: Any,
        url: str,
        *,
        persistent: bool = False,
        restored: dict[str, Any] | None = None,
        save_timeout_s: float = 300.0,
        ready: bool = True,
        port: int = 0,
    ) -> None:
        self._process = process
        self.url = url
        self._stopped = False
        self._persistent = persistent
        self._save_timeout_s = save_timeout_s
        self.restored = restored
        self.stopped: dict[str, Any] | None = None
        self.ready = ready
        self._port = port

    def wait_ready(self, timeout_s: float = 60.0) -> MotoProcessHandle:
        """Wait until the child says it serves (at once when it already did); returns self.

        Raises, the child ended first:
            MotoStartError: it did not say so within `timeout_s` seconds, or it said why not (a
                saved state it cannot restore: its one-line reason, naming --fresh).
            PortTakenError: it could not listen on its port.
        """
        if self.ready:
            return self
        import select

        line = ""
        ready, _, _ = select.select([self._process.stdout], [], [], timeout_s)
        if ready:
            line = self._process.stdout.readline().strip()
        try:
            said = json.loads(line) if line.startswith("{") else {}
        except ValueError:
            said = {}
        url = said.get("url", "")
        if not isinstance(url, str) or not url.startswith("http://127.0.0.1:"):
            self._stopped = True
            self._process.kill()
            self._process.wait()
            if said.get("port_taken"):
                raise port_taken(self._port)
            raise MotoStartError(
                said.get("error") or f"moto server process did not start ({line!r})"
            )
        self.url, self.restored, self.ready = url, said.get("restored"), True
        return self

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if not self.ready:
            self._process.kill()
            self._process.wait()
            return
        if self._persistent:
            self._stop_saving()
            return
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except Exception:  # noqa: BLE001 - a child that will not stop is killed
            self._process.kill()

    def _stop_saving(self) -> None:
        """Close the child's stdin (it stops serving, saves, says so and exits) and wait for it;
        a child that takes longer than `save_timeout_s` is killed (its last snapshot stays)."""
        import select

        try:
            self._process.stdin.close()
        except OSError:
            pass
        ready, _, _ = select.select([self._process.stdout], [], [], self._save_timeout_s)
        line = self._process.stdout.readline() if ready else ""
        try:
            said = json.loads(line) if line.strip() else None
        except ValueError:
            said = None
        self.stopped = (
            said
            if isinstance(said, dict)
            else {"error": "the moto process ended without saying it saved"}
        )
        try:
            self._process.wait(timeout=30)
        except Exception:  # noqa: BLE001 - a child that will not end is killed
            self._process.kill()

    def _counts(self, method: str) -> dict[str, int]:
        request = urllib.request.Request(
            f"{self.url}{COUNTS_PATH}", data=b"" if method == "POST" else None, method=method
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def requests(self) -> dict[str, int]:
        return self._counts("GET")

    def cpu_seconds(self) -> float:
        """CPU seconds (user + system) the child process has used, from `/proc/<pid>/stat`
        (Linux); 0.0 where that cannot be read."""
        try:
            with open(f"/proc/{self._process.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        # utime and stime are fields 14 and 15 of stat(5); the split drops the first two
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def total_requests(self) -> int:
        return sum(n for key, n in self.requests().items() if key != EMPTY_RECEIVE_KEY)

    def reset_counts(self) -> None:
        self._counts("POST")

    @property
    def pid(self) -> int | None:
        """The child process's id (a benchmark reads its memory from `/proc/<pid>/status`)."""
        return int(self._process.pid)


def _listen(port: int) -> socket.socket:
    """A socket bound to 127.0.0.1:`port` (0: the OS picks) and listening, as moto's server binds
    its own.

    Raises:
        PortTakenError: `port` is in use.
        MotoStartError: it could not be bound for another reason (the OS's, one line).
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen(KeepAliveWSGIServer.request_queue_size)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise port_taken(port) from exc
        raise MotoStartError(f"moto server could not listen on 127.0.0.1:{port}: {exc}") from exc
    return sock


def spawn_moto_process(
    *,
    port: int = 0,
    state: os.PathLike[str] | str | None = None,
    min_save_interval_s: float = 2.0,
    pass_fds: tuple[int, ...] = (),
) -> MotoProcessHandle:
    """Start `start_moto_server()` in a child Python process and return its handle at once,
    before the child serves: call `wait_ready()` before the first request. What the caller does
    meanwhile (its own imports) overlaps the child's start (~0.5 s: its interpreter, moto, and the
    first request of each service the stack uses, made before it says it is ready).

    This process binds the port and hands the listening socket to the child, so `url` is known at
    once and a port in use is refused here. Arguments as `start_moto_process`.

    Raises:
        PortTakenError: `port` is in use.
        MotoStartError: the port could not be bound for another reason.
    """
    import subprocess

    sock = _listen(port)
    try:
        command = [sys.executable, "-m", "assay_local.motoserver", "--fd", str(sock.fileno())]
        if state is not None:
            command += ["--state", os.fspath(state), "--save-interval", str(min_save_interval_s)]
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            pass_fds=(*pass_fds, sock.fileno()),
        )
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        sock.close()  # the child holds it now
    return MotoProcessHandle(process, url, persistent=state is not None, ready=False, port=port)


def start_moto_process(
    timeout_s: float = 60.0,
    *,
    port: int = 0,
    state: os.PathLike[str] | str | None = None,
    min_save_interval_s: float = 2.0,
    pass_fds: tuple[int, ...] = (),
) -> MotoProcessHandle:
    """Start `start_moto_server()` in a child Python process and return its handle once it
    serves (`spawn_moto_process`, then `wait_ready`).

    The embedded stack runs moto out of process so the server's CPU work (moto parses, evaluates
    and serializes every request in Python) does not compete for one GIL with the handlers it
    serves. The child exits with its parent (it watches its stdin) and ignores Ctrl-C (the
    parent stops it).

    Args:
        timeout_s: how long the child may take to say it serves (restoring a large state
            included), in seconds.
        port: where it listens on 127.0.0.1; 0 lets the OS pick a free port.
        state: a snapshot file (`assay_local.motostate`): restored at start when it exists, saved
            while serving and when stopped (also when this process dies: the child sees its stdin
            close). None keeps nothing.
        min_save_interval_s: the shortest time between two saves of a changed state.
        pass_fds: file descriptors the child inherits (a lock it keeps held while it saves).

    Raises:
        MotoStartError: the child did not start within `timeout_s`, or could not restore `state`
            (its one-line reason, naming --fresh).
        PortTakenError: `port` is in use.
    """
    return spawn_moto_process(
        port=port, state=state, min_save_interval_s=min_save_interval_s, pass_fds=pass_fds
    ).wait_ready(timeout_s)


_WARM_UP = (
    ("dynamodb", "POST", {"X-Amz-Target": "DynamoDB_20120810.ListTables"}, b"{}"),
    ("sqs", "POST", {"X-Amz-Target": "AmazonSQS.ListQueues"}, b"{}"),
    ("s3", "GET", {}, b""),
    ("ses", "POST", {}, b"Action=ListIdentities&Version=2010-12-01"),
)
"""One read of each service the embedded stack uses (DynamoDB, SQS, S3, SES): what moto imports
and builds on a service's first request."""


def _warm_up(handle: MotoHandle) -> None:
    """Serve `_WARM_UP` once over HTTP, so its cost is paid before the parent's first requests,
    then zero the counts. Reads only: the state (and a saved state's `changes`) is left as it was.
    A failure is left for the real request to meet."""
    import http.client

    host, port = handle.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        for service, method, headers, body in _WARM_UP:
            content_type = (
                "application/x-amz-json-1.0"
                if "X-Amz-Target" in headers
                else "application/x-www-form-urlencoded"
            )
            auth = (
                f"AWS4-HMAC-SHA256 Credential=testing/20200101/us-east-1/{service}/aws4_request, "
                "SignedHeaders=host, Signature=0"
            )
            connection.request(
                method,
                "/",
                body=body,
                headers=headers | {"Content-Type": content_type, "Authorization": auth},
            )
            connection.getresponse().read()
    except (OSError, http.client.HTTPException):
        log.debug("moto warm-up failed", exc_info=True)
    finally:
        connection.close()
        handle.reset_counts()


class _Stop(Exception):
    """SIGTERM in the moto process: stop serving, save, exit."""


def _say(value: dict[str, Any]) -> None:
    """One JSON line to the parent (which may be gone: then nobody listens)."""
    try:
        print(json.dumps(value), flush=True)
    except (BrokenPipeError, OSError):
        pass


def _serve_in_child(argv: list[str] | None = None) -> int:
    """Entry point of the child process: serve until the parent closes our stdin (or SIGTERM).

    Says one JSON line when it listens, `{"url": ..., "restored": header or null}`, or why it
    did not, `{"error": ...}` (`"port_taken": true` for a port in use); with `--state`, one more
    as it exits, after the last save. Exit status 0, or 1 when it did not start or the last save
    failed.
    """
    import argparse
    import gc
    import signal
    from pathlib import Path

    from assay_local import motostate

    parser = argparse.ArgumentParser(prog="python -m assay_local.motoserver")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--fd", type=int, default=None, help="a listening socket to serve")
    parser.add_argument("--state", type=Path, default=None)
    parser.add_argument("--save-interval", type=float, default=2.0)
    args = parser.parse_args(argv)
    # Ctrl-C reaches every process of the terminal's group: the parent stops us (closing our
    # stdin), so a save is never cut short by the same key press.
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    gate = motostate.StateGate() if args.state is not None else None
    restored = None
    try:
        if args.state is not None and args.state.exists():
            restored = motostate.restore(args.state)
        sock = socket.socket(fileno=args.fd) if args.fd is not None else None
        handle = start_moto_server(port=args.port, gate=gate, sock=sock)
        _warm_up(handle)
    except PortTakenError as exc:
        _say({"error": str(exc), "port_taken": True})
        return 1
    except (motostate.SnapshotError, OSError) as exc:
        _say({"error": str(exc)})
        return 1
    saver = None
    if gate is not None:

        def report(message: str) -> None:
            print(f"assay dev: {message}", file=sys.stderr, flush=True)

        saver = motostate.Saver(
            args.state, gate, min_interval_s=args.save_interval, on_error=report
        ).start()

        def stop(*_: object) -> None:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second one must not cut the save
            raise _Stop

        signal.signal(signal.SIGTERM, stop)
    status = 0
    try:
        # This process is the server alone: what it holds once up (moto, its backends,
        # botocore's models) stays until it exits, and the cyclic collector's full passes skip
        # it (one took ~0.1 s, holding every request of the stack, issue 12).
        gc.freeze()
        _say({"url": handle.url, "restored": restored})
        sys.stdin.read()  # returns when the parent exits or closes the pipe
    except _Stop:
        pass
    finally:
        handle.stop()
        if saver is not None:
            try:
                wrote = saver.stop()
                _say(
                    {"saved": str(args.state), "bytes": saver.last_bytes}
                    if wrote
                    else {"unchanged": str(args.state)}
                )
            except Exception as exc:  # noqa: BLE001 - said to the parent, which says it once
                _say({"error": f"could not save the local state to {args.state}: {exc}"})
                status = 1
    return status


if __name__ == "__main__":
    sys.exit(_serve_in_child())
