"""Definitions of assay's AWS resources (tables come from `chalicelib.adapters.tables`).

`infra.resources.bootstrap(...)` creates them, idempotently, on moto server, LocalStack or AWS.
"""
