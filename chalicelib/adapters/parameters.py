"""SSM Parameter Store: the operator's secrets of the stage itself (issue 13), e.g. the HS256
token signing secret, kept as a `SecureString` the stage names (`ASSAY_JWT_SECRET_PARAMETER`).

Not the organizations' secrets (Secrets Manager, `adapters.secrets_manager`): a parameter is named
by the operator's settings only, never by anything a tenant sends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chalicelib.adapters.lazy import LazyClient
from chalicelib.errors import ConfigurationError


class ParameterStore(LazyClient):
    """Reads decrypted parameters; the client is built on first use."""

    def __init__(self, client_factory: Callable[[], Any]) -> None:
        super().__init__(client_factory)

    def secure_string(self, name: str, setting: str) -> str:
        """The decrypted value of parameter `name`, which setting `setting` names.

        Raises:
            ConfigurationError: the parameter does not exist, or is empty (naming `setting` and
                `name`, never a value); botocore's other errors (access denied, throttling)
                as they come.
        """
        from botocore.exceptions import ClientError

        try:
            reply = self.client.get_parameter(Name=name, WithDecryption=True)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ParameterNotFound":
                raise
            raise ConfigurationError(
                f"{setting} names the SSM parameter {name!r}, which does not exist: create it "
                "(aws ssm put-parameter --type SecureString ...)"
            ) from None
        value = str(reply.get("Parameter", {}).get("Value") or "")
        if not value:
            raise ConfigurationError(f"the SSM parameter {name!r} ({setting}) is empty")
        return value
