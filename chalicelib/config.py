"""Settings, read once from the environment into one typed object.

Nothing below `bootstrap` reads `os.environ`: services and the domain receive the values
they need as arguments. Defaults are those docs/reference/settings.md lists.

`Settings` is a plain pydantic model that reads its fields' variables itself, as pydantic-settings
did with the options we used (no prefix, names in any case, other variables ignored, arguments
over the environment): pydantic-settings cost every Lambda's cold start ~170 ms of imports
(asyncio, dotenv, argparse, its providers) for that one loop (issue 12).
"""

from __future__ import annotations

import os
from decimal import Decimal
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from chalicelib.names import DEFAULT_PREFIX, StackNames

DEV_JWT_SECRET = "assay-local-dev-secret-change-me-0123456789"
"""The built-in HS256 secret: public (it is in this file), for `assay dev`, the demo and tests
only."""


class Settings(BaseModel):
    """Every tunable of assay, with the defaults docs/reference/settings.md lists.

    `Settings(**values)` reads each field from the environment variable of its name in any case
    (`EVAL_RERUNS` or `eval_reruns`); a value passed as an argument wins over the environment. A
    value that does not validate raises pydantic's `ValidationError` naming the setting.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    def __init__(self, **values: Any) -> None:
        names = type(self).model_fields
        environ = {k.lower(): v for k, v in os.environ.items() if k.lower() in names}
        super().__init__(**{**environ, **values})

    evaluation_case_timeout_seconds: int = Field(600, ge=1)
    """Bound on one case attempt, in seconds (`EVALUATION_CASE_TIMEOUT_SECONDS`)."""
    eval_run_concurrency: int = Field(3, ge=1, le=100)
    """Case attempts one run has in flight at once."""
    eval_org_concurrency: int = Field(6, ge=1, le=1000)
    """Case attempts one organization has in flight at once, across its runs."""
    eval_reruns: int = Field(2, ge=0, le=5)
    """Reruns of a flipped case."""
    eval_max_luck: float = Field(0.01, gt=0, lt=1)
    """The chance of luck `reruns: "auto"` keeps a run's confirmed regressions under (0.01 = 1 %):
    the smallest reruns in 1-5 whose measured chance is under it (docs/concepts/noise.md)."""
    eval_baseline_cache_hours: int = Field(24, ge=0)
    """How old a matching baseline may be and still be reused, in hours."""
    eval_significance: float = Field(0.05, gt=0, lt=1)
    """Level below which the McNemar test over confirmed flips is a verdict."""
    eval_efficiency_tolerance: float = Field(0.05, ge=0)
    """Relative change in cost, tokens or latency counted as none."""
    eval_fallback_input_tokens: int = Field(2000, ge=0)
    eval_fallback_output_tokens: int = Field(400, ge=0)
    eval_fallback_case_cost_usd: float = Field(0.05, ge=0)
    eval_estimate_sample: int = Field(50, ge=1)
    eval_abandoned_after_minutes: float = Field(10, gt=0)
    """Minutes a running run may stand still (no heartbeat, no progress) before the sweep fails
    it."""
    eval_heartbeat_seconds: float = Field(60, gt=0)
    """How often a working case says its run is alive, in seconds."""
    eval_resend_after_seconds: float = Field(60, gt=0)
    """Seconds a running run may stand still before the sweep sends again each of its running
    tasks that no delivery ever claimed (a message lost with a worker that died between claiming
    a task and sending it). A copy of a task that was only slow to arrive asks nobody twice."""
    eval_case_error_tries: int = Field(3, ge=1, le=100)
    """Deliveries of one case attempt that may fail on assay's own error (an exception in the
    service, a store or queue unreachable past the SDK's retries) before its run ends `failed`
    with the error named: counted per attempt, so a copy of the task sent again counts too. Fewer
    are delivered again (a throttled request succeeds on a later one)."""
    eval_suite_dependency_debounce_seconds: int = Field(600, ge=0)
    eval_carry_slice_seconds: float = Field(0, ge=0, le=3600)
    """Seconds a case worker carries on with its lane's next cases while other case tasks wait
    for a worker; past them, the lane's next task goes to the back of the queue and the worker
    takes the oldest waiting one (docs/architecture/slots.md). 0 (the default): every
    organization's first case starts within a round of cases however many wait; larger trades
    that for fewer queue messages while workers are all busy."""

    assay_resource_prefix: str = Field(DEFAULT_PREFIX, pattern=r"^[a-z0-9][a-z0-9-]{0,38}-$")
    """Prefix of every table, queue and bucket name, and (without its `-`) the root of the
    secrets' names, one stack per prefix: lower-case letters, digits and `-` (S3 takes no other),
    a letter or digit first and `-` last (so no two prefixes share a root), at most 40."""
    assay_results_bucket: str = Field("", pattern=r"^([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])?$")
    """The results bucket's name; empty: `<prefix>results` (`StackNames.results_bucket`). S3
    names are global: a deployment names it after its account (`python -m infra package`)."""
    assay_jwt_secret: str = DEV_JWT_SECRET
    """HS256 secret that signs and checks bearer tokens; empty turns HS256 off (OIDC only). A
    deployed stage refuses to start with the built-in one (`bootstrap.check_deployment`)."""
    assay_jwt_secret_parameter: str = Field("", pattern=r"^[A-Za-z0-9_./-]{0,1011}$")
    """Name of the SSM Parameter Store parameter (a `SecureString`) that holds the HS256 secret;
    set, it replaces `assay_jwt_secret`, read once per process at the first token it signs or
    checks (`bootstrap.Container.signing_settings`). The operator names it (the stage's
    environment); nothing a tenant sends can."""
    assay_jwt_issuer: str = "assay"
    """`iss` every HS256 token must carry."""
    assay_jwt_audience: str = "assay"
    """`aud` every HS256 token must carry."""
    assay_token_ttl_seconds: int = Field(8 * 3600, ge=60)
    """Lifetime of the tokens `assay token` and `issue_token` sign, in seconds (`exp` is
    required)."""
    assay_jwt_max_lifetime_seconds: int = Field(30 * 86400, ge=60)
    """The longest lifetime of a token accepted, in seconds (30 days): `exp - iat`, or
    `exp - now` for a token without `iat`; longer is a 401 naming `exp`. `assay token --ttl`
    signs none longer."""
    assay_jwt_leeway_seconds: int = Field(30, ge=0, le=300)
    """Clock skew allowed when checking `exp`, `nbf` and `iat`, in seconds."""
    assay_operator_key: str = Field("", pattern=r"^([\x21-\x7e]{32,512})?$")
    """The operator's key: `Authorization: Bearer <it>` on an operator route
    (`PUT /api/v1/organizations/{id}/limits`) is the operator, who runs the deployment and is no
    tenant; no token or API key of an organization is, whatever its role (a 403 naming permission
    `operator`). 32-512 printable ASCII characters without spaces (e.g. `openssl rand -hex 32`);
    empty (the default): no operator route answers anyone but with that 403."""
    assay_oidc_jwks_url: str = ""
    """JWKS URL of an OpenID Connect identity provider; set, RS256/ES256 tokens it signs are
    accepted."""
    assay_oidc_issuer: str = ""
    """`iss` the identity provider's tokens carry (required with `assay_oidc_jwks_url`)."""
    assay_oidc_audience: str = ""
    """`aud` the identity provider's tokens carry for assay (required with
    `assay_oidc_jwks_url`)."""
    assay_oidc_org_claim: str = "org"
    """Claim of an identity provider's token that names the organization."""
    assay_agent_retries: int = Field(2, ge=0, le=10)
    """Retries of a provider error (5xx, 408, 429, timeout) before an attempt is `incomplete`."""
    assay_retry_backoff_seconds: float = Field(0.5, ge=0)
    assay_events_wait_seconds: float = Field(20, ge=0, le=25)
    """Longest wait of the live-updates long-poll, in seconds (API Gateway cuts at 29)."""
    assay_grade_again_seconds: float = Field(20, gt=0, le=25)
    """How long one "grade again" call grades before it answers with what is left (`pending`)."""
    assay_review_queue_limit: int = Field(5_000, ge=1, le=100_000)
    """Most answers a dataset's review queue holds waiting; a run's send beyond it is refused and
    the run says so (`routing_error`)."""
    assay_answer_inline_bytes: int = Field(300_000, ge=1_000)
    """Answers larger than this, in UTF-8 bytes, go to the results bucket; the attempt keeps a
    pointer and the answer's first 1,000 characters."""
    assay_answer_max_bytes: int = Field(1_048_576, ge=1_000)
    """The most of one answer kept, in UTF-8 bytes (1 MiB); a longer answer is kept cut at a
    character boundary, the attempt marked `answer_truncated` (issue 11, scope 7)."""
    assay_workspace_max_bytes: int = Field(1_048_576, ge=1_000)
    """The most one eval attempt's disposable workspace holds, in bytes (1 MiB)."""
    assay_public_url: str = ""
    """The API's address as agents reach it (e.g. `https://assay.example.com`): the tool gateway an
    `http` or `lambda` agent is given in each case payload is under it. Empty: the embedded stack
    sets its own; a deployment without one gives agents no gateway (their tool calls are kept as
    reported, `unverified`)."""
    assay_request_max_cost_usd: Decimal = Field(Decimal("10"), gt=0, allow_inf_nan=False)
    """The highest cost in USD one model request (an agent's try or a judge's call) may report or
    be priced at; beyond it the figure is not believed, nothing is charged to the budgets and the
    attempt is `incomplete` (the judge's score not graded) saying so."""
    assay_request_max_tokens: int = Field(2_000_000, ge=1)
    """The most tokens (input + output) one model request may report; beyond it, as for the cost
    bound."""
    assay_answer_url_seconds: int = Field(300, ge=1, le=3600)
    """How long a presigned URL to an answer kept in the results bucket stays valid, in
    seconds."""
    assay_python_agent_modules: str = ""
    """Comma-separated module prefixes a `python` agent's entrypoint may live under (`bench.agents`
    allows `bench.agents` and `bench.agents.x`); empty (a deployed stage): `runtime: python` is
    refused."""
    assay_lambda_function_prefix: str = "assay-agent-"
    """Prefix every `lambda` agent's function name must start with (the IAM policy grants invoke on
    it alone); empty: `runtime: lambda` is refused."""
    assay_allow_private_network: bool = False
    """Let `http`/`openai` agents and judges reach loopback and private ranges (`assay dev`, tests);
    link-local and metadata addresses are refused whatever this says."""

    assay_email_sender: str = "assay@example.com"
    """The verified SES sender of owner notices (verified by `infra` on a local stack)."""

    assay_log_format: Literal["json", "text"] | None = None
    """`json`: Powertools' structured lines on stdout (`chalicelib.logs`); `text`: the process's
    own logging left as it is (the CLI's quiet lines). Unset: `json` in a deployed stage."""
    assay_metrics: Literal["emf", "off"] | None = None
    """`emf`: CloudWatch metrics as Embedded Metric Format lines on stdout, through Powertools
    (`adapters.metrics`); `off`: none. Unset: `emf` in a deployed stage."""
    assay_metrics_namespace: str = Field("assay", min_length=1, max_length=255)
    """The CloudWatch namespace of the metrics."""
    powertools_log_level: str | None = None
    """Level of the JSON lines (`DEBUG`, `INFO`...; Powertools' own variable)."""
    aws_lambda_log_level: str | None = None
    """Set by Lambda from the function's logging configuration; `powertools_log_level` wins."""
    aws_endpoint_url: str | None = None
    """Endpoint of every AWS client (moto server or LocalStack); unset means AWS itself."""
    aws_default_region: str = "us-east-1"
    aws_lambda_function_name: str | None = None
    """Set by Lambda itself: this process is a deployed stage (`bootstrap.check_deployment`)."""

    @property
    def names(self) -> StackNames:
        """The stack's queue and bucket names (`chalicelib.names`)."""
        return StackNames(self.assay_resource_prefix, self.assay_results_bucket)

    @property
    def deployed(self) -> bool:
        """Whether this process is a Lambda function of a deployed stage."""
        return bool(self.aws_lambda_function_name)

    @property
    def log_format(self) -> str:
        """`assay_log_format`, or its default: `json` deployed, `text` elsewhere."""
        return self.assay_log_format or ("json" if self.deployed else "text")

    @property
    def metrics_format(self) -> str:
        """`assay_metrics`, or its default: `emf` deployed, `off` elsewhere."""
        return self.assay_metrics or ("emf" if self.deployed else "off")

    @property
    def request_max_cost_micros(self) -> int:
        """`assay_request_max_cost_usd` in integer micro-USD."""
        return int(self.assay_request_max_cost_usd * 1_000_000)

    @property
    def visibility_timeout_seconds(self) -> int:
        """Case-task visibility timeout: the Lambda timeout (case timeout + 60 s) plus a margin
        (docs/guides/deploy.md)."""
        return self.evaluation_case_timeout_seconds + 120


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process's settings, read from the environment once."""
    return Settings()


