"""The pass-rate chart drawn as inline SVG (docs/guides/console.md): the page inserts `svg`
into `<figure id="chart">` as it comes, so it draws without a charting script.

Scaled by its viewBox (width 100 %), so it stays sharp and readable at 200 % zoom. Every point is
a link to its run (relative: both pages showing it live two levels deep, `/agents/{id}` and
`/datasets/{id}`) with its tooltip as `<title>` and `aria-label`. Dataset names and ids are the
tenant's text: every one is XML-escaped.
"""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from chalicelib.domain.chart import Chart, Colour, Point

COLOURS: dict[Colour, str] = {
    Colour.RED: "#c62828",
    Colour.GREEN: "#2e7d32",
    Colour.AMBER: "#ef8f00",
    Colour.NEUTRAL: "#546e7a",
}
"""Each point colour's fill (or a hollow point's stroke)."""

WIDTH = 720
HEIGHT = 260
LEFT, RIGHT, TOP, BOTTOM = 48, 32, 34, 30
"""The plot area's margins, in viewBox units: y labels left, legend above, x labels below (the
right margin holds half the last point's label, "14:03:27", centred on it)."""
CHAR_WIDTH = 7.0
"""A generous width of one character of an x label at font-size 12, in viewBox units."""
LABEL_GAP = 8.0
"""The least room between two x labels: a label that would come closer to the last one drawn is
left out (its point keeps the time in its tooltip)."""
TITLE = "Pass rate, run by run"


def _attr(value: str) -> str:
    return quoteattr(value, {"\n": "&#10;", "\r": "&#13;", "\t": "&#9;"})


def _x(index: int, shown: int) -> float:
    span = WIDTH - LEFT - RIGHT
    if shown <= 1:
        return LEFT + span / 2
    return LEFT + span * index / (shown - 1)


def _y(rate: float) -> float:
    return TOP + (HEIGHT - TOP - BOTTOM) * (1 - max(0.0, min(1.0, rate)))


def _drawn_labels(chart: Chart) -> list[tuple[Point, float]]:
    """The points whose non-blank x label is drawn, with its x: left to right, each label that
    does not come within `LABEL_GAP` of the last one drawn (widths estimated at `CHAR_WIDTH`)."""
    drawn: list[tuple[Point, float]] = []
    right_edge = float("-inf")
    for p in chart.points:
        if not p.label:
            continue
        x = _x(p.x, chart.shown)
        half = CHAR_WIDTH * len(p.label) / 2
        if x - half < right_edge + LABEL_GAP:
            continue
        drawn.append((p, x))
        right_edge = x + half
    return drawn


def render(chart: Chart) -> str:
    """The chart as one `<svg>` element (a string of XML): gridlines at 0, 25, 50, 75 and 100 %,
    the non-blank x labels, a `<path>` per dataset with its dash, a legend, and a linked point
    per run (`data-run-id`, `data-colour`, `data-hollow`, `data-dataset`)."""
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="100%"'
        f' role="img" aria-labelledby="chart-title" font-family="system-ui, sans-serif"'
        f' font-size="12" data-shown="{chart.shown}" data-last="{chart.last}">',
        f'<title id="chart-title">{TITLE}</title>',
    ]
    out.append('<g class="grid" stroke="#cfd8dc" stroke-width="1">')
    for pct in (0, 25, 50, 75, 100):
        y = _y(pct / 100)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}"/>')
    out.append("</g>")
    out.append('<g class="y-axis" fill="#37474f" text-anchor="end">')
    for pct in (0, 25, 50, 75, 100):
        out.append(f'<text x="{LEFT - 6}" y="{_y(pct / 100) + 4:.1f}">{pct}%</text>')
    out.append("</g>")
    out.append('<g class="x-axis" fill="#37474f" text-anchor="middle">')
    for p, x in _drawn_labels(chart):
        out.append(f'<text x="{x:.1f}" y="{HEIGHT - BOTTOM + 18}">{escape(p.label)}</text>')
    out.append("</g>")
    legend_x = float(LEFT)
    out.append('<g class="legend" fill="#263238">')
    for s in chart.series:
        out.append(
            f'<g data-dataset={_attr(s.dataset_id)}><line x1="{legend_x:.1f}" y1="14"'
            f' x2="{legend_x + 28:.1f}" y2="14" stroke="#37474f" stroke-width="2"'
            f" stroke-dasharray={_attr(s.dash)}/>"
            f'<text x="{legend_x + 34:.1f}" y="18">{escape(s.name)}</text></g>'
        )
        legend_x += 34 + 7 * min(len(s.name), 40) + 24
    out.append("</g>")
    for s in chart.series:
        mine = [p for p in chart.points if p.dataset_id == s.dataset_id]
        d = " ".join(
            f"{'M' if i == 0 else 'L'}{_x(p.x, chart.shown):.1f},{_y(p.y):.1f}"
            for i, p in enumerate(mine)
        )
        out.append(
            f'<path d="{d}" fill="none" stroke="#546e7a" stroke-width="1.5"'
            f" stroke-dasharray={_attr(s.dash)} data-dataset={_attr(s.dataset_id)}/>"
        )
    out.append('<g class="points">')
    for p in chart.points:
        colour = COLOURS[p.colour]
        fill = "#ffffff" if p.hollow else colour
        out.append(
            f"<a href={_attr(f'../runs/{p.run_id}')} data-run-id={_attr(p.run_id)}"
            f' data-colour="{p.colour}" data-hollow="{"true" if p.hollow else "false"}"'
            f" data-dataset={_attr(p.dataset_id)} aria-label={_attr(p.tooltip)}>"
            f'<circle cx="{_x(p.x, chart.shown):.1f}" cy="{_y(p.y):.1f}" r="5" fill="{fill}"'
            f' stroke="{colour}" stroke-width="2"/>'
            f"<title>{escape(p.tooltip)}</title></a>"
        )
    out.append("</g></svg>")
    return "".join(out)
