"""Composition root: the only module that knows every layer.

Adapters are built lazily on first use (a Lambda cold start pays for nothing it does not
use) and cached per process; the ports are imported for type checking only, so importing this
module (every Lambda does as it starts) costs the settings and little else. Tests and the
embedded stack call `reset()` after changing the environment, or `override()` to swap a
collaborator for a fake.
"""

from __future__ import annotations

import threading
from functools import cached_property
from typing import TYPE_CHECKING, Any

from chalicelib.clock import Clock, SystemClock
from chalicelib.config import DEV_JWT_SECRET, Settings, get_settings
from chalicelib.errors import ConfigurationError

if TYPE_CHECKING:  # the adapters are built lazily, on first use; the ports name what they are
    from chalicelib.adapters.egress import Resolver
    from chalicelib.adapters.tokens import TokenVerifier
    from chalicelib.services.ports import Runtimes
    from chalicelib.services.ports.access import ApiKeys, Members
    from chalicelib.services.ports.automation import Notifications, Promotions, Suites
    from chalicelib.services.ports.catalog import (
        Agents,
        Datasets,
        Environments,
        Evaluations,
        Judges,
        ModelProfiles,
    )
    from chalicelib.services.ports.ledger import Runs
    from chalicelib.services.ports.messaging import CaseQueue, DeadLetterQueue, Mailer
    from chalicelib.services.ports.objects import AnswerBucket, Recordings, Secrets
    from chalicelib.services.ports.review import ReviewQueue
    from chalicelib.services.ports.telemetry import Metrics
    from chalicelib.services.ports.tenants import Budgets, Organizations
    from chalicelib.services.ports.tools import (
        ConnectionStore,
        ToolSessions,
        ToolTransport,
        Workspaces,
    )
    from chalicelib.services.ports.usage import Usage


