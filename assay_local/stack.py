"""The embedded stack: the whole service in one process (`assay dev`, `assay demo`, e2e tests).

`EmbeddedStack` starts moto's server on 127.0.0.1 (or uses `AWS_ENDPOINT_URL`, e.g. LocalStack),
points the process at it, creates every resource from `infra/`, serves the Chalice routes over
HTTP, polls every queue that has an `on_sqs_message` handler and fires every `@app.schedule`.
"""

from __future__ import annotations

import atexit
import errno
import gc
import importlib
import json
import logging
import os
import threading
import time
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from assay_local import botodata, probes
from assay_local.motoserver import port_taken

log = logging.getLogger(__name__)

_DUMMY_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
LOCAL_OPERATOR_DEFAULTS = {
    "ASSAY_PYTHON_AGENT_MODULES": "bench.agents",
    "ASSAY_ALLOW_PRIVATE_NETWORK": "true",
}
"""What the embedded stack's operator allows unless the caller's environment or `env` says
otherwise: the project's example agents as `python` entrypoints, and agents on this machine
(docs/reference/security.md)."""
PUBLIC_URL_SETTING = "ASSAY_PUBLIC_URL"
"""The API's address as agents reach it: the embedded stack sets its own `api_url` when the
operator names none, so its `http` and `lambda` agents have a tool gateway."""
SERVE_POLL_SECONDS = 0.05
"""How often the API's HTTP server checks that it is asked to stop, in seconds."""
API_LAMBDA_TIMEOUT_SECONDS = 29
"""API Gateway cuts requests at 29 s; the routes' Lambda context counts down from this."""


_exit_freeze: list[bool] = []


def _freeze_at_exit() -> None:
    """Have the interpreter's exit skip what the process still holds (once per process).

    A process that ran a stack holds its imports, the app and botocore's models; the collector's
    last passes as the interpreter exits walked all of it (~0.3 s of each `assay demo`'s wall)
    only to free memory the OS takes back anyway. Frozen at exit (`gc.freeze`), they are left
    to the OS. What is frozen is never collected, so the `__del__` of an object in a reference
    cycle does not run at exit (Python does not promise that it does); `weakref.finalize` and
    `atexit` callbacks still run.
    """
    if not _exit_freeze:
        _exit_freeze.append(True)
        atexit.register(gc.freeze)


class EndpointUnreachableError(RuntimeError):
    """`AWS_ENDPOINT_URL` names an endpoint nothing answers at; the message is one line saying
    so and what to do."""


def check_endpoint(url: str, timeout_s: float = 3.0) -> None:
    """Refuse an external endpoint (`AWS_ENDPOINT_URL`) before anything connects to it: a
    botocore client would retry, then end in a long `EndpointConnectionError` that does not say
    which setting is wrong.

    Raises:
        EndpointUnreachableError: nothing accepts a connection at `url` (see
            `probes.check_endpoint`).
    """
    try:
        probes.check_endpoint(
            url,
            named=f"AWS_ENDPOINT_URL={url}",
            hint=probes.endpoint_hint(from_env=True),
            timeout_s=timeout_s,
        )
    except probes.ProbeError as exc:
        raise EndpointUnreachableError(str(exc)) from None


def reset_process_state() -> None:
    """Make the process re-read settings from the environment and rebuild its adapters.

    Uses `chalicelib.bootstrap.reset()`; while that module (or an adapter it builds) is missing,
    falls back to clearing the settings cache.
    """
    try:
        from chalicelib import bootstrap

        bootstrap.reset()
    except ImportError:
        from chalicelib.config import get_settings

        get_settings.cache_clear()


def _make_local_chalice(app: Any) -> None:
    # chalice.local.create_local_server does this by rewriting the bases of its one module-level
    # `CustomLocalChalice` class, which breaks (inheritance cycle) when the same app is served a
    # second time, e.g. by a later stack in the same test session. A class per app avoids that.
    # LocalChalice keeps `app.current_request` per thread, which concurrent requests need.
    from chalice.local import LocalChalice

    if not isinstance(app, LocalChalice):
        cls = app.__class__
        app.__class__ = type(f"Local{cls.__name__}", (LocalChalice, cls), {})


def gateway_error_body(status: int, request_id: str | None = None) -> dict[str, Any]:
    """The body of an error the gateway answers itself (no view ran), as API Gateway's Gateway
    Responses in `infra.gateway` answer it on AWS: `{"error": {"code", "message", "request_id"}}`,
    a fixed text and the request's id."""
    from chalicelib.api.common import GATEWAY_ERRORS

    code, message = GATEWAY_ERRORS[status]
    error = {"code": code, "message": message}
    return {"error": error | {"request_id": request_id} if request_id else error}


