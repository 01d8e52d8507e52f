"""Recordings with tool calls, and eval runs that answer their agents' tool calls from them
(docs/guides/tools.md, docs/guides/secrets-and-recordings.md): the upload's check of `calls`,
`from_recordings` / `recording_id` / `live_reads` on a start, an estimate and a suite, what each
call of an attempt came to, a recording made from a run, a recorded agent's divergent case, and
baselines matched only under the same replay.

The agent is `tests.support.agents.tool_user`, a `python` agent that calls `lookup {"case": <case
id>}` through the attempt's tools and answers what it returned (`held: <status>` when nothing).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from chalicelib.domain.records import Connection
from chalicelib.services.answering import DIVERGENT_REASON
from tests.e2e.conftest import cases, sleepy_spec
from tests.support.agents import tool_user_spec

CASES = [
    {"case_id": "c1", "input": "first", "reference": "42"},
    {"case_id": "c2", "input": "second", "reference": "43"},
    {"case_id": "c3", "input": "third", "reference": "44"},
]


def jsonl(*lines: dict[str, Any]) -> str:
    return "".join(json.dumps(line) + "\n" for line in lines)


RECORDED = jsonl(
    # c1's lookup is recorded with the arguments the agent sends: replayed.
    {
        "case_id": "c1",
        "answer": "42",
        "calls": [{"name": "lookup", "arguments": {"case": "c1"}, "result": 42}],
    },
    # c2's is recorded with other arguments: the agent's call diverges.
    {
        "case_id": "c2",
        "answer": "43",
        "calls": [{"name": "lookup", "arguments": {"case": "other"}, "result": 43}],
    },
    # c3 has no line: it runs isolated without a recording.
)


def tool_agent(api, publish: int = 0, **options: Any) -> str:
    """An agent of `tool_user` (its `lookup` runs on the connection `kb`). A spec is saved, and
    its draft started, only while its connections exist: an organization without `kb` gets one
    on a port nothing serves (a private address, which its calls may not reach)."""
    status, _ = api.call("GET", "/api/v1/connections/kb")
    if status != 200:
        api.ok(
            "POST",
            "/api/v1/connections",
            json={"connection_id": "kb", "kind": "http", "url": "http://127.0.0.1:9"},
        )
    return api.agent(tool_user_spec(**options), publish=publish)


def upload(api, recording_id: str, content: str) -> dict[str, Any]:
    return api.ok(
        "POST", "/api/v1/recordings", json={"recording_id": recording_id, "content": content}
    )


def results_by_case(api, run_id: str) -> dict[str, dict[str, Any]]:
    run = api.ok("GET", f"/api/v1/eval-runs/{run_id}")
    return {r["case_id"]: r for r in run["results"] if r["arm_id"] == "candidate"}


def statuses(result: dict[str, Any]) -> list[str]:
    return [call["status"] for call in result["calls"]]


class _Lookup(BaseHTTPRequestHandler):
    """A `kb` connection on 127.0.0.1: `POST /lookup {"case"}` answers `{"found": <case>}`."""

    seen: list[dict[str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
        type(self).seen.append({"path": self.path, "body": body})
        data = json.dumps(f"live {body.get('case')}").encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def kb(api, container, operator) -> Iterator[type[_Lookup]]:
    """The organization's connection `kb`, served on 127.0.0.1 (private addresses allowed for
    this test only)."""
    operator(assay_allow_private_network=True)
    handler = type("Lookup", (_Lookup,), {"seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    container.connections.create(
        Connection(
            org_id=api.org_id,
            connection_id="kb",
            kind="http",
            url=f"http://127.0.0.1:{server.server_address[1]}",
            created_at=datetime.now(UTC).isoformat(),
        )
    )
    yield handler
    server.shutdown()
    server.server_close()


# --- the recording's calls, checked on upload ---------------------------------------------------


@pytest.mark.parametrize(
    ("calls", "message"),
    [
        ("lookup", "content line 2: calls must be a list of calls"),
        (["lookup"], "content line 2: calls[0] must be an object"),
        ([{"arguments": {}}], "content line 2: calls[0].name must be a non-empty string"),
        (
            [{"name": "lookup", "arguments": {}}, {"name": "lookup", "arguments": "SECRET-ARGS"}],
            "content line 2: calls[1].arguments must be an object",
        ),
    ],
)
def test_an_upload_whose_calls_are_malformed_is_refused_naming_the_line_never_its_content(
    api, calls, message
):
    content = jsonl(
        {"case_id": "c1", "answer": "42"}, {"case_id": "c2", "answer": "x", "calls": calls}
    )
    status, body = api.call(
        "POST", "/api/v1/recordings", json={"recording_id": "bad", "content": content}
    )
    assert status == 400, body
    assert body["error"]["field"] == "content"
    assert body["error"]["message"] == message
    assert "SECRET-ARGS" not in json.dumps(body)


def test_an_upload_with_calls_and_their_results_is_kept(api):
    meta = upload(api, "with-calls", RECORDED)
    assert (meta["recording_id"], meta["lines"]) == ("with-calls", 2)


# --- the options on a start and an estimate ------------------------------------------------------


def test_the_replay_options_are_checked_on_a_start_and_an_estimate(api, new_api):
    agent = tool_agent(api)
    ds = api.dataset(CASES)
    new_api().ok(
        "POST",
        "/api/v1/recordings",
        json={"recording_id": "theirs", "content": RECORDED},
    )
    for path in (f"/api/v1/agents/{agent}/eval-runs", f"/api/v1/agents/{agent}/eval-runs/estimate"):
        for body, status, field, words in (
            ({"from_recordings": True}, 400, "recording_id", "from_recordings needs recording_id"),
            ({"recording_id": "rec-1"}, 400, "recording_id", "only with from_recordings: true"),
            ({"from_recordings": True, "recording_id": "nope"}, 404, "recording_id", "nope"),
            # another organization's recording of that id is no recording of this one
            ({"from_recordings": True, "recording_id": "theirs"}, 404, "recording_id", "theirs"),
            ({"from_recordings": "yes", "recording_id": "x"}, 400, "from_recordings", ""),
            ({"replay": True}, 400, "replay", ""),
        ):
            got, out = api.call("POST", path, json={"dataset_id": ds, "candidate": "draft", **body})
            assert got == status, (path, body, out)
            assert out["error"]["field"] == field, (path, body, out)
            assert words in out["error"]["message"]
    assert api.ok("GET", f"/api/v1/agents/{agent}/eval-runs")["runs"] == []  # nothing started


def test_an_estimate_says_how_the_tool_calls_will_be_answered(api):
    agent = tool_agent(api)
    ds = api.dataset(CASES)
    upload(api, "rec-1", RECORDED)
    path = f"/api/v1/agents/{agent}/eval-runs/estimate"
    plain = api.ok("POST", path, json={"dataset_id": ds, "candidate": "draft"})
    assert plain["replay"] is None and plain["arms"][0]["replay"] is None
    # live_reads alone is accepted, and changes nothing without from_recordings
    alone = api.ok("POST", path, json={"dataset_id": ds, "candidate": "draft", "live_reads": True})
    assert alone["replay"] is None
    est = api.ok(
        "POST",
        path,
        json={
            "dataset_id": ds,
            "candidate": "draft",
            "from_recordings": True,
            "recording_id": "rec-1",
            "live_reads": True,
        },
    )
    label = "from recording rec-1, live reads"
    assert est["replay"] == {"recording_id": "rec-1", "live_reads": True, "label": label}
    assert est["arms"][0]["replay"]["label"] == label


# --- what each call of a run from recordings came to ---------------------------------------------


def test_a_run_from_recordings_replays_recorded_calls_and_holds_the_others(api):
    # a published version whose connection went since (a draft naming it is refused at its start)
    agent = tool_agent(api, publish=1, ticket=True)
    api.ok("DELETE", "/api/v1/connections/kb")
    ds = api.dataset(CASES)
    upload(api, "rec-1", RECORDED)
    run = api.start(agent, ds, candidate="version", from_recordings=True, recording_id="rec-1")
    api.wait(run["run_id"])
    got = results_by_case(api, run["run_id"])

    c1 = got["c1"]
    assert statuses(c1) == ["replayed", "divergent"]  # the ticket was never recorded: held
    assert c1["calls"][0]["result"] == 42 and c1["answer"] == "42" and c1["state"] == "passed"
    assert "no unused call of 'file_ticket'" in c1["calls"][1]["reason"]
    c2 = got["c2"]
    assert statuses(c2) == ["divergent", "divergent"]  # other arguments than recorded
    assert c2["answer"] == "held: divergent" and c2["state"] == "failed"
    # c3 has no line: it runs isolated without one. `lookup` is a read on `kb`, which this
    # organization has no connection of, so nothing is called; the write is blocked.
    c3 = got["c3"]
    assert statuses(c3) == ["blocked", "blocked"]
    assert "does not exist" in c3["calls"][0]["reason"]

    view = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    label = "from recording rec-1"
    assert view["replay"]["label"] == label
    assert [a["replay"]["label"] for a in view["arms"]] == [label]


def test_live_reads_run_a_read_the_recording_lacks_and_never_a_write(api, kb):
    agent = tool_agent(api, ticket=True)
    ds = api.dataset(CASES)
    upload(api, "rec-1", RECORDED)
    run = api.start(agent, ds, from_recordings=True, recording_id="rec-1", live_reads=True)
    api.wait(run["run_id"])
    got = results_by_case(api, run["run_id"])
    assert statuses(got["c1"]) == ["replayed", "divergent"]
    assert statuses(got["c2"]) == ["executed", "divergent"]  # the read ran live; the write held
    assert got["c2"]["calls"][0]["connection_id"] == "kb"
    assert got["c2"]["answer"] == "live c2"
    # c3 runs without a recording: its read on `kb` runs as any read does, the write is blocked
    assert statuses(got["c3"]) == ["executed", "blocked"]
    assert sorted(seen["body"]["case"] for seen in kb.seen) == ["c2", "c3"]
    assert all(seen["path"] == "/lookup" for seen in kb.seen)  # never file_ticket
    view = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    assert view["arms"][0]["replay"]["label"] == "from recording rec-1, live reads"


# --- a recording made from a run ------------------------------------------------------------------


def test_a_recording_a_running_run_answers_from_cannot_be_deleted(api):
    from tests.support.agents import held_spec, hold

    ds = api.dataset(cases(1))
    upload(api, "in-use", jsonl({"case_id": "c000", "answer": "42"}))
    gate = hold(f"in-use-{api.org_id}")
    run = api.start(
        api.agent(held_spec(gate.name)), ds, from_recordings=True, recording_id="in-use"
    )
    try:
        status, body = api.call("DELETE", "/api/v1/recordings/in-use")
        assert status == 409, body
        assert body["error"]["field"] == "recording_id"
        assert run["run_id"] in body["error"]["message"]
    finally:
        gate.open()
    api.wait(run["run_id"])
    assert api.call("DELETE", "/api/v1/recordings/in-use")[0] == 204


def test_a_recording_from_a_run_replays_the_calls_it_made(api, kb):
    agent = tool_agent(api)
    ds = api.dataset(CASES)
    live = api.start(agent, ds)  # no recording: each lookup is a read, run on `kb`
    api.wait(live["run_id"])
    assert all(statuses(r) == ["executed"] for r in results_by_case(api, live["run_id"]).values())

    made = api.call(
        "POST", f"/api/v1/recordings/from-run/{live['run_id']}", json={"recording_id": "from-live"}
    )
    assert made[0] == 201, made
    assert made[1]["recording_id"] == "from-live" and made[1]["lines"] == 3
    # the same id with the same content again is a no-op, as an upload's is
    again = api.call(
        "POST", f"/api/v1/recordings/from-run/{live['run_id']}", json={"recording_id": "from-live"}
    )
    assert again[0] == 200, again

    served = len(kb.seen)
    replay = api.start(agent, ds, from_recordings=True, recording_id="from-live")
    api.wait(replay["run_id"])
    got = results_by_case(api, replay["run_id"])
    assert all(statuses(r) == ["replayed"] for r in got.values())
    assert {cid: r["answer"] for cid, r in got.items()} == {
        "c1": "live c1",
        "c2": "live c2",
        "c3": "live c3",
    }
    assert len(kb.seen) == served  # nothing was called: every result came from the recording


def test_a_recording_from_a_run_is_refused_for_a_run_not_completed_or_not_the_callers(api, new_api):
    from tests.support.agents import held_spec, hold

    ds = api.dataset(cases(1))
    gate = hold(f"from-run-{api.org_id}")
    running = api.start(api.agent(held_spec(gate.name)), ds)
    try:
        status, body = api.call(
            "POST",
            f"/api/v1/recordings/from-run/{running['run_id']}",
            json={"recording_id": "too-soon"},
        )
        assert status == 409, body
        assert body["error"]["field"] == "run_id"
        assert "only a completed run" in body["error"]["message"]
    finally:
        gate.open()
    api.wait(running["run_id"])

    other = new_api()
    status, body = other.call(
        "POST", f"/api/v1/recordings/from-run/{running['run_id']}", json={"recording_id": "mine"}
    )
    assert status == 404 and body["error"]["field"] == "run_id", body
    # an arm the run does not have, and an id that is taken by other content
    status, body = api.call(
        "POST",
        f"/api/v1/recordings/from-run/{running['run_id']}",
        json={"recording_id": "x", "arm_id": "baseline"},
    )
    assert status == 404 and body["error"]["field"] == "arm_id", body
    upload(api, "taken", jsonl({"case_id": "c000", "answer": "other"}))
    status, body = api.call(
        "POST", f"/api/v1/recordings/from-run/{running['run_id']}", json={"recording_id": "taken"}
    )
    assert status == 409 and body["error"]["field"] == "recording_id", body


def test_the_cli_makes_a_recording_from_a_run(api, cli):
    agent = api.agent(sleepy_spec(answer="42"))
    ds = api.dataset(cases(2))
    run = api.start(agent, ds)
    api.wait(run["run_id"])
    done = cli("recordings", "from-run", run["run_id"], "--recording-id", "by-cli")
    assert done.code == 0, done
    assert json.loads(done.out)["lines"] == 2
    meta = api.ok("GET", "/api/v1/recordings/by-cli")
    assert meta["lines"] == 2


def test_the_cli_estimates_and_starts_a_run_from_a_recording(api, cli):
    agent = tool_agent(api)
    ds = api.dataset(CASES)
    upload(api, "rec-1", RECORDED)
    done = cli(
        "estimate", agent, "--dataset", ds, "--draft", "--from-recording", "rec-1", "--live-reads"
    )
    assert done.code == 0, done
    assert "tool calls: from recording rec-1, live reads" in done.err + done.out
    missing = cli("run", agent, "--dataset", ds, "--draft", "--from-recording", "nope", "--yes")
    assert missing.code == 3, missing
    line = missing.err.strip()
    assert "\n" not in line and "no recording nope (field recording_id)" in line
    assert "assay recordings upload FILE --id nope" in line and "--from-recording" in line
    started = cli("run", agent, "--dataset", ds, "--draft", "--from-recording", "rec-1", "--yes")
    assert started.code == 0, started
    run = api.ok("GET", f"/api/v1/agents/{agent}/eval-runs")["runs"][0]
    assert run["replay"]["label"] == "from recording rec-1"
    api.wait(run["run_id"])


# --- a recorded agent asked a case its recording lacks -------------------------------------------


def test_a_recorded_agents_missing_case_is_incomplete_and_divergent_not_a_crash(api):
    agent = api.agent({"runtime": "recorded", "inline": {"c000": "42"}})
    ds = api.dataset(cases(3))
    run = api.start(agent, ds)
    api.wait(run["run_id"])
    view = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    assert view["status"] == "completed"
    got = {r["case_id"]: r for r in view["results"]}
    assert got["c000"]["state"] == "passed"
    for cid in ("c001", "c002"):
        assert got[cid]["state"] == "incomplete" and got[cid]["crash"] is False
        assert got[cid]["reason"] == DIVERGENT_REASON
        assert cid in got[cid]["error"]
    assert view["progress"]["incomplete"] == 2
    quality = view["summaries"]["candidate"]["quality"]
    assert quality["incomplete"] == 2 and quality["crashed"] == 0
    assert quality["undecided_reasons"] == {DIVERGENT_REASON: 2}


# --- baselines matched only under the same replay -------------------------------------------------


def test_a_baseline_is_reused_only_from_a_run_with_the_same_replay(api):
    agent = api.agent(sleepy_spec(answer="42"), publish=1)
    ds = api.dataset(cases(2))
    upload(api, "rec-1", jsonl({"case_id": "c000", "answer": "42"}))
    upload(api, "rec-2", jsonl({"case_id": "c001", "answer": "42"}))
    first = api.start(
        agent, ds, candidate="version", version=1, from_recordings=True, recording_id="rec-1"
    )
    api.wait(first["run_id"])
    api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": sleepy_spec(answer="43")})
    api.ok("POST", f"/api/v1/agents/{agent}/versions")
    path = f"/api/v1/agents/{agent}/eval-runs/estimate"

    def estimate(**body: Any) -> dict[str, Any]:
        return api.ok(
            "POST", path, json={"dataset_id": ds, "candidate": "version", "version": 2, **body}
        )

    same = {"from_recordings": True, "recording_id": "rec-1"}
    # the default baseline: the last completed run of v1 measured the same way
    assert estimate(**same)["reused_baseline_run_id"] == first["run_id"]
    for other in (
        {},  # not from recordings
        {"from_recordings": True, "recording_id": "rec-2"},  # another recording
        {**same, "live_reads": True},  # reads run live
    ):
        est = estimate(**other)
        assert est["reused_baseline_run_id"] is None, other
        assert est["missing_baseline_version"] == 1, other
    # the cached paired baseline: reused under the same replay, run here under another
    paired = estimate(**same, paired_baseline=True, reruns=1)
    assert paired["reused_baseline_run_id"] == first["run_id"]
    base = next(a for a in paired["arms"] if a["role"] == "baseline")
    assert base["basis"] == "reused" and base["replay"]["label"] == "from recording rec-1"
    live = estimate(**same, live_reads=True, paired_baseline=True, reruns=1)
    assert live["reused_baseline_run_id"] is None
    base = next(a for a in live["arms"] if a["role"] == "baseline")
    assert base["basis"] != "reused"
    assert base["replay"]["label"] == "from recording rec-1, live reads"

    # a started run labels both sides
    second = api.start(agent, ds, candidate="version", version=2, **same)
    view = api.ok("GET", f"/api/v1/eval-runs/{second['run_id']}")
    assert view["reused_baseline_run_id"] == first["run_id"]
    assert {a["role"]: a["replay"]["label"] for a in view["arms"]} == {
        "candidate": "from recording rec-1",
        "baseline": "from recording rec-1",
    }
    api.wait(second["run_id"])


# --- suites keep the options for their runs -------------------------------------------------------


@pytest.fixture
def quiet_suites(api, container):
    """Pause this test's suites afterwards, so later ticks of the shared stack leave them alone."""
    yield
    from chalicelib.services import suites

    for row in container.suites.of_org(api.org_id):
        suites.pause(container, row, "test over")