_HIDDEN_VALUE = ("secret", "key")
"""A setting whose name holds one of these words has its value left out of an error line."""
_KINDS: dict[Any, str] = {
    int: "a whole number",
    float: "a number",
    Decimal: "a number",
    bool: "true or false",
}


def _bounds(name: str) -> dict[str, Any]:
    """The field's numeric bounds as `{"ge": 0, "le": 5, ...}` (those it has)."""
    found: dict[str, Any] = {}
    for meta in Settings.model_fields[name].metadata:
        for bound in ("ge", "gt", "le", "lt"):
            if getattr(meta, bound, None) is not None:
                found[bound] = getattr(meta, bound)
    return found


def _rule(name: str, error_type: str, message: str) -> str:
    """What a valid value of setting `name` is, as "must be ..." (`settings_error_line`)."""
    field = Settings.model_fields[name]
    annotation = field.annotation
    choices = getattr(annotation, "__args__", ())
    literal = [a for c in choices for a in getattr(c, "__args__", ()) if isinstance(a, str)]
    if literal:
        return "must be one of " + ", ".join(literal) + " (or unset)"
    if annotation is bool:
        return "must be true or false"
    if error_type == "string_pattern_mismatch":
        pattern = next((m.pattern for m in field.metadata if getattr(m, "pattern", None)), "")
        return f"must match {pattern}" if pattern else message
    kind = _KINDS.get(annotation)
    if kind is None:
        return f"must be valid: {message[:1].lower()}{message[1:]}"
    b = _bounds(name)
    if annotation is int and "ge" in b and "le" in b:
        return f"must be {b['ge']}-{b['le']}"
    said = [
        f"{word} {b[bound]}"
        for bound, word in (("ge", "at least"), ("gt", "over"), ("le", "at most"), ("lt", "under"))
        if bound in b
    ]
    return f"must be {kind}" + (f", {' and '.join(said)}" if said else "")


def settings_error_line(exc: ValidationError) -> str:
    """One line for a `Settings` that did not validate, naming each bad setting by its
    environment variable, the value given and the rule: `EVAL_RERUNS=9: must be 0-5` (two bad
    settings: the two joined with `; `). The value of a setting whose name says `secret` or
    `key` is shown as `(hidden)`. An error of no field of `Settings` keeps pydantic's message."""
    said = []
    for error in exc.errors():
        name = str(error["loc"][0]) if error.get("loc") else ""
        if name not in Settings.model_fields:
            said.append(str(error.get("msg", "invalid")))
            continue
        value = error.get("input")
        shown = "(hidden)" if any(w in name for w in _HIDDEN_VALUE) else str(value)
        said.append(f"{name.upper()}={shown}: {_rule(name, str(error['type']), str(error['msg']))}")
    return "; ".join(said)
