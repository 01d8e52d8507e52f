"""Logs and metrics of a deployed function (issue 13 scope 6), without AWS.

A deployed stage logs one JSON object per line through Powertools (and no longer drops `info`),
with the request id as `correlation_id` and the task's ids on a worker's lines; elsewhere logging
is left as the process set it. Metrics are CloudWatch EMF lines, checked as the JSON they are (no
CloudWatch call is made).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from chalicelib import telemetry
from chalicelib.adapters.metrics import EmfMetrics, NoMetrics
from chalicelib.config import Settings
from chalicelib.services.ports.telemetry import UNITS, Metric

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "AWS_LAMBDA"))}
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


TWO_INVOCATIONS = """
import logging, types
from chalicelib import telemetry
from chalicelib.config import get_settings
log = logging.getLogger("chalicelib.services.run_case")
ctx = types.SimpleNamespace(aws_request_id="lambda-req-1")
with telemetry.invocation(get_settings(), ctx, correlation_id="api-req-1"):
    telemetry.bind(run_id="run_1", case_id="q7", attempt=1)
    log.info("recorded %s", "q7")
with telemetry.invocation(get_settings(), types.SimpleNamespace(aws_request_id="lambda-req-2")):
    log.warning("second")
"""


def test_a_deployed_function_logs_json_lines_with_its_request_and_task_ids():
    done = _python(
        TWO_INVOCATIONS,
        AWS_LAMBDA_FUNCTION_NAME="assay-dev-handle_case_task",
        ASSAY_JWT_SECRET="s" * 40,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    first, second = (json.loads(line) for line in done.stdout.splitlines())
    assert first["level"] == "INFO"  # Lambda's root logger would have dropped it
    assert first["message"] == "recorded q7"
    assert first["service"] == "assay"
    assert first["location"].startswith("<module>:")
    assert (first["correlation_id"], first["function_request_id"]) == ("api-req-1", "lambda-req-1")
    assert (first["run_id"], first["case_id"], first["attempt"]) == ("run_1", "q7", 1)
    assert first["cold_start"] is True
    # The next invocation starts from no key of the one before.
    assert second["message"] == "second" and second["cold_start"] is False
    assert second["function_request_id"] == "lambda-req-2"
    assert not {"run_id", "case_id", "correlation_id"} & set(second)
    assert done.stderr == ""  # nothing printed twice by Lambda's (here Python's) root handler


def test_a_local_process_logs_as_it_did_and_never_imports_powertools():
    code = TWO_INVOCATIONS + (
        "import sys; print('powertools' if 'aws_lambda_powertools' in sys.modules else 'none'); "
        "print(logging.getLogger('chalicelib').handlers)"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["none", "[]"]
    assert done.stderr == "second\n"  # Python's last-resort handler: warnings, as text, as before


def test_json_logs_can_be_asked_for_outside_lambda_and_given_back():
    import io
    import logging

    stream = io.StringIO()
    settings = Settings(assay_log_format="json")
    try:
        assert telemetry.configure_logging(settings, stream=stream)
        with telemetry.keys(run_id="run_9"):
            logging.getLogger("chalicelib.workers").error("boom", extra={"case_id": "c1"})
    finally:
        telemetry.reset_logging()
    line = json.loads(stream.getvalue())
    assert (line["level"], line["message"], line["run_id"], line["case_id"]) == (
        "ERROR",
        "boom",
        "run_9",
        "c1",
    )
    assert logging.getLogger("chalicelib").handlers == []
    assert not telemetry.configure_logging(Settings())  # text: nothing configured


def test_the_keys_of_one_context_stay_out_of_another():
    import contextvars

    def work() -> None:  # in a context of its own, as each thread and invocation has
        with telemetry.keys(run_id="a"):
            telemetry.bind(case_id="c1")
            assert dict(telemetry.bound()) == {"run_id": "a", "case_id": "c1"}
            telemetry.bind(case_id=None)
            assert dict(telemetry.bound()) == {"run_id": "a"}
        assert dict(telemetry.bound()) == {}
        with telemetry.invocation(Settings(), None, correlation_id="r1"):
            telemetry.bind(run_id="b")
        assert dict(telemetry.bound()) == {}  # an invocation leaves nothing behind

    contextvars.Context().run(work)


# --- metrics ---------------------------------------------------------------------------------


def test_emf_lines_sum_what_an_invocation_counted_by_dimensions():
    lines: list[str] = []
    metrics = EmfMetrics("assay", "staging", write=lines.append)
    metrics.flush()
    assert lines == []  # nothing counted, nothing written
    metrics.add(Metric.ATTEMPTS, state="passed")
    metrics.add(Metric.ATTEMPTS, state="passed")
    metrics.add(Metric.COST_USD, 0.125, state="passed")
    metrics.add(Metric.COST_USD, 0.5, state="passed")
    metrics.add(Metric.ATTEMPTS, state="incomplete")
    metrics.add(Metric.RUNS_STARTED)
    metrics.flush()
    blobs = [json.loads(line) for line in lines]
    by_dims = {tuple(b["_aws"]["CloudWatchMetrics"][0]["Dimensions"][0]): b for b in blobs}
    passed = next(b for b in blobs if b.get("state") == "passed")
    assert passed["Attempts"] == [2.0] and passed["CostUSD"] == [0.625]
    assert passed["service"] == "staging"
    envelope = passed["_aws"]["CloudWatchMetrics"][0]
    assert envelope["Namespace"] == "assay"
    assert sorted(envelope["Dimensions"][0]) == ["service", "state"]
    assert {m["Name"]: m["Unit"] for m in envelope["Metrics"]} == {
        "Attempts": UNITS[Metric.ATTEMPTS],
        "CostUSD": "None",
    }
    assert isinstance(passed["_aws"]["Timestamp"], int)
    incomplete = next(b for b in blobs if b.get("state") == "incomplete")
    assert incomplete["Attempts"] == [1.0] and "CostUSD" not in incomplete
    started = by_dims[("service",)]
    assert started["RunsStarted"] == [1.0] and "state" not in started
    assert len(blobs) == 3
    lines.clear()
    metrics.flush()
    assert lines == []  # flushed figures are not written twice


def test_no_metrics_writes_nothing(capsys):
    metrics = NoMetrics()
    metrics.add(Metric.RUNS_STARTED)
    metrics.flush()
    assert capsys.readouterr() == ("", "")


def test_a_deployed_stage_ships_emf_and_a_local_one_nothing():
    from chalicelib.bootstrap import Container
    from tests.support.models import models_kept

    with models_kept():  # a container points the models at its stack's tables
        deployed = Container(
            Settings(aws_lambda_function_name="f", assay_resource_prefix="staging-")
        )
        assert isinstance(deployed.metrics, EmfMetrics) and deployed.metrics.service == "staging"
        assert isinstance(Container(Settings()).metrics, NoMetrics)
        assert isinstance(Container(Settings(assay_metrics="emf")).metrics, EmfMetrics)
        assert isinstance(
            Container(Settings(aws_lambda_function_name="f", assay_metrics="off")).metrics,
            NoMetrics,
        )
