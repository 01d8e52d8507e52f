"""Composition root: the only module that knows every layer.

Adapters are built lazily on first use (a Lambda cold start pays for nothing it does not
use) and cached per process. Tests and the embedded stack call `reset()` after changing
the environment, or `override()` to swap a collaborator for a fake.
"""

from __future__ import annotations

import threading
from functools import cached_property
from typing import Any

from chalicelib import names
from chalicelib.clock import Clock, SystemClock
from chalicelib.config import Settings, get_settings


class Container:
    """Every collaborator the services need, built once per process on first use."""

    def __init__(self, settings: Settings, clock: Clock | None = None) -> None:
        self.settings = settings
        self.clock: Clock = clock or SystemClock()
        from chalicelib.adapters import stores, tables

        tables.configure(prefix=settings.assay_resource_prefix, endpoint_url=settings.aws_endpoint_url,
                         region=settings.aws_default_region)
        stores.reset_connections()

    def _client(self, service: str) -> Any:
        import boto3
        from botocore.config import Config

        return boto3.session.Session().client(
            service, endpoint_url=self.settings.aws_endpoint_url,
            region_name=self.settings.aws_default_region,
            config=Config(retries={"max_attempts": 5, "mode": "standard"}, max_pool_connections=50))

    @cached_property
    def orgs(self):
        from chalicelib.adapters.stores import OrganizationStore
        return OrganizationStore()

    @cached_property
    def agents(self):
        from chalicelib.adapters.stores import AgentStore
        return AgentStore()

    @cached_property
    def model_profiles(self):
        from chalicelib.adapters.stores import ModelProfileStore
        return ModelProfileStore()

    @cached_property
    def spend(self):
        from chalicelib.adapters.stores import SpendStore
        return SpendStore()

    @cached_property
    def judges(self):
        from chalicelib.adapters.stores import JudgeStore
        return JudgeStore()

    @cached_property
    def environments(self):
        from chalicelib.adapters.stores import EnvironmentStore
        return EnvironmentStore()

    @cached_property
    def suites(self):
        from chalicelib.adapters.stores import SuiteStore
        return SuiteStore()

    @cached_property
    def promotions(self):
        from chalicelib.adapters.stores import PromotionStore
        return PromotionStore()

    @cached_property
    def notifications(self):
        from chalicelib.adapters.stores import NotificationStore
        return NotificationStore()

    @cached_property
    def mailer(self):
        from chalicelib.adapters.mailer import SesMailer
        return SesMailer(lambda: self._client("ses"), self.settings.assay_email_sender)

    @cached_property
    def datasets(self):
        from chalicelib.adapters.stores import DatasetStore
        return DatasetStore()

    @cached_property
    def runs(self):
        from chalicelib.adapters.stores import RunStore
        return RunStore()

    @cached_property
    def case_queue(self):
        from chalicelib.adapters.queue import SqsQueue
        return SqsQueue(lambda: self._client("sqs"), names.CASE_TASKS_QUEUE)

    @cached_property
    def agent_events_dlq(self):
        from chalicelib.adapters.queue import SqsQueue
        return SqsQueue(lambda: self._client("sqs"), names.AGENT_EVENTS_DLQ)

    @cached_property
    def bucket(self):
        from chalicelib.adapters.bucket import ResultsBucket
        return ResultsBucket(lambda: self._client("s3"), names.RESULTS_BUCKET)

    @cached_property
    def runtimes(self):
        from chalicelib.adapters.runtimes import build_runtimes
        return build_runtimes(self.settings.assay_recordings_dir or None,
                              lambda_client_factory=lambda: self._client("lambda"))


_lock = threading.Lock()
_container: Container | None = None


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
