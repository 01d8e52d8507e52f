"""Tests that point the PynamoDB models at a moto server of their own put them back after."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def models_kept() -> Iterator[None]:
    """Every model's table name, endpoint and region as they are now, put back (connections
    forgotten) when the block ends."""
    from chalicelib.adapters import stores, tables

    saved = {
        m: (m.Meta.table_name, getattr(m.Meta, "host", None), m.Meta.region)
        for m in tables.ALL_MODELS
    }
    try:
        yield
    finally:
        for model, (name, host, region) in saved.items():
            model.Meta.table_name, model.Meta.host, model.Meta.region = name, host, region
            model._connection = None  # noqa: SLF001
            for index in model._indexes.values():  # noqa: SLF001
                index._connection = None  # type: ignore[attr-defined]  # noqa: SLF001
        stores.reset_connections()
