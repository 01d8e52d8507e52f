"""What `assay dev` needs around the embedded stack to behave like a tool (issue 13 scope 4).

- Stable ports: the API on `DEFAULT_API_PORT` (8642), moto on the next port, unless `--port` /
  `--aws-port` say otherwise; `assay_local.probes.check_port_free` turns a port in use into one
  line before anything starts. Tests, the demo and the benchmarks keep asking the OS for free
  ports (0).
- A data folder (`DataFolder`, default `.assay/dev` under the current directory): moto's saved
  state (`assay_local.motostate`), the token signing secret (so a printed token keeps working
  across restarts), and a lock so two `assay dev` never write one folder. `--fresh` keeps the
  previous state beside it as `moto-state.old` and starts empty.
- An endpoint that must answer (`assay_local.probes.check_endpoint`): `AWS_ENDPOINT_URL` or
  `--localstack` pointing at nothing is one line saying so and how to fix it, checked before
  anything else connects.

Every refusal is a `DevError` whose message is that one line.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import time
from pathlib import Path
from typing import Any

from assay_local import probes
from assay_local.probes import ProbeError, endpoint_hint

DEFAULT_API_PORT = 8642
"""Where `assay dev` serves the API unless `--port` says otherwise; moto listens on the next
port unless `--aws-port` says otherwise."""
DEFAULT_DATA_DIR = Path(".assay") / "dev"
"""The data folder of `assay dev`, under the current directory (`--data` chooses another)."""
LOCALSTACK_ENDPOINT = "http://127.0.0.1:4566"
"""LocalStack's edge port as `localstack-compose.yml` publishes it."""
DEV_POLL_WAIT_SECONDS = 5
"""The long-poll wait of `assay dev`'s receives, in seconds: the longest its stop waits for the
receives in flight once the running cases are done (`EmbeddedStack.stop`)."""
STATE_FILE = "moto-state"
SECRET_FILE = "signing-secret"
LOCK_FILE = "lock"
SECRET_ENV = "ASSAY_JWT_SECRET"


class DevError(Exception):
    """`assay dev` cannot start as asked; the message is one line saying why and what to do."""


