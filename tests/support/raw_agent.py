"""An `http` agent on 127.0.0.1 that answers each case with bytes chosen by the test, sent as they
are: JSON escapes of lone surrogates, NUL, bytes that are not UTF-8 - what a careless or hostile
agent can send and `json.dumps` never would."""

from __future__ import annotations

import json
from collections import Counter

from tests.support.local_http import LocalServer


class RawAgent(LocalServer):
    """`with RawAgent({"c1": b'{"answer": "42 \\\\ud800"}'}) as agent:` serves `agent.url`; a case
    it has no bytes for gets `default`. `asked[case_id]` counts the requests per case."""

    def __init__(self, bodies: dict[str, bytes], default: bytes = b'{"answer": "42"}') -> None:
        self.bodies, self.default = bodies, default
        self.asked: Counter[str] = Counter()
        super().__init__(self._answer)
        self.url = f"{self.base}/agent"

    def _answer(self, path: str, raw: bytes) -> tuple[int, bytes]:
        case_id = str(json.loads(raw).get("case_id"))
        self.asked[case_id] += 1
        return 200, self.bodies.get(case_id, self.default)
