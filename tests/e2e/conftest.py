"""The e2e tests' fixtures are in `tests/conftest.py` (shared with `tests/security/`); the helpers
many e2e modules import by this name are re-exported here, beside `cli`: the `assay` command run
in-process (a module with a `cli` fixture of its own keeps it)."""

from collections.abc import Callable
from typing import NamedTuple

import pytest

from tests.support.e2e import Api, cases, sleepy_spec, wait_for  # noqa: F401 - re-exported for the e2e modules


class Done(NamedTuple):
    """What one `assay` command did: its exit code and what it printed."""

    code: int
    out: str
    err: str


@pytest.fixture
def cli(stack, api, monkeypatch, capsys) -> Callable[..., Done]:
    """`cli(*args) -> Done(code, out, err)`: the `assay` command in-process through its real entry
    point (`assay_local.cli.main`) as `api`'s organization (`--token` overrides who asks). A usage
    error argparse refuses is its exit code (3) and what it printed, like any other."""
    from assay_local.cli import main
    from chalicelib.api.common import issue_token

    s = stack.settings
    token = issue_token(
        api.org_id, api.user_id, secret=s.assay_jwt_secret, issuer=s.assay_jwt_issuer
    )
    monkeypatch.setenv("ASSAY_URL", stack.api_url)
    monkeypatch.setenv("ASSAY_TOKEN", token)

    def run(*args: str) -> Done:
        capsys.readouterr()
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse refuses a usage error this way (exit status 3)
            code = exc.code if isinstance(exc.code, int) else 3
        seen = capsys.readouterr()
        return Done(code, seen.out, seen.err)

    return run
