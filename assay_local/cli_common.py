"""What the `assay` commands share: the development token, quiet logs, the embedded stack."""

from __future__ import annotations

import argparse
import re

DEFAULT_ORG = "org_default"
DEFAULT_USER = "dev@assay.local"


def dev_token(
    org: str = DEFAULT_ORG, user: str = DEFAULT_USER, ttl_seconds: int | None = None
) -> str:
    """An HS256 token for `org`/`user`, valid `ttl_seconds` (default
    `ASSAY_TOKEN_TTL_SECONDS`, 8 h).

    Raises:
        ValueError: the lifetime is longer than the service accepts
            (`ASSAY_JWT_MAX_LIFETIME_SECONDS`), or HS256 is off.
    """
    from chalicelib.api.common import issue_token
    from chalicelib.config import get_settings

    s = get_settings()
    ttl = ttl_seconds or s.assay_token_ttl_seconds
    if ttl > s.assay_jwt_max_lifetime_seconds:
        asked = "--ttl" if ttl_seconds else "ASSAY_TOKEN_TTL_SECONDS"
        raise ValueError(
            f"{asked}: {ttl} s is longer than a token may live here "
            f"({s.assay_jwt_max_lifetime_seconds} s, ASSAY_JWT_MAX_LIFETIME_SECONDS): ask for "
            "a shorter lifetime"
        )
    return issue_token(
        org,
        user,
        secret=s.assay_jwt_secret,
        issuer=s.assay_jwt_issuer,
        audience=s.assay_jwt_audience,
        ttl_seconds=ttl,
    )


_TTL = re.compile(r"^\s*(\d+)\s*([smhd]?)\s*$")
_TTL_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_ttl(text: str) -> int:
    """`"3600"`, `"90s"`, `"30m"`, `"12h"`, `"7d"` -> seconds. Raises
    `argparse.ArgumentTypeError`."""
    m = _TTL.match(text.lower())
    if not m or int(m.group(1)) <= 0:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a lifetime: seconds, or a number with s, m, h or d (e.g. 30m, 12h)"
        )
    return int(m.group(1)) * _TTL_UNITS[m.group(2)]


def quiet_logs() -> None:
    import logging

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for noisy in ("werkzeug", "botocore", "moto", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.ERROR)


def start_stack(workers: int, env: dict[str, str] | None = None, tick_seconds: float | None = None):
    from assay_local.stack import EmbeddedStack

    # Long polls: an idle stack asks the queues a few times a minute, not a few times a second.
    return EmbeddedStack(
        env=env or {}, workers=workers, tick_seconds=tick_seconds, poll_wait_seconds=10
    ).start()
