"""assay's client side: a typed HTTP client of the API (`assay.client`, its transport and one
module of methods per resource group), the CI gate's decision and reports (`assay.gate`), and the
CLI commands that use them (`assay.commands`, which registers `cli_runs`, `cli_cases`, `cli_suites`,
`cli_access`, `cli_agents` and `cli_resources`; their wording in `assay.text`, the command that
fixes an API error in `assay.hints`). Nothing here imports the service (`chalicelib`) or the
embedded stack (`assay_local`): a pipeline that only calls a deployed assay needs httpx and this
package alone."""
