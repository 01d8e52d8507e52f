"""Egress for tests that never ask real DNS: names resolve from a mapping the test gives (a name it
lacks does not resolve), so a refusal is checked before any connection and only 127.0.0.1 is ever
contacted."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from chalicelib.adapters.egress import Egress


def stub_egress(names: Mapping[str, Sequence[str]], private: bool = True) -> Egress:
    """An `Egress` resolving each host through `names` (`{host: [address, ...]}`; any other host
    raises OSError, as a name that does not resolve), private networks allowed when `private`."""

    def resolve(host: str, port: int) -> list[str]:
        if host not in names:
            raise OSError(f"{host} does not resolve")
        return list(names[host])

    return Egress(lambda: resolve, lambda: private)
