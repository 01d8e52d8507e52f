"""The embedded local stack: moto server, SQS pollers, scheduler, Chalice routes (DESIGN §9).

Nothing here is imported by Lambda code, and nothing is imported at package import: moto and
chalice.local are loaded only by the modules that need them.

- `motoserver.start_moto_server()`: moto on 127.0.0.1 with DynamoDB serialized, flat-cost
  transactions and request counts.
- `poller.start_pollers(app, ...)`: Lambda's SQS event-source mapping for every `on_sqs_message`.
- `scheduler.Scheduler(app, ...)`: EventBridge for every `@app.schedule`.
- `stack.EmbeddedStack(...)`: all of the above plus the routes over HTTP, in one process.
"""
