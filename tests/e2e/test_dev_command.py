"""`assay dev` as a person runs it (issue 13 scope 4): the real command in a subprocess, on
127.0.0.1 ports of its own and a temporary data folder.

What a user made survives a restart (datasets and their cases, secrets, recordings, the token the
first start printed); a run in flight when the stack stops finishes after the next start;
`--fresh` starts empty; a `kill -9` of the command loses nothing (its moto process saves as it
sees the command gone); an endpoint that does not answer, a port in use and a saved state that
cannot be restored are each one line and a non-zero exit. Every wait is on state (a line printed,
the API answering, a run's progress), with a hang guard only.
"""

from __future__ import annotations

import inspect
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay_local.stack import EmbeddedStack
from tests.support.agents import TEST_GUARD_S
from tests.support.e2e import Api, cases, sleepy_spec, wait_for

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A port of 127.0.0.1 nothing listens on now (the OS's pick)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without what an embedded stack of the test session may have
    set in it (AWS endpoint and keys, assay and eval settings), plus `extra`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.upper().startswith(("AWS_", "ASSAY_", "EVAL_", "EVALUATION_"))
    }
    env["PYTHONUNBUFFERED"] = "1"
    return env | extra


def dev_command(data: Path, *args: str | int) -> list[str]:
    return [sys.executable, "-m", "assay_local.cli", "dev", "--data", str(data), *map(str, args)]


