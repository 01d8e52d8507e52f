"""assay on a machine: the embedded local stack (moto server, SQS pollers, scheduler, Chalice
routes; docs/guides/local-stack.md), the `assay` command line and the demo.

Its own top-level package, outside `chalicelib`, so the Lambda package (`app.py` and `chalicelib/`,
what `chalice package` bundles) carries the service only. It may import `chalicelib` and `infra`;
neither imports it (`tests/unit/test_layers.py`). Nothing is imported at package import: moto and
chalice.local are loaded only by the modules that need them.

- `motoserver.start_moto_server()`: moto on 127.0.0.1 with DynamoDB serialized, flat-cost
  transactions and request counts.
- `poller.start_pollers(app, ...)`: Lambda's SQS event-source mapping for every `on_sqs_message`.
- `scheduler.Scheduler(app, ...)`: EventBridge for every `@app.schedule`.
- `stack.EmbeddedStack(...)`: all of the above plus the routes over HTTP, in one process.
- `cli.main()`: the `assay` console script (`dev`, `demo`, `token`, `secrets`, `recordings`...).
- `demo`: the GSM8K demo run `make demo` drives.
"""
