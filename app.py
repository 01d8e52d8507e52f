"""assay's Chalice app: refuses an unsafe deployed stage, wires the message bus, registers the
blueprints and answers wrong methods; nothing else.

Only the API function imports this module as it starts (its handler is `app.app`); an event
handler's Lambda imports its blueprint's module instead (`chalicelib.workers` explains that start).
`chalice package` and `chalice deploy` import it to find every route and handler.
"""

from chalice import Chalice

from chalicelib.api.common import answer_other_methods
from chalicelib.api.routes import bp as api_routes
from chalicelib.bootstrap import check_deployment
from chalicelib.services import event_handlers
from chalicelib.workers.cases import bp as case_worker
from chalicelib.workers.handlers import bp as workers

check_deployment()  # a deployed stage with the built-in signing secret fails its cold start here
event_handlers.wire()  # which use case acts on which event (chalicelib/services/event_handlers.py)
app = Chalice(app_name="assay")
app.register_blueprint(api_routes)
app.register_blueprint(case_worker)
app.register_blueprint(workers)
answer_other_methods(app)  # a wrong method is 405 on API Gateway too, never its 403