def test_a_suite_keeps_its_replay_and_its_runs_answer_from_the_recording(api, quiet_suites):
    agent = tool_agent(api, publish=1)
    ds = api.dataset(CASES)
    upload(api, "rec-1", RECORDED)
    api.ok("POST", "/api/v1/environments", json={"environment_id": "prod"})
    api.ok(
        "POST",
        f"/api/v1/agents/{agent}/promotions",
        json={"environment_id": "prod", "version": 1},
    )
    status, body = api.call(
        "POST",
        f"/api/v1/agents/{agent}/suites",
        json={"dataset_id": ds, "environment_id": "prod", "from_recordings": True},
    )
    assert status == 400 and body["error"]["field"] == "recording_id", body
    status, body = api.call(
        "POST",
        f"/api/v1/agents/{agent}/suites",
        json={
            "dataset_id": ds,
            "environment_id": "prod",
            "from_recordings": True,
            "recording_id": "missing",
        },
    )
    assert status == 404 and body["error"]["field"] == "recording_id", body
    suite = api.ok(
        "POST",
        f"/api/v1/agents/{agent}/suites",
        json={
            "dataset_id": ds,
            "environment_id": "prod",
            "from_recordings": True,
            "recording_id": "rec-1",
        },
    )
    assert suite["replay"]["label"] == "from recording rec-1"
    sid = suite["suite_id"]
    api.ok("POST", f"/api/v1/agents/{agent}/suites/{sid}/run")
    started = [
        r
        for r in api.ok("GET", f"/api/v1/agents/{agent}/eval-runs")["runs"]
        if r["suite_id"] == sid
    ]
    assert len(started) == 1, started
    run_id = started[0]["run_id"]
    api.wait(run_id)
    got = results_by_case(api, run_id)
    assert statuses(got["c1"]) == ["replayed"] and statuses(got["c2"]) == ["divergent"]
    # turning it off drops the recording too
    off = api.ok("PATCH", f"/api/v1/agents/{agent}/suites/{sid}", json={"from_recordings": False})
    assert off["replay"] is None
