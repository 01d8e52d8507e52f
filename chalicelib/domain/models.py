"""Frozen value types shared by the domain rules, the services and the adapters.

These are plain data: the stores turn rows into them, the runtimes and scorers produce them.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from chalicelib.domain.enums import AttemptState, CallStatus, Split
from chalicelib.domain.limits import MAX_CASE_BYTES


class Frozen(BaseModel):
    """Base of every domain value: immutable, unknown fields refused."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class ExpectedCall(Frozen):
    """A tool call a case expects the agent to make."""

    name: str
    """The tool's name."""
    arguments: dict[str, Any] | None = None
    """Arguments that must match exactly (keys absent here are not checked); None checks the name
    only."""


class Check(Frozen):
    """One scorer applied to one case, with its parameters (e.g.
    `{"scorer": "regex", "pattern": "^4$"}`)."""

    model_config = ConfigDict(frozen=True, extra="allow")

    scorer: str
    """Name of the scorer this check feeds (`equals`, `contains`, `regex`, `json_schema`, ...)."""


class Case(Frozen):
    """One case of a dataset version. `case_id` is stable across versions
    (docs/concepts/verdicts.md)."""

    case_id: str = Field(min_length=1, max_length=256, pattern=r"^[^\r\n]+$")
    """Stable identifier, unique within the dataset (one line)."""
    input: str
    """The question put to the agent (the last user turn)."""
    history: list[dict[str, Any]] = Field(default_factory=list)
    """Earlier turns, as chat messages `{role, content}`."""
    reference: str | None = None
    """The reference answer, when there is one."""
    counter_example: str | None = None
    """An answer known to be wrong, when there is one."""
    tags: list[str] = Field(default_factory=list)
    """Labels for per-tag summaries; changing them does not change the case."""
    checks: list[Check] = Field(default_factory=list)
    """Per-case scorer parameters."""
    expected_calls: list[ExpectedCall] = Field(default_factory=list)
    """Tool calls the `tool_calls` scorer expects."""
    split: Split = Split.TRAIN
    """Fixed train/holdout assignment."""
    note: str | None = None
    """Free text for people; changing it does not change the case."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Anything else the source carried (never an input to scoring)."""

    @model_validator(mode="after")
    def _fits_one_item(self) -> Case:
        """A case is kept as one DynamoDB item (at most 400 KB): its JSON is at most
        `MAX_CASE_BYTES`."""
        size = len(json.dumps(self.model_dump(mode="json"), ensure_ascii=False).encode())
        if size > MAX_CASE_BYTES:
            raise ValueError(
                f"the case is {size} bytes of JSON; a case takes at most {MAX_CASE_BYTES}"
            )
        return self


class ScoringConfig(Frozen):
    """How a dataset version is graded: which scorers are required, and their settings."""

    required: list[str] = Field(min_length=1)
    """Names of the scorers a case must pass; a case none of them applies to is `ungraded`."""
    settings: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Per-scorer settings, e.g. `{"numeric_answer": {"tolerance": 1e-6}}`."""


class ToolCall(Frozen):
    """A call an agent made while answering."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    status: CallStatus = CallStatus.EXECUTED
    """Executed, blocked, replayed or divergent as the service decided it; `unverified` when the
    agent only reported it; `intended` on answers kept before tools were isolated."""
    result: Any = None
    connection_id: str | None = None
    """The connection an executed call ran on (a test connection's id when one stood in)."""
    error: str | None = None
    """Why an executed call failed (the tool's own error), None otherwise."""
    reason: str | None = None
    """Why the call came to its status, in one sentence (None on calls an agent reported)."""


class Usage(Frozen):
    """Tokens one answer used."""

    input_tokens: int = 0
    output_tokens: int = 0


class AgentAnswer(Frozen):
    """What a runtime got back from the agent for one case attempt."""

    answer: str
    """The final answer text."""
    calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Usage()
    model: str | None = None
    """The model that answered, as the provider named it."""
    cost_micros: int | None = None
    """Cost in micro-USD when the runtime knows it; else priced from usage and the spec's prices."""
    guardrail: str | None = None
    """Why a guardrail blocked the answer (the agent's own, or the provider's content filter or
    refusal), e.g. "provider content filter"; `answer` is then the refusal text, graded like any
    answer (a blocked answer is neither a crash nor a provider error). None when nothing blocked
    it."""


class CaseRequest(Frozen):
    """The case JSON an agent is asked with (what the `http` runtime POSTs)."""

    run_id: str
    case_id: str
    attempt: int
    input: str
    history: list[dict[str, Any]] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(cls, case: Case, run_id: str, attempt: int) -> CaseRequest:
        """What attempt `attempt` of eval run `run_id` asks the agent of `case`: its input and
        history, its tags as metadata."""
        return cls(
            run_id=run_id,
            case_id=case.case_id,
            attempt=attempt,
            input=case.input,
            history=case.history,
            metadata={"tags": case.tags},
        )


class ScoreResult(Frozen):
    """One scorer's verdict on one answer (passed, score 0..1, reason;
    docs/reference/scorers.md)."""

    scorer: str
    passed: bool | None
    """True/False; None when the scorer could not decide (not graded: the attempt is
    `incomplete`)."""
    score: float = 0.0
    """0..1."""
    reason: str = ""
    error: bool = False
    """True when the scorer raised: the attempt is `incomplete`."""
    fingerprint: dict[str, Any] | None = None
    """The judge that graded it (model, judge version, rubric hash, prompt version), for judges."""


class Grade(Frozen):
    """A whole answer's grade: the state it gives the attempt and every score behind it."""

    state: AttemptState
    scores: list[ScoreResult] = Field(default_factory=list)
    reason: str = ""
