"""assay's Chalice app: registers the blueprints; nothing else."""

from chalice import Chalice

from chalicelib.api.routes import bp as api_routes
from chalicelib.workers.handlers import bp as workers

app = Chalice(app_name="assay")
app.register_blueprint(api_routes)
app.register_blueprint(workers)