class Container:
    """Every collaborator the services need, built once per process on first use."""

    def __init__(self, settings: Settings, clock: Clock | None = None) -> None:
        self.settings = settings
        self.clock: Clock = clock or SystemClock()
        from chalicelib.adapters import stores, tables

        tables.configure(
            prefix=settings.assay_resource_prefix,
            endpoint_url=settings.aws_endpoint_url,
            region=settings.aws_default_region,
        )
        stores.reset_connections()
        self._session: Any = None
        self._clients: dict[str, Any] = {}
        self._clients_lock = threading.Lock()
        self._parameters: dict[str, str] = {}
        self._parameters_lock = threading.Lock()

    def _client(self, service: str) -> Any:
        """The container's one boto3 client of `service`, made on first use (thread-safe, like
        every botocore client). A client per queue or bucket cost a session and a client each,
        ~100 ms of CPU, in the first request that used it (issue 12)."""
        with self._clients_lock:
            client = self._clients.get(service)
            if client is None:
                import boto3
                from botocore.config import Config

                if self._session is None:
                    self._session = boto3.session.Session()
                client = self._clients[service] = self._session.client(
                    service,
                    endpoint_url=self.settings.aws_endpoint_url,
                    region_name=self.settings.aws_default_region,
                    config=Config(
                        retries={"max_attempts": 5, "mode": "standard"}, max_pool_connections=50
                    ),
                )
            return client

    @cached_property
    def tokens(self) -> TokenVerifier:
        """Verifies bearer tokens (HS256, or an identity provider's through JWKS) with the settings
        of the moment (`override(settings=...)` takes effect at once), the HS256 secret read from
        its parameter when the stage names one (`signing_settings`)."""
        from chalicelib.adapters.tokens import TokenVerifier

        return TokenVerifier(self.signing_settings)

    def signing_settings(self) -> Settings:
        """The settings with `assay_jwt_secret` taken from the SSM parameter
        `assay_jwt_secret_parameter` names, when it names one (read once per process, at the first
        token: a cold start of a function that checks no token never reads it).

        Raises:
            ConfigurationError: the parameter is missing or empty, or its value is no safe secret
                (`secret_problems`); the API answers a 500 and logs why.
        """
        settings = self.settings
        name = settings.assay_jwt_secret_parameter
        if not name:
            return settings
        with self._parameters_lock:
            secret = self._parameters.get(name)
            if secret is None:
                from chalicelib.adapters.parameters import ParameterStore

                setting = "ASSAY_JWT_SECRET_PARAMETER"
                secret = ParameterStore(lambda: self._client("ssm")).secure_string(name, setting)
                problems = secret_problems(secret, f"the SSM parameter {name!r}")
                if problems:
                    raise ConfigurationError(
                        "assay refuses to sign or check tokens: " + "; ".join(problems)
                    )
                self._parameters[name] = secret
        return settings.model_copy(update={"assay_jwt_secret": secret})

    @cached_property
    def orgs(self) -> Organizations:
        from chalicelib.adapters.stores import OrganizationStore

        return OrganizationStore()

    @cached_property
    def members(self) -> Members:
        from chalicelib.adapters.stores.access import MemberStore

        return MemberStore()

    @cached_property
    def api_keys(self) -> ApiKeys:
        from chalicelib.adapters.stores.access import ApiKeyStore

        return ApiKeyStore()

    @cached_property
    def agents(self) -> Agents:
        from chalicelib.adapters.stores import AgentStore

        return AgentStore()

    @cached_property
    def model_profiles(self) -> ModelProfiles:
        from chalicelib.adapters.stores import ModelProfileStore

        return ModelProfileStore()

    @cached_property
    def spend(self) -> Budgets:
        from chalicelib.adapters.stores import SpendStore

        return SpendStore()

    @cached_property
    def usage(self) -> Usage:
        from chalicelib.adapters.stores.usage import UsageStore

        return UsageStore()

    @cached_property
    def judges(self) -> Judges:
        from chalicelib.adapters.stores import JudgeStore

        return JudgeStore()

    @cached_property
    def environments(self) -> Environments:
        from chalicelib.adapters.stores import EnvironmentStore

        return EnvironmentStore()

    @cached_property
    def suites(self) -> Suites:
        from chalicelib.adapters.stores import SuiteStore

        return SuiteStore()

    @cached_property
    def promotions(self) -> Promotions:
        from chalicelib.adapters.stores import PromotionStore

        return PromotionStore()

    @cached_property
    def notifications(self) -> Notifications:
        from chalicelib.adapters.stores import NotificationStore

        return NotificationStore()

    @cached_property
    def mailer(self) -> Mailer:
        from chalicelib.adapters.mailer import SesMailer

        return SesMailer(lambda: self._client("ses"), self.settings.assay_email_sender)

    @cached_property
    def metrics(self) -> Metrics:
        """What the services count (`services.ports.telemetry`): CloudWatch EMF lines on stdout in
        a deployed stage (`Settings.metrics_format`), nothing elsewhere; the `service` dimension is
        the stack's root (`assay` for the prefix `assay-`), so two stacks' figures stay apart."""
        from chalicelib import names
        from chalicelib.adapters.metrics import EmfMetrics, NoMetrics

        if self.settings.metrics_format != "emf":
            return NoMetrics()
        root = names.secret_name_prefix(self.settings.assay_resource_prefix)
        return EmfMetrics(self.settings.assay_metrics_namespace, root)

    @cached_property
    def datasets(self) -> Datasets:
        from chalicelib.adapters.stores import DatasetStore

        return DatasetStore()

    @cached_property
    def evaluations(self) -> Evaluations:
        from chalicelib.adapters.stores import EvaluationStore

        return EvaluationStore()

    @cached_property
    def runs(self) -> Runs:
        from chalicelib.adapters.stores import RunStore

        return RunStore()

    @cached_property
    def case_queue(self) -> CaseQueue:
        from chalicelib.adapters.queue import SqsQueue

        return SqsQueue(lambda: self._client("sqs"), self.settings.names.case_tasks_queue)

    @cached_property
    def case_dlq(self) -> DeadLetterQueue:
        from chalicelib.adapters.queue import SqsQueue

        return SqsQueue(lambda: self._client("sqs"), self.settings.names.case_tasks_dlq)

    @cached_property
    def agent_events_dlq(self) -> DeadLetterQueue:
        from chalicelib.adapters.queue import SqsQueue

        return SqsQueue(lambda: self._client("sqs"), self.settings.names.agent_events_dlq)

    @cached_property
    def bucket(self) -> AnswerBucket:
        from chalicelib.adapters.bucket import ResultsBucket

        return ResultsBucket(lambda: self._client("s3"), self.settings.names.results_bucket)

    @cached_property
    def secrets(self) -> Secrets:
        """The organizations' secrets (Secrets Manager): `get`, `put`, `list`, `meta`, `delete`,
        `values`."""
        from chalicelib.adapters.secrets_manager import OrgSecrets

        return OrgSecrets(
            lambda: self._client("secretsmanager"), self.settings.assay_resource_prefix
        )

    @cached_property
    def recordings(self) -> Recordings:
        """The organizations' recordings (results bucket): `load`, `put`, `list`, `meta`,
        `delete`."""
        from chalicelib.adapters.recording_bucket import OrgRecordings

        return OrgRecordings(lambda: self._client("s3"), self.settings.names.results_bucket)

    @cached_property
    def connections(self) -> ConnectionStore:
        """The organizations' connections, where their agents' tools run."""
        from chalicelib.adapters.stores.connections import ConnectionStore as Store

        return Store()

    @cached_property
    def tool_sessions(self) -> ToolSessions:
        """The eval attempts' sessions at the tool gateway."""
        from chalicelib.adapters.stores.tool_sessions import ToolSessionStore

        return ToolSessionStore()

    @cached_property
    def review(self) -> ReviewQueue:
        """The datasets' review queues and their audit entries."""
        from chalicelib.adapters.stores.review import ReviewStore

        return ReviewStore()

    @cached_property
    def tool_transport(self) -> ToolTransport:
        """Makes calls on connections, egress-checked like the runtimes (reads `settings` and
        `resolver` at call time)."""
        from chalicelib.adapters.egress import Egress
        from chalicelib.adapters.tool_transport import ConnectionTransport

        return ConnectionTransport(
            Egress(lambda: self.resolver, lambda: self.settings.assay_allow_private_network)
        )

    @cached_property
    def workspaces(self) -> Workspaces:
        """The eval attempts' disposable workspaces, in the results bucket."""
        from chalicelib.adapters.bucket import ResultsBucket
        from chalicelib.adapters.workspaces import BucketWorkspaces

        bucket = self.bucket
        assert isinstance(bucket, ResultsBucket)  # noqa: S101 - the one implementation
        return BucketWorkspaces(bucket, lambda: self.settings.assay_workspace_max_bytes)

    @cached_property
    def resolver(self) -> Resolver:
        """`resolver(host, port) -> [ip, ...]` egress checks resolve names with (tests stub it)."""
        from chalicelib.adapters.egress import system_resolver

        return system_resolver

    @cached_property
    def runtimes(self) -> Runtimes:
        """The agent runtimes; they read `settings` and `resolver` at call time, so `override`
        applies at once."""
        from chalicelib.adapters.runtimes import build_runtimes

        return build_runtimes(
            settings=lambda: self.settings,
            resolver=lambda: self.resolver,
            lambda_client_factory=lambda: self._client("lambda"),
        )


