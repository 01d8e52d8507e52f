"""How an attempt's tool calls are shown (docs/guides/tools.md, "Reading the calls"): the cases'
API counts each case's blocked and divergent calls and the run's cases that diverged from the
recording, from the attempts it reads; `assay cases` and the JUnit report say each call's status
in words. The calls are decided by the attempts' own tools (`tests.support.tool_runs`)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from tests.support.tool_runs import IMG, SVG, decided_run, tool_server


@pytest.fixture
def run(api, container, frozen, operator):
    operator(assay_allow_private_network=True)  # the test connection's server is on 127.0.0.1
    with tool_server() as url:
        yield decided_run(api, container, url)


def test_the_cases_count_blocked_and_divergent_calls_and_the_run_its_diverged_cases(
    api, container, run
):
    page = api.ok("GET", f"/api/v1/eval-runs/{run.run_id}/cases")
    assert page["diverged_cases"] == 1
    counts = {c["case_id"]: (c["blocked_calls"], c["divergent_calls"]) for c in page["cases"]}
    assert counts == {"c000": (2, 0), "c001": (0, 2), "c002": (0, 0)}
    calls = {c["case_id"]: c["arms"]["candidate"]["attempts"][0]["calls"] for c in page["cases"]}
    looked, emailed, wrote, unknown = calls["c000"]
    assert (looked["status"], looked["connection_id"]) == ("executed", "shop-test")
    assert looked["arguments"] == {"order_id": IMG}
    assert looked["result"] == {"tool": "lookup_order", "got": {"order_id": IMG}, "note": SVG}
    assert "test connection 'shop-test' in place of 'shop'" in looked["reason"]
    assert emailed["status"] == "blocked" and "connection_id" not in emailed
    assert (
        emailed["reason"] == "tool 'send_email' may write and its connection has no test connection"
    )
    assert (wrote["status"], wrote["connection_id"]) == ("executed", "workspace")
    assert (
        unknown["status"] == "blocked" and "no tool named 'delete_everything'" in unknown["reason"]
    )
    replayed, *held = calls["c001"]
    assert replayed["status"] == "replayed" and replayed["result"] == {"status": "shipped"}
    assert [h["status"] for h in held] == ["divergent", "divergent"]
    assert [c["status"] for c in calls["c002"]] == ["unverified"]
    assert "reported by the agent as executed" in calls["c002"][0]["reason"]

    # The run's count is over every case, whatever the filters and the page.
    passed = api.ok(
        "GET", f"/api/v1/eval-runs/{run.run_id}/cases", params={"outcome": "passed", "limit": 1}
    )
    assert [c["case_id"] for c in passed["cases"]] == ["c000"]
    assert passed["diverged_cases"] == 1
    only = api.ok("GET", f"/api/v1/eval-runs/{run.run_id}/cases", params={"case_id": "c002"})
    assert only["diverged_cases"] == 1 and only["cases"][0]["divergent_calls"] == 0

    # What the attempt wrote in its workspace went when the run ended.
    assert run.workspace_files == ["notes/refund.txt"]
    assert container.workspaces.list(api.org_id, run.run_id, "candidate#c000#001") == []


def test_assay_cases_and_the_junit_report_say_each_call_s_status(run, cli, tmp_path):
    done = cli("cases", run.run_id)
    assert done.code == 0, done.err
    lines = done.out.splitlines()
    assert lines[0] == 'c000 "question 0": candidate passed (1 try); calls 2 blocked'
    first_calls = lines[1]
    assert first_calls.startswith("  candidate try 1 calls: lookup_order executed on shop-test; ")
    assert (
        "send_email blocked — not executed (tool 'send_email' may write and its connection has "
        "no test connection)"
    ) in first_calls
    assert "workspace_write executed on workspace" in first_calls
    assert lines[2] == 'c001 "question 1": candidate failed (1 try); calls 2 divergent'
    second_calls = next(
        line for line in lines if line.startswith("  candidate try 1 calls: lookup_order replayed")
    )
    assert second_calls.count("refund divergent — held (the recording has no unused call") == 2
    assert "  candidate try 1 calls: refund unverified — reported by the agent" in done.out
    assert (
        lines[-1]
        == "1 case diverged from the recording (their unmatched calls were held, not made)"
    )

    as_json = json.loads(cli("cases", run.run_id, "--json").out)
    assert as_json["diverged_cases"] == 1 and len(as_json["cases"]) == 3

    junit = tmp_path / "report.xml"
    gated = cli("gate", run.run_id, "--junit", str(junit))
    assert gated.code in (0, 1, 2), gated.err
    root = ET.fromstring(junit.read_text())
    props = {p.get("name"): p.get("value") for p in root.find("properties")}
    assert props["diverged_cases"] == "1"
    cases = {tc.get("name"): tc for tc in root.iter("testcase")}

    def case_props(name: str) -> dict:
        return {p.get("name"): p.get("value") for p in cases[name].iter("property")}

    assert case_props("c000")["blocked_calls"] == "2"
    assert case_props("c001")["divergent_calls"] == "2"
    out = cases["c000"].find("system-out").text
    assert out.splitlines()[0] == "try 1: lookup_order executed on shop-test"
    assert "try 1: send_email blocked — not executed (tool 'send_email' may write" in out
    assert "try 1: delete_everything blocked — not executed (this eval attempt has no tool" in out
    assert cases["c001"].find("system-out").text.splitlines() == [
        "try 1: lookup_order replayed from the recording (answered from recorded call 0)",
        "try 1: refund divergent — held (the recording has no unused call of 'refund' with these "
        "arguments)",
        "try 1: refund divergent — held (the recording has no unused call of 'refund' with these "
        "arguments)",
    ]
    assert "unverified — reported by the agent" in cases["c002"].find("system-out").text
