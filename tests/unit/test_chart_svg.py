"""The chart's SVG: well-formed, one path per dataset with its dash, a linked point per run, and
the tenant's text escaped."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta

from chalicelib.api.chart_svg import render
from chalicelib.domain.chart import ChartRun, build_chart

NS = "{http://www.w3.org/2000/svg}"
NOW = datetime(2026, 12, 2, 21, 0, tzinfo=UTC)


def run(n: int, **overrides: object) -> ChartRun:
    values: dict[str, object] = {
        "run_id": f"run_{n}",
        "dataset_id": "gsm8k",
        "dataset_name": "GSM8K test",
        "started_at": datetime(2026, 12, 2, 9, 0, tzinfo=UTC) + timedelta(minutes=n),
        "pass_rate": 0.5,
        "broke": 0,
        "fixed": 0,
        "draft": False,
        "could_not_run": False,
        "what": "v2",
        "against": "v1",
    }
    values.update(overrides)
    return ChartRun(**values)  # type: ignore[arg-type]


def test_the_svg_has_a_path_per_dataset_and_a_linked_point_per_run() -> None:
    runs = [
        run(0, broke=1),
        run(1, dataset_id="math", dataset_name="MATH", fixed=2, draft=True, what="draft"),
        run(2),
    ]
    root = ET.fromstring(render(build_chart(runs, now=NOW, last="10")))
    assert root.get("role") == "img" and root.get("width") == "100%"
    assert root.find(f"{NS}title").text == "Pass rate, run by run"
    paths = root.findall(f".//{NS}path")
    assert [(p.get("data-dataset"), p.get("stroke-dasharray")) for p in paths] == [
        ("gsm8k", ""),
        ("math", "6 4"),
    ]
    assert paths[0].get("d").count("L") == 1
    links = root.findall(f".//{NS}a")
    assert [
        (a.get("href"), a.get("data-colour"), a.get("data-hollow"), a.get("data-dataset"))
        for a in links
    ] == [
        ("../runs/run_0", "red", "false", "gsm8k"),
        ("../runs/run_1", "green", "true", "math"),
        ("../runs/run_2", "neutral", "false", "gsm8k"),
    ]
    hollow = links[1].find(f"{NS}circle")
    assert (hollow.get("fill"), hollow.get("stroke")) == ("#ffffff", "#2e7d32")
    assert links[0].find(f"{NS}circle").get("fill") == "#c62828"
    assert links[0].find(f"{NS}title").text == links[0].get("aria-label")
    assert links[0].get("aria-label").startswith("v2 against v1 on GSM8K test")
    legend = [t.text for t in root.findall(f".//{NS}g[@class='legend']//{NS}text")]
    assert legend == ["GSM8K test", "MATH"]
    ticks = [t.text for t in root.findall(f".//{NS}g[@class='y-axis']/{NS}text")]
    assert ticks == ["0%", "25%", "50%", "75%", "100%"]


def test_blank_labels_are_not_printed() -> None:
    at = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
    runs = [run(0, started_at=at), run(1, started_at=at), run(2, started_at=at.replace(hour=10))]
    root = ET.fromstring(render(build_chart(runs, now=NOW, last="10")))
    xs = [t.text for t in root.findall(f".//{NS}g[@class='x-axis']/{NS}text")]
    assert xs == ["09:00", "10:00"]


def test_labels_too_close_to_the_last_one_drawn_are_left_out_and_none_overlap() -> None:
    at = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
    # 30 runs a second apart: each labelled "09:00:SS", more than the axis has room for
    runs = [run(i, started_at=at + timedelta(seconds=i)) for i in range(30)]
    root = ET.fromstring(render(build_chart(runs, now=NOW, last="30")))
    texts = root.findall(f".//{NS}g[@class='x-axis']/{NS}text")
    shown = [t.text for t in texts]
    assert shown[0] == "09:00:00" and 6 <= len(shown) < 30, shown
    xs = [float(t.get("x")) for t in texts]
    half = 7.0 * len("09:00:00") / 2
    assert all(b - a >= 2 * half + 8 for a, b in zip(xs, xs[1:], strict=False)), xs
    assert xs[-1] + half <= 720  # the last label stays inside the chart


def test_a_hostile_dataset_name_and_id_come_out_escaped() -> None:
    name = "<script>alert(\"x\")</script> & 'q'"
    ident = 'ds"><script>x</script>'
    svg = render(build_chart([run(0, dataset_id=ident, dataset_name=name)], now=NOW, last="10"))
    assert "<script>" not in svg
    assert "&lt;script&gt;" in svg
    root = ET.fromstring(svg)
    assert root.find(f".//{NS}path").get("data-dataset") == ident
    assert root.find(f".//{NS}a").get("data-dataset") == ident
    assert name in root.find(f".//{NS}a").get("aria-label")
    assert [t.text for t in root.findall(f".//{NS}g[@class='legend']//{NS}text")] == [name]


def test_an_empty_chart_is_still_a_well_formed_svg() -> None:
    root = ET.fromstring(render(build_chart([], now=NOW, last="all")))
    assert root.findall(f".//{NS}a") == []
