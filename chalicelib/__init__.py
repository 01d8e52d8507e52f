"""assay: serverless evaluation of LLM agents (see ../shared/DESIGN.md)."""