class DataFolder:
    """`assay dev`'s folder: `moto-state` (moto's saved backends), `signing-secret`, `lock`.

    The folder is created (mode 0700: it holds the signing secret and every organization's data)
    by `lock()`, which every other method needs first.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock_fd: int | None = None
        self._made = False

    @property
    def state_file(self) -> Path:
        """moto's snapshot (`assay_local.motostate`)."""
        return self.path / STATE_FILE

    @property
    def lock_fd(self) -> int:
        """The descriptor holding the lock; a child that inherits it keeps the folder locked
        until it exits (moto's process, which saves after this one is gone)."""
        return self._require_lock()

    def _require_lock(self) -> int:
        if self._lock_fd is None:
            raise RuntimeError("DataFolder.lock() first")
        return self._lock_fd

    def lock(self, *, wait_s: float = 60.0, on_wait: Any = None) -> None:
        """Create the folder and hold its lock for this process's life.

        A folder whose holder is a live `assay dev` is refused at once; one held only by the
        moto process of an `assay dev` that is gone (it saves its last state) is waited for, up
        to `wait_s` seconds (`on_wait()` is called once when that wait begins).

        Raises:
            DevError: another `assay dev` uses the folder, or the folder cannot be made.
        """
        self._made = not self.path.exists()
        try:
            self.path.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.path / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise DevError(f"cannot use {self.path} as the data folder ({exc.strerror})") from None
        deadline = time.monotonic() + wait_s
        waited = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = _read_pid(fd)
                if holder is not None and _alive(holder):
                    os.close(fd)
                    raise DevError(
                        f"the data folder {self.path} is in use by another assay dev (pid "
                        f"{holder}): stop it, or choose another folder with --data"
                    ) from None
                if time.monotonic() > deadline:
                    os.close(fd)
                    raise DevError(
                        f"the data folder {self.path} is still locked by a stopping assay dev "
                        "after a minute: stop it, or choose another folder with --data"
                    ) from None
                if not waited and on_wait is not None:
                    on_wait()
                waited = True
                time.sleep(0.2)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._lock_fd = fd

    def forget_if_new(self) -> None:
        """Undo `lock()` on a folder it made, when nothing but the lock is in it (a start that
        was refused after the lock leaves no folder behind); a folder that was there stays."""
        if self._lock_fd is None or not self._made:
            return
        if any(p.name != LOCK_FILE for p in self.path.iterdir()):
            return
        (self.path / LOCK_FILE).unlink(missing_ok=True)
        os.close(self._lock_fd)
        self._lock_fd = None
        try:
            self.path.rmdir()
        except OSError:
            pass  # something else appeared in it meanwhile: leave it

    def discard_state(self) -> Path | None:
        """`--fresh`: move the saved state aside (to `moto-state.old`, replacing an older one);
        returns where it went, or None when there was none."""
        self._require_lock()
        if not self.state_file.exists():
            return None
        kept = self.state_file.with_name(STATE_FILE + ".old")
        os.replace(self.state_file, kept)
        return kept

    def signing_secret(self) -> str:
        """The folder's token signing secret, made (48 random URL-safe characters, mode 0600,
        written atomically) the first time.

        Raises:
            DevError: the file cannot be read or written.
        """
        self._require_lock()
        path = self.path / SECRET_FILE
        try:
            existing = path.read_text(encoding="ascii").strip()
        except FileNotFoundError:
            existing = ""
        except (OSError, UnicodeDecodeError) as exc:
            raise DevError(f"cannot read the signing secret {path} ({exc})") from None
        if existing:
            return existing
        secret = secrets.token_urlsafe(36)
        temporary = path.with_name(f".{SECRET_FILE}.{os.getpid()}.tmp")
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="ascii") as f:
                f.write(secret + "\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(temporary, path)
        except OSError as exc:
            temporary.unlink(missing_ok=True)
            raise DevError(f"cannot write the signing secret {path} ({exc.strerror})") from None
        return secret


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class DevSession:
    """A started `assay dev` stack and what its start found, for the command to print.

    Attributes: `stack` (the started `EmbeddedStack`), `folder` (`DataFolder`, locked),
    `endpoint` (the external AWS endpoint, or None for the embedded moto), `restored` (the
    header of the state moto started from, or None), `discarded` (where `--fresh` moved the old
    state, or None), `secret_from_env` (`ASSAY_JWT_SECRET` came from the environment, not the
    folder).
    """

    def __init__(
        self,
        stack: Any,
        folder: DataFolder,
        *,
        endpoint: str | None,
        discarded: Path | None,
        secret_from_env: bool,
    ) -> None:
        self.stack = stack
        self.folder = folder
        self.endpoint = endpoint
        self.discarded = discarded
        self.secret_from_env = secret_from_env
        self.restored: dict[str, Any] | None = getattr(stack.moto, "restored", None)

    def running_cases(self) -> int:
        """Queue messages being handled now (case tasks, mostly)."""
        pollers = self.stack.pollers
        return pollers.handling() if pollers is not None else 0

    def stop(self, *, grace_s: float | None = None) -> dict[str, Any] | None:
        """Stop the stack, leaving running handlers `grace_s` seconds to finish (see
        `EmbeddedStack.stop`); returns what moto said of its last save (`{"saved": path,
        "bytes"}`, `{"unchanged": path}`, `{"error": message}`), or None with an external
        endpoint."""
        self.stack.stop(grace_s=grace_s)
        return getattr(self.stack.moto, "stopped", None)


def start(
    *,
    data: Path,
    port: int = DEFAULT_API_PORT,
    aws_port: int | None = None,
    fresh: bool = False,
    localstack: bool = False,
    endpoint: str | None = None,
    workers: int = 8,
    environ: dict[str, str] | None = None,
    on_wait: Any = None,
) -> DevSession:
    """Check everything `assay dev` was asked, then start the embedded stack.

    In this order, each refusal a `DevError` before anything is started: the external endpoint
    (`--endpoint`, `--localstack`, else `AWS_ENDPOINT_URL`) must answer; the data folder is
    locked (waiting for a stopping predecessor's save); the ports must be free; `--fresh`
    moves the old state aside.

    Args:
        data: the data folder.
        port: the API's port on 127.0.0.1 (0: any free port).
        aws_port: moto's port; None: `port + 1` (any free port when `port` is 0).
        fresh: start empty (`DataFolder.discard_state`); refused with an external endpoint.
        localstack: use LocalStack at `endpoint` or `LOCALSTACK_ENDPOINT`.
        endpoint: an external AWS endpoint (LocalStack, a moto server of one's own).
        workers: threads polling the case-task queue.
        environ: the environment read for `AWS_ENDPOINT_URL` and `ASSAY_JWT_SECRET` (default
            `os.environ`).
        on_wait: called once if the data folder's lock must be waited for.

    Raises:
        DevError: any refusal above, or a start that failed on a port taken meanwhile, a state
            moto cannot restore (naming `--fresh`), an endpoint that stopped answering.
    """
    try:
        return _start(
            data=data,
            port=port,
            aws_port=aws_port,
            fresh=fresh,
            localstack=localstack,
            endpoint=endpoint,
            workers=workers,
            environ=os.environ if environ is None else environ,
            on_wait=on_wait,
        )
    except ProbeError as exc:
        raise DevError(str(exc)) from None


def _start(
    *,
    data: Path,
    port: int,
    aws_port: int | None,
    fresh: bool,
    localstack: bool,
    endpoint: str | None,
    workers: int,
    environ: Any,
    on_wait: Any,
) -> DevSession:
    # The stack's modules are imported only to start it: every `assay` command's parser reads
    # this module's defaults, and `assay run` need not load the embedded stack (~80 ms).
    from assay_local.motoserver import MotoStartError, PortTakenError
    from assay_local.stack import EmbeddedStack, EndpointUnreachableError

    env = environ
    external = endpoint or (LOCALSTACK_ENDPOINT if localstack else None)
    if external is not None:
        named = f"--localstack ({external})" if localstack else f"--endpoint {external}"
        flag = "--localstack" if localstack else "--endpoint"
        probes.check_endpoint(external, named=named, hint=endpoint_hint(from_env=False, flag=flag))
    elif env.get("AWS_ENDPOINT_URL"):
        external = env["AWS_ENDPOINT_URL"]
        own = (port + 1 if aws_port is None else aws_port) if port else None
        probes.check_endpoint(
            external,
            named=f"AWS_ENDPOINT_URL={external}",
            hint=endpoint_hint(
                from_env=True, own_moto=external.rstrip("/") == f"http://127.0.0.1:{own}"
            ),
        )
        if probes.is_assay_moto(external):
            # A shell that kept what an earlier `assay dev` printed: this one would serve that
            # one's state, and both would poll the same queues and fire the same schedules.
            raise DevError(
                f"AWS_ENDPOINT_URL={external} is the moto server of another assay dev (its data "
                "folder keeps that state, and two would poll the same queues): unset "
                "AWS_ENDPOINT_URL for a stack of this one's own, or pass --endpoint to share it "
                "on purpose"
            )
    if fresh and external is not None:
        raise DevError(
            "--fresh empties the embedded stack's saved state; LocalStack keeps its own "
            "(`docker compose -f localstack-compose.yml down` wipes it)"
        )
    folder = DataFolder(data)
    folder.lock(on_wait=on_wait)
    moto_port = 0
    try:
        probes.check_port_free(port, "--port")
        if external is None:
            moto_port = (port + 1 if port else 0) if aws_port is None else aws_port
            if moto_port > 65535:
                raise DevError(f"port {moto_port} does not exist: choose moto's with --aws-port")
            probes.check_port_free(moto_port, "--aws-port")
    except (DevError, ProbeError):
        folder.forget_if_new()
        raise
    discarded = folder.discard_state() if fresh else None
    overrides: dict[str, str] = {}
    secret_from_env = SECRET_ENV in env
    if not secret_from_env:
        overrides[SECRET_ENV] = folder.signing_secret()
    if external is not None:
        overrides["AWS_ENDPOINT_URL"] = external
    # Long polls: an idle stack asks each queue a few times a minute, not a few times a second;
    # and short enough that a stop, which waits for the receives in flight (its queues outlive
    # it: `EmbeddedStack.stop`), takes seconds.
    stack = EmbeddedStack(
        env=overrides,
        workers=workers,
        poll_wait_seconds=DEV_POLL_WAIT_SECONDS,
        api_port=port,
        moto_port=moto_port,
        moto_state=folder.state_file if external is None else None,
        moto_pass_fds=(folder.lock_fd,) if external is None else (),
    )
    try:
        stack.start()
    except (PortTakenError, MotoStartError, EndpointUnreachableError) as exc:
        raise DevError(str(exc)) from None
    return DevSession(
        stack,
        folder,
        endpoint=external,
        discarded=discarded,
        secret_from_env=secret_from_env,
    )
