"""assay's Chalice app: starts the function (the deployed-stage check, the message bus), registers
the blueprints and answers wrong methods; nothing else.

`chalice package` and `chalice deploy` import this module to find every route and handler; as a
Lambda, only the API function imports it (its handler is `app.app`), and it registers the routes
alone (`chalicelib.startup` says how each function starts and why).
"""

import os

from chalice import Chalice

from chalicelib.api.common import answer_other_methods
from chalicelib.api.console import bp as console_pages
from chalicelib.api.routes import bp as api_routes
from chalicelib.startup import serves_only_the_api, start

start()  # a deployed stage with the built-in signing secret fails its cold start here
app = Chalice(app_name="assay")
app.register_blueprint(api_routes)
app.register_blueprint(console_pages)
if not serves_only_the_api(os.environ):  # the workers' own Lambdas import their modules, not this
    from chalicelib.workers.cases import bp as case_worker
    from chalicelib.workers.handlers import bp as workers

    app.register_blueprint(case_worker)
    app.register_blueprint(workers)
answer_other_methods(app)  # a wrong method is 405 on API Gateway too, never its 403
