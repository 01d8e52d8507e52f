"""HTTP routes (Chalice blueprints), request schemas, and the one error → status mapping."""