def gateway_error_headers(request_id: str) -> dict[str, str]:
    """The headers of an error the gateway answers itself: JSON, and the request id."""
    from chalicelib.telemetry import REQUEST_ID_HEADER

    return {"Content-Type": "application/json", REQUEST_ID_HEADER: request_id}


class EmbeddedStack:
    """moto (or LocalStack) + resources + HTTP routes + SQS pollers + scheduler, in this process.

    Use as a context manager, or call `start()` / `stop()`.

    Args:
        app_module: module with a Chalice `app` attribute; default `import app` (the repo's).
        env: environment overrides applied for the stack's life (e.g.
            `{"EVAL_RUN_CONCURRENCY": "2"}`); `AWS_ENDPOINT_URL` here selects LocalStack.
        workers: threads polling the case-task queue: as many cases as may be in flight at once
            (`EVAL_ORG_CONCURRENCY`) is enough; each more is one more idle long poll.
        side_workers: threads for each other queue (dead case tasks, agent events).
        poll_wait_seconds: long-poll wait of each receive (`pause_pollers` takes about this long,
            and `stop` when the queues outlive the stack: `queues_outlive_it`).
        tick_seconds: if set, every schedule fires this often instead of on its expression.
        scheduler: start the scheduler's background thread (`self.scheduler` exists either way,
            so `fire_all()` works).
        pollers: start the SQS pollers.
        moto_process: run moto's server in a child process (its own GIL: the default, and what
            keeps a loaded stack near its concurrency floor) rather than in this one.
        api_port / moto_port: where the API and moto listen on 127.0.0.1; 0 (the default, what
            tests, the demo and the benchmarks use) lets the OS pick free ports.
        moto_state: a file moto's state is kept in (`assay_local.motostate`: restored at start,
            saved while running and at `stop`); None keeps nothing. Needs `moto_process`.
        moto_pass_fds: descriptors moto's process inherits (`assay dev`'s data-folder lock).

    Attributes (after `start()`): `api_url` (`http://127.0.0.1:<port>`), `moto` (`MotoHandle`,
    or None when using an external endpoint), `endpoint_url`, `queue_urls` (by queue name),
    `settings`, `app`, `pollers` (`Pollers` or None), `scheduler` (`Scheduler`), `phases`
    (seconds each step of the start took, by step, in order: what `bench.startup` prints).

    Raises (from `start()`), the partly started stack stopped first:
        PortTakenError: `api_port` or `moto_port` is in use.
        MotoStartError: moto's process did not start (`moto_state` it cannot restore: the
            message, one line, names `--fresh`).
        EndpointUnreachableError: `AWS_ENDPOINT_URL` is set and nothing answers there.
        Whatever bootstrap or the app import raises.
    """

    def __init__(
        self,
        app_module: ModuleType | None = None,
        *,
        env: Mapping[str, str] | None = None,
        workers: int = 8,
        side_workers: int = 2,
        poll_wait_seconds: int = 1,
        tick_seconds: float | None = None,
        scheduler: bool = True,
        pollers: bool = True,
        moto_process: bool = True,
        api_port: int = 0,
        moto_port: int = 0,
        moto_state: os.PathLike[str] | str | None = None,
        moto_pass_fds: tuple[int, ...] = (),
    ) -> None:
        if moto_state is not None and not moto_process:
            raise ValueError("moto_state needs moto_process=True (moto's state is its process's)")
        self._app_module = app_module
        self._moto_process = moto_process
        self._api_port = api_port
        self._moto_port = moto_port
        self._moto_state = moto_state
        self._moto_pass_fds = moto_pass_fds
        self._env_overrides = dict(env or {})
        self._case_workers, self._side_workers = workers, side_workers
        self._poll_wait_seconds = poll_wait_seconds
        self._tick_seconds = tick_seconds
        self._run_scheduler = scheduler
        self._run_pollers = pollers
        self._saved_env: dict[str, str | None] = {}
        self._http: Any = None
        self._http_thread: threading.Thread | None = None
        self.api_url: str = ""
        self.moto: Any = None
        self.endpoint_url: str = ""
        self.queue_urls: dict[str, str] = {}
        self.settings: Any = None
        self.app: Any = None
        self.pollers: Any = None
        self.scheduler: Any = None
        self.phases: dict[str, float] = {}
        self._mark_at = 0.0

    @property
    def _workers(self) -> dict[str, int]:
        """Poller threads by queue name (the stack's case-tasks queue, and every other)."""
        return {self.settings.names.case_tasks_queue: self._case_workers, "*": self._side_workers}

    # -- environment ---------------------------------------------------------------------------

    def _set_env(self, name: str, value: str | None) -> None:
        if name not in self._saved_env:
            self._saved_env[name] = os.environ.get(name)
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value

    def _restore_env(self) -> None:
        for name, value in self._saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self._saved_env.clear()

    # -- life ----------------------------------------------------------------------------------

    def _mark(self, phase: str) -> None:
        """Record the seconds since the last mark as `phase` (`phases`)."""
        now = time.perf_counter()
        self.phases[phase] = self.phases.get(phase, 0.0) + now - self._mark_at
        self._mark_at = now

    def start(self) -> EmbeddedStack:
        """Start everything (see class doc); returns self."""
        _freeze_at_exit()
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        self.phases.clear()
        self._mark_at = time.perf_counter()
        from assay_local.motoserver import spawn_moto_process, start_moto_server
        from chalicelib.config import Settings
        from infra.resources import bootstrap

        self._mark("import settings")

        for name, value in self._env_overrides.items():
            self._set_env(name, value)
        for name, value in LOCAL_OPERATOR_DEFAULTS.items():
            if name not in self._env_overrides and os.environ.get(name) is None:
                self._set_env(name, value)
        endpoint = Settings().aws_endpoint_url
        if endpoint is None:
            # moto's process starts while this one imports what it needs (the settings' adapters,
            # the app, botocore's data): it is waited for below, before the first AWS request.
            self.moto = (
                spawn_moto_process(
                    port=self._moto_port, state=self._moto_state, pass_fds=self._moto_pass_fds
                )
                if self._moto_process
                else start_moto_server(port=self._moto_port)
            )
            endpoint = self.moto.url
            self._mark("moto (spawn)")
            # Only moto's dummy keys: real ones (or a profile) must never reach a local endpoint.
            for name, value in _DUMMY_CREDENTIALS.items():
                self._set_env(name, value)
            self._set_env("AWS_SESSION_TOKEN", None)
            self._set_env("AWS_PROFILE", None)
        else:
            check_endpoint(endpoint)
            for name, value in _DUMMY_CREDENTIALS.items():  # LocalStack takes any key
                if not os.environ.get(name):
                    self._set_env(name, value)
        self.endpoint_url = endpoint
        self._set_env("AWS_ENDPOINT_URL", endpoint)
        self._set_env("AWS_DEFAULT_REGION", os.environ.get("AWS_DEFAULT_REGION") or "us-east-1")

        reset_process_state()
        from chalicelib.config import get_settings

        self.settings = settings = get_settings()
        self._mark("settings")
        # The app is imported before its tables exist: importing it makes no AWS request, and no
        # handler runs before the HTTP server and the pollers start, after bootstrap.
        module = self._module = self._app_module or importlib.import_module("app")
        self.app = module.app
        self._mark("import app")
        # botocore's data for every client the stack makes, parsed once (`botodata`), while
        # moto's process starts.
        botodata.share()
        botodata.warm(endpoint, settings.aws_default_region)
        self._mark("botocore data")
        wait_ready = getattr(self.moto, "wait_ready", None)
        if wait_ready is not None:
            wait_ready()
            self._mark("moto (wait for ready)")
        self.queue_urls = bootstrap(
            endpoint,
            settings.aws_default_region,
            settings.assay_resource_prefix,
            settings.evaluation_case_timeout_seconds,
            bucket=settings.assay_results_bucket,
        )
        self._mark("bootstrap")
        self._serve_http()
        if not self._env_overrides.get(PUBLIC_URL_SETTING) and not os.environ.get(
            PUBLIC_URL_SETTING
        ):
            # The tool gateway an `http` or `lambda` agent is given lives under the API's address
            # (docs/guides/tools.md): the stack's own, unless the operator named another.
            self._set_env(PUBLIC_URL_SETTING, self.api_url)
            reset_process_state()
            self.settings = settings = get_settings()
        self._mark("http server")

        # Owner notices are mailed from a verified sender: verify it on the local stack.
        from chalicelib import bootstrap as composition

        composition.container().mailer.verify_sender()
        # The queue a run's first tasks go to, found now: its client and URL were ~0.1 s of the
        # first run's start.
        _ = composition.container().case_queue.url
        self._mark("mailer and queue")

        from assay_local.poller import start_pollers
        from assay_local.scheduler import Scheduler

        if self._run_pollers:
            self.pollers = start_pollers(
                self.app,
                endpoint_url=endpoint,
                region=settings.aws_default_region,
                workers=self._workers,
                wait_seconds=self._poll_wait_seconds,
                app_module=module,
            )
        self.scheduler = Scheduler(
            self.app,
            tick_seconds=self._tick_seconds,
            region=settings.aws_default_region,
            app_module=module,
        )
        if self._run_scheduler:
            self.scheduler.start()
        self._mark("pollers and scheduler")
        # What the process holds once the stack is up (its imports, the app, the clients' service
        # models) lives as long as the stack: the cyclic collector's full passes skip it until
        # `stop`. One such pass over it took ~0.23 s, in which every lane of the process waited
        # (issue 12).
        gc.freeze()
        log.info("embedded stack: api %s, aws %s", self.api_url, endpoint)

    def pause_pollers(self) -> None:
        """Stop delivering queue messages (tests deliver by hand meanwhile); messages stay
        queued."""
        if self.pollers is not None:
            self.pollers.stop()
            self.pollers = None

    def resume_pollers(self) -> None:
        """Start the pollers again after `pause_pollers()`."""
        from assay_local.poller import start_pollers

        if self.pollers is None:
            self.pollers = start_pollers(
                self.app,
                endpoint_url=self.endpoint_url,
                region=self.settings.aws_default_region,
                workers=self._workers,
                wait_seconds=self._poll_wait_seconds,
                app_module=self._module,
            )

    def _serve_http(self) -> None:
        from http.server import BaseHTTPRequestHandler

        from chalice.config import Config
        from chalice.local import (
            ChaliceRequestHandler,
            LocalDevServer,
            LocalGateway,
            LocalGatewayException,
        )

        class RouteNotFound(LocalGatewayException):
            CODE = 404

        from chalicelib.telemetry import REQUEST_ID_HEADER, new_request_id

        class JsonErrorGateway(LocalGateway):
            """Chalice's LocalGateway, but an unknown route is a 404 in the API's error shape, as on
            AWS (`infra.gateway`). Chalice's own answers 403 and, when the request has an
            Authorization header, repeats that header - the caller's bearer token - in its
            message. Each request gets an id, as API Gateway gives one
            (`requestContext.requestId`)."""

            request_id = ""

            def handle_request(self, method: str, path: str, headers: Any, body: Any) -> Any:
                self.request_id = new_request_id()
                try:
                    self.event_converter._route_matcher.match_route(path)  # noqa: SLF001 - Chalice's matcher
                except ValueError:
                    from chalicelib.api.console import not_found_page

                    accept = next((v for k, v in headers.items() if k.lower() == "accept"), "")
                    shell = not_found_page(method, path, accept)
                    if shell is not None:  # a browser's navigation: the console's Not found
                        raise RouteNotFound(
                            {**shell.headers, REQUEST_ID_HEADER: self.request_id},
                            str(shell.body).encode(),
                        ) from None
                    raise RouteNotFound(
                        gateway_error_headers(self.request_id),
                        json.dumps(gateway_error_body(404, self.request_id)).encode(),
                    ) from None
                return super().handle_request(method, path, headers, body)

            def _generate_lambda_event(self, *args: Any, **kwargs: Any) -> Any:
                event = super()._generate_lambda_event(*args, **kwargs)
                event["requestContext"]["requestId"] = self.request_id
                return event

        class QuietHandler(ChaliceRequestHandler):
            disable_nagle_algorithm = True  # headers and body are separate sends (see motoserver)

            def __init__(
                self, request: Any, client_address: Any, server: Any, app_object: Any, config: Any
            ) -> None:
                # ChaliceRequestHandler's own __init__ builds a plain LocalGateway, then serves.
                self.local_gateway = JsonErrorGateway(app_object, config)
                BaseHTTPRequestHandler.__init__(self, request, client_address, server)

            def __getattr__(self, name: str) -> Any:
                if name.startswith(
                    "do_"
                ):  # a method no route has (TRACE, PROPFIND...): 405, our shape
                    return self._method_not_allowed
                raise AttributeError(name)

            def _generic_handle(self) -> None:
                # API Gateway refuses a body over 10 MiB itself, and a Content-Length that is not a
                # number; Chalice's handler would read the whole body or drop the connection.
                from chalicelib.api.common import GATEWAY_MAX_BODY_BYTES

                length = self.headers.get("content-length", "0").strip()
                status = (
                    400
                    if not (length.isascii() and length.isdigit())
                    else 413
                    if int(length) > GATEWAY_MAX_BODY_BYTES
                    else None
                )
                if status is None:
                    super()._generic_handle()
                    return
                self.close_connection = True  # the body is left unread
                request_id = new_request_id()
                self._send_http_response(
                    status,
                    gateway_error_headers(request_id),
                    json.dumps(gateway_error_body(status, request_id)),
                )

            # ChaliceRequestHandler binds these to its own _generic_handle.
            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = do_PATCH = do_OPTIONS = (
                _generic_handle
            )

            def _method_not_allowed(self) -> None:
                self._parse_payload()
                request_id = new_request_id()
                self._send_http_response(
                    405,
                    gateway_error_headers(request_id),
                    json.dumps(gateway_error_body(405, request_id)),
                )

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib's name
                log.debug("api: " + format, *args)

        _make_local_chalice(self.app)
        config = Config.create(
            chalice_stage="dev",
            app_name=self.app.app_name,
            chalice_app=self.app,
            lambda_timeout=API_LAMBDA_TIMEOUT_SECONDS,
        )
        # Port 0: the OS picks a free port; LocalDevServer's default server is threaded.
        try:
            http = LocalDevServer(
                self.app, config, "127.0.0.1", self._api_port, handler_cls=QuietHandler
            )
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise port_taken(self._api_port) from exc
            raise
        port = http.server.server_address[1]
        self.api_url = f"http://127.0.0.1:{port}"
        # Not LocalDevServer.serve_forever: it prints a banner with the requested port (0).
        # `stop` waits for the loop to see its shutdown, which it checks every poll interval
        # (socketserver's default, 0.5 s, was a quarter of a stop's wall).
        self._http_thread = threading.Thread(
            target=http.server.serve_forever,
            kwargs={"poll_interval": SERVE_POLL_SECONDS},
            name="api-http",
            daemon=True,
        )
        self._http_thread.start()
        self._http = http  # only now: shutdown() of a server that never served blocks forever

    @property
    def queues_outlive_it(self) -> bool:
        """True when the queues outlive this stack: an external endpoint (LocalStack, a moto
        server of one's own) or a moto whose state is saved (`moto_state`, `assay dev`). `stop`
        then waits for its pollers' receives to return (see there)."""
        return bool(self.endpoint_url) and (self.moto is None or self._moto_state is not None)

    @property
    def poll_wait_seconds(self) -> int:
        """The long-poll wait of each receive, in seconds: the longest `stop` waits for the
        receives in flight when `queues_outlive_it`."""
        return self._poll_wait_seconds

    def stop(self, *, grace_s: float | None = None) -> None:
        """Stop everything that was started, restore the environment; idempotent.

        Running handlers are left `grace_s` seconds to finish (default: the poll wait + 10 s),
        with no time to carry on with more (`SqsPoller.signal_stop`); the rest stops after.

        When the queues outlive the stack (`queues_outlive_it`), the stop also waits for every
        receive in flight to return (at most `poll_wait_seconds` after the handlers end): a long
        poll the server still holds when this process is gone takes the next message sent to its
        queue to a dead request, and that message stays hidden until its visibility timeout
        lapses (the case bound + 120 s), stalling the run it belongs to. A receive that returns
        after the stop hands its message back at once (`SqsPoller.stop`). A moto that stops with
        the stack and keeps nothing has no next message to lose, so that stop does not wait (the
        tests stop stacks many times).
        """
        if self.scheduler is not None:
            self.scheduler.stop()
        if self.pollers is not None:
            wait = self.queues_outlive_it
            if wait and grace_s is not None:
                grace_s = max(grace_s, self._poll_wait_seconds + 10.0)
            self.pollers.stop(grace_s, wait_for_receives=wait)
            self.pollers = None
        if self._http is not None:
            self._http.shutdown()
            self._http.server.server_close()
            self._http = None
        if self.moto is not None:
            self.moto.stop()
        gc.unfreeze()  # what became garbage since is collected again
        if self._saved_env:
            self._restore_env()
            try:
                reset_process_state()
            except Exception:  # noqa: BLE001 - stopping must not fail on a rebuild elsewhere
                log.warning("resetting process state after stop failed", exc_info=True)

    def __enter__(self) -> EmbeddedStack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
