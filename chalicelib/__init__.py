"""assay: serverless evaluation of LLM agents (how it is built: docs/architecture/index.md)."""

import os

# assay uses no pydantic plugin, and pydantic looks for them by reading the entry points of every
# installed distribution at its first model class: ~40-50 ms of each Lambda cold start (issue 12,
# scope 3). An operator who does want one sets the variable to something else.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
