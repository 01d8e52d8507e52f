"""Modules the API imports on first use (issue 12): the routes name every service and view, and
importing them all is most of a cold start, while one request needs one or two.

The route modules (`routes.*`) and `common` bind each such module to a `LazyModule` at run time
and import it for real under `TYPE_CHECKING`, so mypy and the import-linter contracts still see
every import: only the moment it happens moves, to the first request that reads an attribute of
the module.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class LazyModule:
    """Stands for a module, imported the first time one of its attributes is read."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    @property
    def name(self) -> str:
        """The module's import name."""
        return self._name

    def load(self) -> ModuleType:
        """The module, imported now if it was not yet."""
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return self._module

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.load(), attr)

    def __repr__(self) -> str:
        state = "imported" if self._module is not None else "not imported yet"
        return f"<LazyModule {self._name} ({state})>"