_lock = threading.Lock()
_container: Container | None = None


def secret_problems(secret: str, where: str) -> list[str]:
    """Why `secret` may not sign tokens of a deployed stage (empty: it may, or it is empty, which
    turns HS256 off); `where` names where it was read (`ASSAY_JWT_SECRET`, a parameter)."""
    if secret == DEV_JWT_SECRET:
        return [
            f"{where} is the built-in development secret, which is public: set "
            "ASSAY_JWT_SECRET_PARAMETER to an SSM SecureString parameter holding a random value of "
            '32 characters or more, or set ASSAY_JWT_SECRET to "" and configure an identity '
            "provider (ASSAY_OIDC_JWKS_URL, ASSAY_OIDC_ISSUER, ASSAY_OIDC_AUDIENCE)"
        ]
    if secret and len(secret) < 32:
        return [f"{where} is shorter than 32 characters: use a random value of 32 or more"]
    return []


def deployment_problems(settings: Settings) -> list[str]:
    """What keeps `settings` from running a deployed stage safely (empty: nothing).

    A deployed stage (Lambda sets `AWS_LAMBDA_FUNCTION_NAME`) must not sign or accept tokens with
    the built-in secret - it is public, so anyone could forge a token for any organization - nor
    with a short one (a secret read from `ASSAY_JWT_SECRET_PARAMETER` is checked when it is read,
    at the first token); it may turn HS256 off (`ASSAY_JWT_SECRET=""`) in favour of an identity
    provider, which then needs its issuer and audience. Local stacks (`assay dev`, tests) are not
    deployed stages and may use the built-in secret.
    """
    if not settings.aws_lambda_function_name:
        return []
    problems: list[str] = []
    # A secret read from its parameter is checked when it is read (`Container.signing_settings`).
    from_parameter = bool(settings.assay_jwt_secret_parameter)
    secret = "parameter" if from_parameter else settings.assay_jwt_secret
    if not from_parameter:
        problems += secret_problems(secret, "ASSAY_JWT_SECRET")
    oidc = settings.assay_oidc_jwks_url
    if oidc and not (settings.assay_oidc_issuer and settings.assay_oidc_audience):
        problems.append(
            "ASSAY_OIDC_JWKS_URL is set without ASSAY_OIDC_ISSUER and ASSAY_OIDC_AUDIENCE"
        )
    if not secret and not oidc:
        problems.append(
            "no token can be verified: ASSAY_JWT_SECRET is empty and ASSAY_OIDC_JWKS_URL is not set"
        )
    return problems


def check_deployment(settings: Settings | None = None) -> None:
    """Refuse to start a deployed stage that is not safe to run (`deployment_problems`); `app.py`
    calls it at import, so a cold start fails at once with a clear message.

    Raises:
        ConfigurationError: naming each setting at fault.
    """
    problems = deployment_problems(settings or get_settings())
    if problems:
        raise ConfigurationError(
            "assay refuses to start this deployed stage: " + "; ".join(problems)
        )


def container() -> Container:
    """The process's container, built on first call."""
    global _container
    if _container is None:
        with _lock:
            if _container is None:
                _container = Container(get_settings())
    return _container


def reset(clock: Clock | None = None) -> Container:
    """Re-read settings from the environment and rebuild the container (tests, embedded stack)."""
    global _container
    get_settings.cache_clear()
    with _lock:
        _container = Container(get_settings(), clock)
    return _container


def override(**collaborators: Any) -> Container:
    """Replace collaborators of the current container (e.g. `clock=FixedClock(...)`)."""
    c = container()
    for name, value in collaborators.items():
        c.__dict__[name] = value
    return c
