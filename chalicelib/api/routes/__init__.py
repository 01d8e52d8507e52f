"""Every HTTP route of assay, one module per resource area, all on one blueprint (`base.bp`) that
`app.py` registers. Handlers parse, call one service, shape the response.

The services and the views are imported by the first request that needs each
(`chalicelib.api.lazy`): the API function starts with the routes, their bodies' schemas and
little else (issue 12). The areas register in this order, the order of the OpenAPI document.
"""

from __future__ import annotations

from chalicelib.api.routes import (  # noqa: F401
    access,
    agents,
    connections,
    datasets,
    gateway,
    org,
    review,
    runs,
    secrets,
    usage,
)
from chalicelib.api.routes.base import bp

__all__ = ["bp"]