class Dev:
    """A running `assay dev`: its output lines as they come, the exports it printed."""

    def __init__(self, data: Path, *args: str | int, env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            dev_command(data, *args),
            cwd=REPO,
            env=env or clean_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self.errors: list[str] = []
        self._changed = threading.Condition()
        for stream, into in ((self.process.stdout, self.lines), (self.process.stderr, self.errors)):
            threading.Thread(target=self._read, args=(stream, into), daemon=True).start()

    def _read(self, stream: Any, into: list[str]) -> None:
        for line in stream:
            with self._changed:
                into.append(line.rstrip("\n"))
                self._changed.notify_all()

    def wait_line(self, starting: str) -> str:
        """The first output line starting with `starting`, once printed."""

        def found() -> str | None:
            hits = [line for line in self.lines if line.startswith(starting)]
            assert hits or self.process.poll() is None, (
                f"assay dev ended ({self.process.returncode}) without printing {starting!r}: "
                f"{self.lines} {self.errors}"
            )
            return hits[0] if hits else None

        return wait_for(found, what=f"assay dev to print {starting!r}")

    def ready(self) -> Dev:
        """Wait until it printed everything and its API answers."""
        self.wait_line("# Ctrl-C")
        wait_for(self._answers, what="the API to answer")
        return self

    def _answers(self) -> bool:
        import httpx

        try:
            return (
                httpx.get(f"{self.export('ASSAY_URL')}/openapi.json", timeout=5).status_code == 200
            )
        except httpx.HTTPError:
            return False

    def export(self, name: str) -> str:
        line = self.wait_line(f"export {name}=")
        return line.split(" ", 1)[1].split(" ", 1)[0].split("=", 1)[1]

    def api(self, token: str | None = None) -> Api:
        """A client of its API with `token` (default: the one it printed)."""
        if token is None:
            token = self.export("ASSAY_TOKEN")
        return Api(self.export("ASSAY_URL"), "org_default", "dev", token)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Send `sig` and wait for the command to end; returns its exit status (a stop that
        does not end fails the test with what the command said last)."""
        self.process.send_signal(sig)
        try:
            return self.process.wait(timeout=TEST_GUARD_S)
        except subprocess.TimeoutExpired:
            said = "\n".join([*self.lines[-10:], *self.errors[-20:]])
            raise AssertionError(
                f"assay dev did not stop within {TEST_GUARD_S} s:\n{said}"
            ) from None

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=TEST_GUARD_S)


@pytest.fixture
def ports() -> tuple[int, int]:
    """(API port, moto port): free ports of 127.0.0.1, never the defaults (parallel runs)."""
    return free_port(), free_port()


@pytest.fixture
def running() -> Iterator[list[Dev]]:
    """Every `Dev` a test starts is killed at its end, whatever happened."""
    started: list[Dev] = []
    yield started
    for dev in started:
        dev.kill()


def start(
    running: list[Dev],
    data: Path,
    ports: tuple[int, int],
    *args: str,
    env: dict[str, str] | None = None,
) -> Dev:
    dev = Dev(data, "--port", ports[0], "--aws-port", ports[1], *args, env=env)
    running.append(dev)
    return dev.ready()


def one_line_refusal(data: Path, *args: str | int, env: dict[str, str] | None = None) -> str:
    """Run `assay dev` expecting it to refuse to start: exit 2, nothing on stdout, one line on
    stderr (returned)."""
    done = subprocess.run(
        dev_command(data, *args),
        cwd=REPO,
        env=env or clean_env(),
        capture_output=True,
        text=True,
        timeout=TEST_GUARD_S,
    )
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("assay dev: ")
    return lines[0]


def make_things(api: Api) -> None:
    """A dataset with two cases, a secret and a recording (DynamoDB, Secrets Manager, S3)."""
    api.ok("POST", "/api/v1/datasets", json={"name": "Arithmetic", "dataset_id": "arith"})
    api.ok(
        "POST",
        "/api/v1/datasets/arith/versions",
        json={"scoring": {"required": ["numeric_answer"]}, "cases": cases(2)},
    )
    api.ok("PUT", "/api/v1/secrets/openai", json={"value": "sk-test-value-0123456789"})
    api.ok(
        "POST",
        "/api/v1/recordings",
        json={"recording_id": "arith-42", "content": '{"case_id": "c000", "answer": "42"}\n'},
    )


def things_there(api: Api) -> None:
    assert api.ok("GET", "/api/v1/datasets/arith")["dataset_id"] == "arith"
    listed = api.ok("GET", "/api/v1/datasets/arith/versions/1/cases")
    assert sorted(c["case_id"] for c in listed["cases"]) == ["c000", "c001"]
    assert [s["name"] for s in api.ok("GET", "/api/v1/secrets")["secrets"]] == ["openai"]
    recordings = api.ok("GET", "/api/v1/recordings")["recordings"]
    assert [r["recording_id"] for r in recordings] == ["arith-42"]


def test_what_a_user_made_survives_a_restart_and_fresh_starts_empty(
    tmp_path: Path, ports: tuple[int, int], running: list[Dev]
) -> None:
    data = tmp_path / "dev"
    first = start(running, data, ports)
    assert first.export("ASSAY_URL") == f"http://127.0.0.1:{ports[0]}"
    assert first.export("AWS_ENDPOINT_URL") == f"http://127.0.0.1:{ports[1]}"
    token = first.export("ASSAY_TOKEN")
    # the console's address, signed in with that token in its fragment, answers the console
    console = first.wait_line("assay dev: console on ").rsplit(" ", 1)[1]
    assert console == f"http://127.0.0.1:{ports[0]}/#token={token}"
    import httpx

    page = httpx.get(console.split("#", 1)[0], timeout=30)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    make_things(first.api())
    # `assay token` in a shell that ran the printed export signs with the folder's secret.
    secret_export = first.wait_line("export ASSAY_JWT_SECRET=")
    signed = subprocess.run(
        ["bash", "-c", f'{secret_export} && exec "$0" -m assay_local.cli token', sys.executable],
        cwd=REPO,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=TEST_GUARD_S,
    ).stdout.strip()
    assert signed.count(".") == 2, signed  # a JWT
    assert first.stop() == 0
    assert any(line.startswith("assay dev: stopped; state ") for line in first.lines)

    again = start(running, data, ports)
    assert again.wait_line("assay dev: state in ").endswith(")")
    assert "restored" in again.wait_line("assay dev: state in ")
    # The token the first start printed still works: the signing secret is the folder's.
    things_there(again.api(token))
    things_there(again.api(signed))
    assert again.stop() == 0

    fresh = start(running, data, ports, "--fresh")
    said = fresh.wait_line("assay dev: --fresh: starting empty")
    assert str(data / "moto-state.old") in said
    status, body = fresh.api(token).call("GET", "/api/v1/datasets/arith")
    assert status == 404, body
    assert fresh.api(token).ok("GET", "/api/v1/secrets")["secrets"] == []
    assert fresh.stop() == 0


def test_a_run_in_flight_when_the_stack_stops_finishes_after_the_next_start(
    tmp_path: Path, ports: tuple[int, int], running: list[Dev]
) -> None:
    data = tmp_path / "dev"
    # A case bound of 30 s (not 600): the stop waits at most that for the cases in flight, and a
    # case cut short comes back once its message's visibility (the bound + 120 s) lapses.
    env = clean_env(EVALUATION_CASE_TIMEOUT_SECONDS="30")
    first = start(running, data, ports, env=env)
    api = first.api()
    api.ok("POST", "/api/v1/datasets", json={"name": "Many", "dataset_id": "many"})
    api.ok(
        "POST",
        "/api/v1/datasets/many/versions",
        json={"scoring": {"required": ["numeric_answer"]}, "cases": cases(30)},
    )
    # 30 cases of 0.5 s, three at a time: at least 5 s of answering, stopped after the first.
    agent = api.agent(sleepy_spec(sleep_ms=500))
    run_id = api.start(agent, "many")["run_id"]
    before = api.wait(run_id, until=lambda p: p["recorded"] >= 1)
    assert before["status"] == "running" and before["recorded"] < before["expected"]
    assert first.stop() == 0

    again = start(running, data, ports, env=env)
    after = again.api().wait(run_id)
    assert after["status"] == "completed", after
    assert after["recorded"] == after["expected"]
    run = again.api().ok("GET", f"/api/v1/eval-runs/{run_id}")
    quality = run["summaries"]["candidate"]["quality"]
    assert quality["pass_rate"] == 1.0, quality
    assert again.stop() == 0


def test_a_killed_assay_dev_loses_nothing_its_moto_saves_as_it_goes(
    tmp_path: Path, ports: tuple[int, int], running: list[Dev]
) -> None:
    data = tmp_path / "dev"
    first = start(running, data, ports)
    make_things(first.api())
    first.stop(signal.SIGKILL)

    # The next start waits for the folder's lock, which the old moto process holds while it
    # saves, then finds everything.
    again = start(running, data, ports)
    things_there(again.api())
    assert again.stop() == 0


def test_an_aws_endpoint_url_that_does_not_answer_is_one_line(tmp_path: Path) -> None:
    closed = free_port()
    env = clean_env(AWS_ENDPOINT_URL=f"http://127.0.0.1:{closed}")
    line = one_line_refusal(tmp_path / "dev", "--port", free_port(), env=env)
    assert f"AWS_ENDPOINT_URL=http://127.0.0.1:{closed} does not answer" in line
    assert "unset AWS_ENDPOINT_URL" in line and "localstack-compose.yml" in line
    assert not (tmp_path / "dev").exists()  # checked before anything else

    line = one_line_refusal(
        tmp_path / "dev", "--localstack", "--endpoint", f"http://127.0.0.1:{closed}"
    )
    assert "--localstack" in line and "does not answer" in line
    assert "docker compose -f localstack-compose.yml up -d" in line


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ("EVAL_RERUNS=9", "assay dev: EVAL_RERUNS=9: must be 0-5"),
        (
            "ASSAY_ALLOW_PRIVATE_NETWORK=maybe",
            "assay dev: ASSAY_ALLOW_PRIVATE_NETWORK=maybe: must be true",
        ),
    ],
)
def test_a_bad_setting_in_the_shell_is_one_line_naming_its_variable(
    tmp_path: Path, setting: str, said: str
) -> None:
    name, _, value = setting.partition("=")
    line = one_line_refusal(tmp_path / "dev", "--port", 0, env=clean_env(**{name: value}))
    assert line.startswith(said), line
    assert "Traceback" not in line and "eval_reruns" not in line
    assert not (tmp_path / "dev").exists()  # checked before anything else


def test_an_aws_endpoint_url_of_another_assay_devs_moto_is_refused(tmp_path: Path) -> None:
    from assay_local.motoserver import start_moto_process

    other = start_moto_process()  # what an earlier assay dev printed and the shell kept
    try:
        env = clean_env(AWS_ENDPOINT_URL=other.url)
        line = one_line_refusal(tmp_path / "dev", "--port", free_port(), env=env)
        assert f"AWS_ENDPOINT_URL={other.url} is the moto server of another assay dev" in line
        assert "unset AWS_ENDPOINT_URL" in line and "--endpoint" in line
    finally:
        other.stop()


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = int(taken.getsockname()[1])
        line = one_line_refusal(tmp_path / "dev", "--port", port, "--aws-port", free_port())
        assert f"port {port} on 127.0.0.1 is in use" in line and "--port" in line
        assert not (tmp_path / "dev").exists()  # a refused start leaves no folder behind
        line = one_line_refusal(tmp_path / "dev", "--port", free_port(), "--aws-port", port)
        assert f"port {port} on 127.0.0.1 is in use" in line and "--aws-port" in line


def test_a_saved_state_that_cannot_be_read_is_one_line_naming_fresh(tmp_path: Path) -> None:
    data = tmp_path / "dev"
    data.mkdir()
    (data / "moto-state").write_bytes(b"ASSAY-MOTO-STATE 1\n{not json\n")
    line = one_line_refusal(data, "--port", free_port(), "--aws-port", free_port())
    assert "is damaged" in line and "--fresh" in line
    assert (data / "moto-state").read_bytes() == b"ASSAY-MOTO-STATE 1\n{not json\n"


def test_localstack_mode_uses_the_endpoint_given_instead_of_moto(
    tmp_path: Path, running: list[Dev]
) -> None:
    import boto3

    from assay_local.motoserver import start_moto_process

    external = start_moto_process()  # stands in for LocalStack: any AWS endpoint
    try:
        dev = Dev(
            tmp_path / "dev", "--port", free_port(), "--localstack", "--endpoint", external.url
        )
        running.append(dev.ready())
        assert external.url in dev.wait_line("assay dev: AWS at ")
        assert dev.export("AWS_ENDPOINT_URL") == external.url
        make_things(dev.api())
        dynamodb = boto3.client(
            "dynamodb",
            endpoint_url=external.url,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        assert any(name.endswith("datasets") for name in dynamodb.list_tables()["TableNames"])
        assert dev.stop() == 0
        line = one_line_refusal(
            tmp_path / "dev", "--localstack", "--endpoint", external.url, "--fresh"
        )
        assert "--fresh" in line and "LocalStack keeps its own" in line
    finally:
        external.stop()


def receives_waiting(moto: Any) -> int:
    """ReceiveMessage requests a moto server of ours holds now, while no queue has held a message:
    every receive is counted as it arrives, and again (`EMPTY_RECEIVE_KEY`) as it answers empty."""
    from assay_local.moto_http import EMPTY_RECEIVE_KEY

    counts = moto.requests()
    return counts.get("sqs.ReceiveMessage", 0) - counts.get(EMPTY_RECEIVE_KEY, 0)


def poller_threads(case_workers: int) -> int:
    """How many receives `assay dev --workers case_workers` keeps in flight: one per poller
    thread, `case_workers` on the case-task queue and the stack's side workers on each other."""
    import app
    from assay_local.poller import sqs_event_sources
    from chalicelib import names

    side = inspect.signature(EmbeddedStack).parameters["side_workers"].default
    queues = [source.queue for source in sqs_event_sources(app.app)]
    return sum(case_workers if q == names.CASE_TASKS_QUEUE else side for q in queues)


def test_a_stop_leaves_no_receive_behind_on_an_external_endpoint(
    tmp_path: Path, running: list[Dev]
) -> None:
    """A long poll the endpoint still held after `assay dev` exited took the next message sent
    to its queue to a dead request, hidden until its visibility lapsed (a run started after a
    restart stalled ~2 minutes): the stop waits for its receives to return."""
    import boto3

    from assay_local.motoserver import start_moto_process
    from chalicelib import names

    external = start_moto_process()  # an endpoint that outlives the stack, as LocalStack does
    try:
        dev = Dev(tmp_path / "dev", "--port", free_port(), "--endpoint", external.url)
        running.append(dev.ready())
        threads = poller_threads(case_workers=8)
        wait_for(
            lambda: receives_waiting(external) == threads,
            what=f"the {threads} pollers' long polls to reach the endpoint",
        )
        assert dev.stop() == 0
        assert any("waiting up to 5 s for the queue receives" in line for line in dev.lines)
        assert receives_waiting(external) == 0  # none is left behind at the endpoint

        sqs = boto3.client(
            "sqs",
            endpoint_url=external.url,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        url = sqs.get_queue_url(QueueName=names.CASE_TASKS_QUEUE)["QueueUrl"]
        sqs.send_message(QueueUrl=url, MessageBody="sent after the stop")
        hidden = sqs.get_queue_attributes(
            QueueUrl=url, AttributeNames=["ApproximateNumberOfMessagesNotVisible"]
        )["Attributes"]["ApproximateNumberOfMessagesNotVisible"]
        assert hidden == "0"
        # The next consumer (the next start's poller) gets it at once, not after its visibility.
        got = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0, MaxNumberOfMessages=1)
        assert [m["Body"] for m in got.get("Messages", [])] == ["sent after the stop"]
    finally:
        external.stop()
