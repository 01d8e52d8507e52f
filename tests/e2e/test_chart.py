"""The pass-rate chart end to end (docs/guides/console.md): real runs through the API, then the
chart's JSON and its SVG."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from tests.e2e.conftest import cases, sleepy_spec

NS = "{http://www.w3.org/2000/svg}"
HOSTILE = "<script>alert('x')</script> \"GSM\""


def publish(api, agent_id: str, spec: dict) -> None:
    api.ok("PUT", f"/api/v1/agents/{agent_id}/draft", json={"spec": spec})
    api.ok("POST", f"/api/v1/agents/{agent_id}/versions")


def completed(api, agent: str, ds: str, **body) -> str:
    run = api.start(agent, ds, **body)
    assert api.wait(run["run_id"])["status"] == "completed"
    return run["run_id"]


def test_the_chart_shows_each_run_of_the_agent_by_dataset_with_its_colour(api):
    ds = api.ok("POST", "/api/v1/datasets", json={"name": HOSTILE})["dataset_id"]
    api.ok(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={"scoring": {"required": ["equals"]}, "cases": cases(4)},
    )
    other = api.dataset(cases(2))
    agent = api.agent(sleepy_spec())
    publish(api, agent, sleepy_spec())  # v1: all pass
    publish(api, agent, sleepy_spec(answers={"c001": "7"}))  # v2 breaks c001
    broke = completed(api, agent, ds, candidate="version", version=2, paired_baseline=True)
    draft = completed(api, agent, ds)  # the draft (v2's spec) against v2: 3 of 4, no flip
    alone = completed(api, agent, other, candidate="version", version=1)

    chart = api.ok("GET", f"/api/v1/agents/{agent}/eval-runs/chart")
    assert (chart["last"], chart["measured"], chart["shown"], chart["switch"]) == (
        "10",
        3,
        3,
        False,
    )
    assert chart["series"] == [
        {"dataset_id": ds, "name": HOSTILE, "dash": ""},
        {"dataset_id": other, "name": "t", "dash": "6 4"},
    ]
    points = chart["points"]
    assert [(p["run_id"], p["x"], p["y"], p["colour"], p["hollow"]) for p in points] == [
        (broke, 0, 0.75, "red", False),
        (draft, 1, 0.75, "neutral", True),
        (alone, 2, 1.0, "neutral", False),
    ]
    assert points[0]["tooltip"].startswith(f"v2 against v1 on {HOSTILE} · ")
    assert points[0]["tooltip"].endswith(" · pass rate 75.0% · broke 1, fixed 0")
    assert points[1]["tooltip"].startswith(f"draft against v2 on {HOSTILE} · ")
    assert points[1]["tooltip"].endswith(" · pass rate 75.0%")
    assert points[2]["tooltip"].startswith("v1 alone on t · ")
    assert points[0]["label"] and [p["label"] for p in points[1:]].count(points[0]["label"]) == 0

    svg = chart["svg"]
    assert "<script>" not in svg
    root = ET.fromstring(svg)
    assert root.get("role") == "img"
    links = root.findall(f".//{NS}a")
    assert [(a.get("href"), a.get("data-colour"), a.get("data-hollow")) for a in links] == [
        (f"../runs/{broke}", "red", "false"),
        (f"../runs/{draft}", "neutral", "true"),
        (f"../runs/{alone}", "neutral", "false"),
    ]
    assert [a.find(f"{NS}title").text for a in links] == [p["tooltip"] for p in points]
    assert [p.get("data-dataset") for p in root.findall(f".//{NS}path")] == [ds, other]

    by_dataset = api.ok("GET", f"/api/v1/datasets/{other}/eval-runs/chart", params={"last": "all"})
    assert [p["run_id"] for p in by_dataset["points"]] == [alone]
    assert by_dataset["last"] == "all"


def test_last_must_be_10_30_or_all(api):
    agent = api.agent(sleepy_spec())
    status, body = api.call("GET", f"/api/v1/agents/{agent}/eval-runs/chart", params={"last": "5"})
    assert status == 400 and body["error"]["field"] == "last"
    empty = api.ok("GET", f"/api/v1/agents/{agent}/eval-runs/chart", params={"last": "30"})
    assert (empty["measured"], empty["points"], empty["series"]) == (0, [], [])
