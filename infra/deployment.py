"""One deployment of assay: the prefix and the few names an operator chooses, and what follows.

One prefix names everything a stack owns (issue 13): its tables, queues, results bucket, IAM
policy resources and the root of its secrets. Two stacks with two prefixes share nothing. The
operator chooses, besides the prefix, the bucket (S3 names are global: by default it is named after
the account, `<prefix>results-<account id>`, which CloudFormation fills in), the SSM parameter
holding the token signing secret (by default `/<root>/jwt-secret`, `<root>` being the prefix
without its `-`), the SES sender of owner notices, and any other stage variable.

`infra.cloudformation` (the data stack), `infra.policy` (the Lambdas' role) and `infra.package`
(the app stack) all build from a `Deployment`, so they cannot disagree on a name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chalicelib import names

DEFAULT_CASE_TIMEOUT_SECONDS = 600
"""`EVALUATION_CASE_TIMEOUT_SECONDS`'s default (docs/reference/settings.md)."""
ACCOUNT = "${AWS::AccountId}"
"""CloudFormation's pseudo parameter, filled in when the stack is deployed (`Fn::Sub`)."""


def sub(value: Any) -> Any:
    """`value`, with every string that holds a `${...}` made an `Fn::Sub` (in dicts and lists)."""
    if isinstance(value, str):
        return {"Fn::Sub": value} if "${" in value else value
    if isinstance(value, dict):
        return {k: sub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [sub(v) for v in value]
    return value


def default_parameter(prefix: str) -> str:
    """`/<root>/jwt-secret`: the SSM parameter a deployment reads its signing secret from unless
    told otherwise (`"assay-"` -> `/assay/jwt-secret`)."""
    return f"/{names.secret_name_prefix(prefix)}/jwt-secret"


@dataclass(frozen=True)
class Deployment:
    """What an operator chooses for one stack; every name of it follows from these.

    Attributes:
        prefix: `ASSAY_RESOURCE_PREFIX`: lower-case letters, digits and `-`, ending with `-`, at
            most 40.
        bucket: the results bucket; empty: `<prefix>results-${AWS::AccountId}`.
        case_timeout_seconds: `EVALUATION_CASE_TIMEOUT_SECONDS`: the case-tasks queue's
            visibility and the case worker's Lambda timeout follow it.
        lambda_prefix: `ASSAY_LAMBDA_FUNCTION_PREFIX`; None: `<prefix>agent-` (the default stack's
            `assay-agent-`); empty: no `lambda` agents.
        jwt_secret_parameter: the SSM `SecureString` holding the HS256 secret; None: the default
            (`default_parameter`); empty: none (HS256 off, or an identity provider, through
            `environment`).
        email_sender: `ASSAY_EMAIL_SENDER`, an SES-verified address; empty: the settings' default.
        environment: more stage variables, e.g. `ASSAY_OIDC_JWKS_URL`, as `(name, value)` pairs.

    Raises (constructing one):
        ValueError: a prefix, bucket or parameter name AWS would refuse, naming it.
    """

    prefix: str = names.DEFAULT_PREFIX
    bucket: str = ""
    case_timeout_seconds: int = DEFAULT_CASE_TIMEOUT_SECONDS
    lambda_prefix: str | None = None
    jwt_secret_parameter: str | None = None
    email_sender: str = ""
    environment: tuple[tuple[str, str], ...] = field(default=())

    def __post_init__(self) -> None:
        from pydantic import ValidationError

        from chalicelib.config import Settings

        values: dict[str, Any] = {
            "assay_resource_prefix": self.prefix,
            "assay_jwt_secret_parameter": self.parameter,
            "evaluation_case_timeout_seconds": self.case_timeout_seconds,
        }
        if self.bucket:
            values["assay_results_bucket"] = self.bucket
        try:
            Settings.model_validate(Settings.model_construct().model_dump() | values)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise ValueError(f"{first['loc'][0]}: {first['msg']}") from None

    @property
    def bucket_name(self) -> str:
        """The results bucket's name; it may hold `${AWS::AccountId}` (`sub` it in a template)."""
        return self.bucket or f"{self.prefix}results-{ACCOUNT}"

    @property
    def names(self) -> names.StackNames:
        """The stack's queue and bucket names."""
        return names.StackNames(self.prefix, self.bucket_name)

    @property
    def agent_functions(self) -> str:
        """The prefix of the functions `lambda` agents may be; empty: none."""
        return f"{self.prefix}agent-" if self.lambda_prefix is None else self.lambda_prefix

    @property
    def parameter(self) -> str:
        """The SSM parameter of the signing secret; empty: none."""
        if self.jwt_secret_parameter is None:
            return default_parameter(self.prefix)
        return self.jwt_secret_parameter

    def variables(self) -> dict[str, str]:
        """Every Lambda's environment: the settings that name the stack's resources (values may
        hold `${AWS::AccountId}`), then `environment` on top."""
        out = {
            "ASSAY_RESOURCE_PREFIX": self.prefix,
            "ASSAY_RESULTS_BUCKET": self.bucket_name,
            "ASSAY_LAMBDA_FUNCTION_PREFIX": self.agent_functions,
            "EVALUATION_CASE_TIMEOUT_SECONDS": str(self.case_timeout_seconds),
        }
        if self.parameter:
            out["ASSAY_JWT_SECRET_PARAMETER"] = self.parameter
        if self.email_sender:
            out["ASSAY_EMAIL_SENDER"] = self.email_sender
        out.update(dict(self.environment))
        return out
