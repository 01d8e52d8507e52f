"""The console (docs/guides/console.md): its pages and assets, served by assay itself.

Every page is the same shell: it names no tenant data, so it is public (no token) and the same for
every organization. The shell's script signs in from the address's fragment (`#token=...`, which
no server or log ever sees), keeps the token in the tab's session storage, and reads everything
else from the API with it, so the console sees exactly what the reader's permissions show.
"""

from __future__ import annotations

from pathlib import Path

from chalice import Blueprint, Response

bp = Blueprint(__name__)

ASSETS_DIR = Path(__file__).resolve().parents[1] / "console"
CONTENT_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
ASSETS: dict[str, tuple[str, str]] = {
    p.name: (p.read_text(encoding="utf-8"), CONTENT_TYPES[p.suffix])
    for p in sorted(ASSETS_DIR.iterdir())
    if p.suffix in CONTENT_TYPES
}
"""`{file name: (text, content type)}`, read once: the only files `/console/{asset}` serves, so a
path names nothing outside this directory."""

SECURITY_HEADERS = {
    # Scripts and styles come only from the service; tenant text is only ever set as text.
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

SHELL = (ASSETS_DIR / "shell.html").read_text(encoding="utf-8")


def page(depth: int) -> Response:
    """The shell for a page `depth` path segments deep: its asset addresses are relative, so the
    same shell works under an API Gateway stage's prefix and on the local stack's root."""
    prefix = "../" * (depth - 1) if depth > 1 else "./"
    return Response(
        body=SHELL.replace("{{prefix}}", prefix),
        status_code=200,
        headers={"Content-Type": "text/html; charset=utf-8", **SECURITY_HEADERS},
    )


def not_found_page(method: str, path: str, accept: str) -> Response | None:
    """What an unknown path answers a browser's navigation: the shell with status 404, whose
    router shows the console's Not found page (with a way back to the dashboard), for a GET or
    HEAD that accepts `text/html` of a path outside `/api/` (the console's paths); None for any
    other request (an API client's, or under `/api/`), which keeps the gateway's JSON 404.

    `path`: the request's path, with or without its query string; `accept`: its Accept header
    ("" when it sent none)."""
    from urllib.parse import urlsplit

    route = urlsplit(path).path or "/"
    if method.upper() not in ("GET", "HEAD") or "text/html" not in accept.lower():
        return None
    if route == "/api" or route.startswith("/api/"):
        return None
    shell = page(max(1, route.count("/")))  # its assets' addresses relative to its depth
    shell.status_code = 404
    return shell


@bp.route("/", methods=["GET"])
def dashboard() -> Response:
    """The dashboard: its Eval runs card (docs/guides/console.md)."""
    return page(1)


@bp.route("/evals", methods=["GET"])
def eval_runs() -> Response:
    """Eval runs: every run the reader may see, newest first (docs/guides/console.md)."""
    return page(1)


@bp.route("/activity", methods=["GET"])
def activity() -> Response:
    """Activity: every run of the organization's agents, production, eval and grader, newest
    first (docs/guides/console.md)."""
    return page(1)


@bp.route("/agents", methods=["GET"])
def agents() -> Response:
    """Agents: each one's live version, whether its draft differs, their verdicts, its last run."""
    return page(1)


@bp.route("/datasets", methods=["GET"])
def datasets() -> Response:
    """Datasets: each one's latest version, cases, scorers and the agents last measured on it."""
    return page(1)


@bp.route("/favicon.ico", methods=["GET"])
def favicon() -> Response:
    """The console's icon (an SVG) where a browser asks for it without reading the page's link."""
    text, content_type = ASSETS["favicon.svg"]
    return Response(
        body=text,
        status_code=200,
        headers={
            **SECURITY_HEADERS,
            "Content-Type": content_type,
            "Cache-Control": "max-age=86400",
        },
    )


@bp.route("/agents/{agent_id}", methods=["GET"])
def agent(agent_id: str) -> Response:
    """An agent's page, on its Evals tab."""
    return page(2)


@bp.route("/agents/{agent_id}/suites/{suite_id}", methods=["GET"])
def suite(agent_id: str, suite_id: str) -> Response:
    """A suite's page: every result, why it fell short, the run behind it."""
    return page(4)


@bp.route("/runs/{run_id}", methods=["GET"])
def run(run_id: str) -> Response:
    """A run's page: its verdict, next steps, the sides and the cases."""
    return page(2)


@bp.route("/datasets/{dataset_id}", methods=["GET"])
def dataset(dataset_id: str) -> Response:
    """A dataset's Results → Test runs."""
    return page(2)


@bp.route("/console/{asset}", methods=["GET"])
def asset(asset: str) -> Response:
    """One of the console's scripts or style sheets; any other name is a 404."""
    found = ASSETS.get(asset)
    if found is None:
        return Response(
            body={"error": {"code": "not_found", "message": f"no console asset {asset!r}"}},
            status_code=404,
            headers={"Content-Type": "application/json"},
        )
    text, content_type = found
    return Response(
        body=text,
        status_code=200,
        headers={**SECURITY_HEADERS, "Content-Type": content_type, "Cache-Control": "no-cache"},
    )
