"""The token signing secret read from SSM Parameter Store, against moto's server over HTTP
(issue 13 scope 5): the stage names a `SecureString` (`ASSAY_JWT_SECRET_PARAMETER`), which is read
once, at the first token, and checked as the built-in secret's replacement must be."""

from __future__ import annotations

import uuid

import pytest

from chalicelib.adapters.tokens import issue
from chalicelib.bootstrap import Container, deployment_problems
from chalicelib.config import DEV_JWT_SECRET, Settings
from chalicelib.errors import ConfigurationError, UnauthenticatedError
from tests.support.models import models_kept

SECRET = "a-long-random-operator-secret-of-48-characters!!"


@pytest.fixture
def container(moto, monkeypatch):
    """`container(parameter)` -> a deployed stage's container reading its secret from
    `parameter` on the moto server."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")

    def make(parameter: str) -> Container:
        return Container(
            Settings(
                aws_endpoint_url=moto.url,
                assay_jwt_secret_parameter=parameter,
                aws_lambda_function_name="assay-dev-api_handler",
            )
        )

    with models_kept():
        yield make


def _put(aws_client, value: str) -> str:
    name = f"/assay/jwt-secret-{uuid.uuid4().hex[:8]}"
    aws_client("ssm").put_parameter(Name=name, Value=value, Type="SecureString")
    return name


def _token(c: Container, secret: str) -> str:
    s = c.settings
    return issue(
        "acme",
        "ops@acme.test",
        secret=secret,
        issuer=s.assay_jwt_issuer,
        audience=s.assay_jwt_audience,
        ttl_seconds=600,
    )


def test_tokens_are_checked_with_the_parameter_s_secret_and_never_the_built_in_one(
    container, aws_client, moto
):
    c = container(_put(aws_client, SECRET))
    assert deployment_problems(c.settings) == []  # the built-in secret in the settings is unused
    who = c.tokens.identify(_token(c, SECRET))
    assert (who.org_id, who.user_id) == ("acme", "ops@acme.test")
    with pytest.raises(UnauthenticatedError):
        c.tokens.identify(_token(c, DEV_JWT_SECRET))
    assert c.signing_settings().assay_jwt_secret == SECRET


def test_the_parameter_is_read_once_per_process(container, aws_client, moto):
    name = _put(aws_client, SECRET)
    c = container(name)
    token = _token(c, SECRET)
    moto.reset_counts()
    for _ in range(5):
        c.tokens.identify(token)
    assert moto.requests().get("ssm.GetParameter") == 1, moto.requests()
    # Changed afterwards, the process keeps what it read (a new cold start reads the new one).
    aws_client("ssm").put_parameter(Name=name, Value="x" * 40, Type="SecureString", Overwrite=True)
    assert c.tokens.identify(token).org_id == "acme"


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("short-secret", "shorter than 32 characters"),
        (DEV_JWT_SECRET, "built-in development secret"),
    ],
)
def test_a_parameter_holding_no_safe_secret_refuses_every_token(container, aws_client, value, why):
    c = container(_put(aws_client, value))
    with pytest.raises(ConfigurationError, match=why) as refused:
        c.tokens.identify(_token(c, value))
    assert value not in str(refused.value)  # the value is never repeated


def test_a_missing_parameter_is_named(container):
    c = container("/assay/not-there")
    with pytest.raises(ConfigurationError, match="'/assay/not-there', which does not exist"):
        c.signing_settings()


def test_without_a_parameter_nothing_is_read(container, moto):
    c = container("")
    moto.reset_counts()
    assert c.signing_settings() is c.settings
    assert not any(k.startswith("ssm.") for k in moto.requests())
