"""assay's client side: a typed HTTP client of the API (`assay.client`), the CI gate's decision
and reports (`assay.gate`), and the CLI commands that use them (`assay.commands`). Nothing here
imports the service (`chalicelib`) or the embedded stack (`assay_local`): a pipeline that only
calls a deployed assay needs httpx and this package alone."""
