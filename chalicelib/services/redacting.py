"""Redaction with an organization's own secret values (docs/reference/data-protection.md).

`domain.redaction` recognizes secrets by their shape; an organization's stored secrets
(`c.secrets.values(org_id)`) are recognized by their value as well, wherever they appear. Every
use case that keeps or shows text an agent, a judge or a tenant wrote passes it through
`for_org(c, org_id)` first: answers, calls, errors, reasons, `model`, `guardrail`, notices and
email, suite results, dataset cases and a dataset's scoring settings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from chalicelib.bootstrap import Container
from chalicelib.domain.redaction import (
    Known,
    first_secret,
    redact,
    redact_value,
    secrets_in,
)
from chalicelib.domain.redaction_patterns import redact_case_patterns, redact_scoring_patterns
from chalicelib.errors import InvalidInputError

T = TypeVar("T")


@dataclass(frozen=True)
class Redactor:
    """Redacts with the values of one organization's secrets, read once."""

    known: tuple[Known, ...] = ()

    def text(self, value: T) -> T:
        """A string with every secret replaced (anything else, e.g. None, unchanged)."""
        return redact(value, self.known) if isinstance(value, str) else value  # type: ignore[return-value]

    def value(self, value: Any) -> Any:
        """Every string inside a JSON-like value redacted (dict keys included)."""
        return redact_value(value, self.known)

    def patterns(self, case: dict[str, Any]) -> dict[str, Any]:
        """A case (as JSON) with the regex patterns of its checks redacted, secrets written with
        escapes included (`redaction_patterns.redact_case_patterns`); the rest unchanged."""
        return redact_case_patterns(case, self.known)

    def scoring_patterns(self, scoring: dict[str, Any]) -> dict[str, Any]:
        """A dataset's scoring (as JSON) with its `regex` and `json_schema` settings redacted by the
        rule a case's checks are (`redaction_patterns.redact_scoring_patterns`); the rest
        unchanged."""
        return redact_scoring_patterns(scoring, self.known)

    def knowing(self, *known: Known) -> Redactor:
        """This redactor, knowing `known` values too (`(value, kind)`: e.g. an attempt's tool
        gateway token, `[REDACTED:tool_token]`)."""
        return Redactor(self.known + known) if known else self

    def learning(self, *texts: str | None) -> Redactor:
        """This redactor, knowing the secrets in `texts` too: for text that quotes them, perhaps cut
        short (a scorer's reason quoting the original answer as `'...AKIAIOSF'...`)."""
        found = secrets_in(*texts, known=self.known)
        return Redactor(self.known + tuple(found)) if found else self


def refuse_secrets(c: Container, org_id: str, value: Any, field: str) -> None:
    """Refuse tenant configuration that holds a secret - an agent spec, a model profile's settings,
    a judge spec: it is stored, shown and published as written, so a key in it would be kept in the
    clear (and an organization's write-only secret could be read back by pasting it in).

    Raises:
        InvalidInputError: naming the field that holds it (`spec.options.token`), and its kind,
            never its value.
    """
    found = first_secret(value, for_org(c, org_id).known)
    if found is not None:
        path, kind = found
        where = f"{field}{path}" if field else (path.removeprefix(".") or "body")
        raise InvalidInputError(
            f"{where} holds a secret ({kind}): what is written here is stored and shown as "
            "written. Store the value with PUT /api/v1/secrets/{name} and refer to it "
            '("api_key_secret": "<name>", or a header {"secret": "<name>"})',
            field=where,
        )


def for_org(c: Container, org_id: str) -> Redactor:
    """A redactor knowing the organization's stored secret values (cached by the secrets store).

    A secrets store that cannot be read raises: nothing is kept half-redacted (a case task is
    then delivered again).
    """
    return Redactor(tuple(c.secrets.values(org_id)))
