"""Judges: published, immutable grading specs, and asking one about an answer
(docs/concepts/verdicts.md, docs/guides/judges.md).

A judge version copies its model profile (model, price, connection settings) when it is
published, so a version always grades the same way. A dataset names its judge in
`scoring.settings.judge`: with a `version` it is pinned; without one the latest version at
grading time grades, which is how a judge can change under a running run (the comparison then
says so and gives no verdict).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from pydantic import ValidationError

from chalicelib import retrying
from chalicelib.bootstrap import Container
from chalicelib.clock import iso
from chalicelib.domain import judge_rules as rules
from chalicelib.domain.ids import check_tenant_id
from chalicelib.domain.models import (
    AgentAnswer,
    Case,
    CaseRequest,
    ScoreResult,
    ScoringConfig,
)
from chalicelib.domain.records import Judge
from chalicelib.errors import ConflictError, InvalidInputError, NotFoundError, invalid_input
from chalicelib.services import asking, budgets, draft_checks, redacting

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ResolvedJudge:
    """One published judge version, ready to ask."""

    judge_id: str
    version: int
    spec: rules.JudgeSpec
    runtime_spec: dict[str, Any]
    """The `openai` runtime spec it is asked through (model, base_url, price, temperature...)."""
    fingerprint: dict[str, Any]

    @property
    def model(self) -> str:
        return str(self.runtime_spec.get("model"))

    @property
    def key(self) -> str:
        return rules.fingerprint_key(self.fingerprint)

    @classmethod
    def of(cls, row: Judge) -> ResolvedJudge:
        """The published version a judge row (`version` >= 1) holds."""
        stored = dict(row.spec or {})
        runtime = stored.pop("runtime")
        spec = rules.JudgeSpec.model_validate(stored)
        return cls(
            row.judge_id,
            int(row.version),
            spec,
            runtime,
            rules.fingerprint(row.judge_id, int(row.version), str(runtime.get("model")), spec),
        )


# --- publishing ------------------------------------------------------------------------------


def create(c: Container, who: Any, *, name: str, judge_id: str | None = None) -> Judge:
    """Create a judge (publish its versions with `publish`). A judge id is unique within the
    organization only.

    Raises InvalidInputError for a `judge_id` with `#` or `/`, ConflictError for an id the
    organization has already.
    """
    if judge_id is not None:
        check_tenant_id(judge_id, "judge_id")
    row = Judge(
        judge_id=judge_id or f"judge_{uuid.uuid4().hex[:12]}",
        version=0,
        org_id=who.org_id,
        name=name,
        latest_version=0,
        created_at=iso(c.clock.now()),
        created_by=who.user_id,
    )
    c.judges.create(row)
    return row


PUBLISH_TRIES = 5
"""Publishes lost to other publishes of the same judge before giving up (409): people publish a
judge by hand, so five in a row means somebody is publishing it at the same moment."""


class NewerVersion(ConflictError):
    """A publish `based_on` one version found another published after it (field `judge_id`)."""


def publish(
    c: Container, who: Any, judge_id: str, body: Any, *, based_on: int | None = None
) -> Judge:
    """Publish the next version of a judge from a `JudgeSpec` body; returns the version.

    The number is the header's latest + 1, taken together with moving the header (another
    publish of the same judge taking it first means reading the header again). With
    `based_on` (the version the body was made from, e.g. that version with one criterion more),
    the publish happens only while that version is still the latest: a body made from an older
    version would drop what the newer one changed.
    Raises:
        InvalidInputError: a malformed spec, or a model profile the `openai` runtime cannot ask.
        ForbiddenError: (field `model_profile_id`, permission `secrets:manage`) a profile whose
            secrets were not named by somebody holding `secrets:manage`, published by somebody
            without it (`draft_checks.check_profiles`).
        NotFoundError: unknown judge or model profile.
        NewerVersion: (field `judge_id`) `based_on` is no longer the latest version.
        ConflictError: (field `judge_id`) `PUBLISH_TRIES` publishes in a row lost to others.
    """

    header = c.judges.get(who.org_id, judge_id)
    if not isinstance(body, dict):
        raise InvalidInputError("the body must be a JSON object (a judge spec)", field="body")
    try:
        spec = rules.JudgeSpec.model_validate(body)
    except ValidationError as exc:
        raise invalid_input(exc) from None
    redacting.refuse_secrets(c, who.org_id, body, "")
    profile = c.model_profiles.get(who.org_id, spec.model_profile_id, field="model_profile_id")
    # the judge sends the profile's secrets where its settings point: the rule of a profile laid
    # over a run, checked as the publisher
    draft_checks.check_profiles(
        c,
        who,
        [("model_profile_id", {}, profile)],
        field="model_profile_id",
        refusal=f"the judge cannot be asked on model profile {profile.model_profile_id}",
        exists=False,
    )
    runtime = {
        "runtime": "openai",
        **(profile.settings or {}),
        "model": profile.model,
        "temperature": spec.temperature,
    }
    if profile.price:
        runtime["price"] = dict(profile.price)
    if not runtime.get("base_url"):
        raise InvalidInputError(
            f"model profile {profile.model_profile_id} has no base_url in its settings: a judge "
            "is asked through an OpenAI-compatible endpoint",
            field="model_profile_id",
        )
    try:
        c.runtimes.validate_spec(runtime)
    except InvalidInputError as exc:
        # A key the profile's settings hold is named as such (`settings.api_key_env`,
        # `settings.base_url`).
        key = (exc.field or "").removeprefix("spec.").split(".")[0]
        field = f"settings.{key}" if key in (profile.settings or {}) else "model_profile_id"
        raise InvalidInputError(
            f"model profile {profile.model_profile_id} cannot ask a judge: {exc.message}",
            field=field,
        ) from None
    stored = {**spec.model_dump(mode="json"), "runtime": runtime}
    now = iso(c.clock.now())

    def version_of(header: Judge) -> Judge:
        """The version a header moved to `latest_version` publishes."""
        return Judge(
            judge_id=judge_id,
            version=int(header.latest_version),
            org_id=who.org_id,
            name=header.name,
            spec=stored,
            rubric_hash=rules.rubric_hash(spec),
            created_at=now,
            created_by=who.user_id,
        )

    def next_number(header: Judge) -> Judge:
        latest = int(header.latest_version or 0)
        if based_on is not None and latest != based_on:
            raise NewerVersion(
                f"judge {judge_id} has a version {latest} published after version {based_on}: "
                "try again on the latest",
                field="judge_id",
            )
        return replace(header, latest_version=latest + 1)

    unread = [header]  # the first try decides on the header read above; a lost one reads it again
    published = retrying.change(
        lambda: unread.pop() if unread else c.judges.get(who.org_id, judge_id),
        next_number,
        lambda before, after: c.judges.publish(before, version_of(after)),
        conflict=f"judge {judge_id} is being published by somebody else: try again",
        field="judge_id",
        tries=PUBLISH_TRIES,
    )
    if published is None:  # not reached: `get` raises for a judge that is gone
        raise NotFoundError(f"judge {judge_id} not found", field="judge_id")
    return version_of(published.after)


_versions: dict[tuple[str, str, int], ResolvedJudge] = {}
"""`(org_id, judge_id, version)` -> the version: published versions never change, so each is read
once per process (keyed by organization: the same judge id in two organizations is two judges)."""


def resolve(
    c: Container, org_id: str, pin: dict[str, Any], *, field: str = "scoring.settings.judge"
) -> ResolvedJudge:
    """The judge version a dataset's `scoring.settings.judge` names now: the pinned `version`, else
    the latest published one (read afresh each time, so a republish is seen at once).

    Raises NotFoundError (unknown judge or version), InvalidInputError (a judge never published).
    """
    judge_id = pin["judge_id"]
    version = pin.get("version")
    if version is None:
        header = c.judges.get(org_id, judge_id, field=f"{field}.judge_id")
        version = int(header.latest_version or 0)
        if version == 0:
            raise InvalidInputError(
                f"judge {judge_id} has no published version yet", field=f"{field}.judge_id"
            )
    cached = _versions.get((org_id, judge_id, int(version)))
    if cached is None:
        row = c.judges.get(org_id, judge_id, int(version), field=f"{field}.version")
        cached = _versions.setdefault((org_id, judge_id, int(version)), ResolvedJudge.of(row))
    return cached


def of_scoring(
    c: Container, org_id: str, scoring: dict[str, Any] | ScoringConfig
) -> ResolvedJudge | None:
    """The judge grading with `scoring` now, or None when it names none."""
    cfg = scoring if isinstance(scoring, ScoringConfig) else ScoringConfig.model_validate(scoring)
    if rules.JUDGE_SCORER not in cfg.required:
        return None
    return resolve(c, org_id, dict(cfg.settings.get(rules.JUDGE_SCORER) or {}))


def pin_scoring(scoring: dict[str, Any], judge_version: int | None) -> dict[str, Any]:
    """`scoring` with its judge pinned to `judge_version` (a guard's pin); unchanged without one."""
    judge = (scoring.get("settings") or {}).get(rules.JUDGE_SCORER)
    if judge_version is None or judge is None:
        return scoring
    return {
        **scoring,
        "settings": {
            **scoring["settings"],
            rules.JUDGE_SCORER: {**judge, "version": judge_version},
        },
    }


def effective_scoring(
    scoring: dict[str, Any] | ScoringConfig, judge: ResolvedJudge | None
) -> ScoringConfig:
    """`scoring` with the resolved judge laid over its settings, for the domain's
    `grade`/`applies`."""
    cfg = scoring if isinstance(scoring, ScoringConfig) else ScoringConfig.model_validate(scoring)
    if judge is None:
        return cfg
    settings = dict(cfg.settings)
    settings[rules.JUDGE_SCORER] = {
        **settings.get(rules.JUDGE_SCORER, {}),
        "resolved": {
            "version": judge.version,
            "spec": judge.spec.model_dump(mode="json"),
            "fingerprint": judge.fingerprint,
        },
    }
    return ScoringConfig(required=cfg.required, settings=settings)


# --- asking ----------------------------------------------------------------------------------


@dataclass
class Asker:
    """Asks one judge about answers of one run, checking the budgets before every request and
    adding each request's real cost to them (docs/reference/access.md).

    Used as `grade(..., judge=asker)`. A judge that fails or is skipped gives a score with
    `passed` None (not graded: the attempt is `incomplete` until graded again), never an
    exception: one case's failure stays its own.
    """

    c: Container
    org_id: str
    agent_id: str
    judge: ResolvedJudge
    cost_micros: int = 0
    calls: int = 0
    exhausted: budgets.Exhausted | None = None
    notes: list[str] = field(default_factory=list)

    def __call__(self, case: Case, answer: AgentAnswer, settings: Any) -> ScoreResult:
        judge, fp = self.judge, self.judge.fingerprint
        criteria = rules.applicable_criteria(case, judge.spec.criteria)
        system, user = rules.messages(judge.spec, case, answer.answer, criteria)
        spec = {**judge.runtime_spec, "system_prompt": system}
        request = CaseRequest(run_id="judge", case_id=case.case_id, attempt=1, input=user)
        asked = asking.ask(self.c, self.org_id, self.agent_id, spec, request, judge=True)
        self.exhausted = asked.exhausted
        if asked.exhausted is not None:
            return rules.not_graded(f"judge skipped: {asked.exhausted.reason}", fp)
        if asked.crash is not None:
            why = redacting.for_org(self.c, self.org_id).text(str(asked.crash))
            return rules.not_graded(
                rules.cut_reason(f"judge failed: the provider refused the request: {why}"), fp
            )
        if asked.provider_error is not None:
            why = redacting.for_org(self.c, self.org_id).text(str(asked.provider_error))
            return rules.not_graded(rules.cut_reason(f"judge failed: {why}"), fp)
        reply = asked.answer
        if reply is None:  # neither an answer nor a reason it has none: not a grade either
            return rules.not_graded("judge failed: the provider returned no reply", fp)
        if asked.over_bound is not None:  # nothing charged: its figures are not believed
            return rules.not_graded(rules.cut_reason(f"judge failed: {asked.over_bound}"), fp)
        self.calls += 1
        self.cost_micros += asked.cost_micros
        try:
            return rules.parse_reply(reply.answer, judge.spec, criteria, fp)
        except rules.JudgeReplyError as exc:
            return rules.not_graded(f"judge failed: {exc}", fp)


class OfAgent(Protocol):
    """What `for_run` reads of a run: its organization and agent (a `chalicelib.domain.records.Run`;
    the run store's row has them too while the ledger still hands rows out)."""

    @property
    def org_id(self) -> str: ...

    @property
    def agent_id(self) -> str: ...


def for_run(c: Container, run: OfAgent, scoring: ScoringConfig) -> Asker | None:
    """An asker for the judge grading `run`'s dataset now (`scoring`: the run's, validated), or
    None without a judge.

    A judge that cannot be resolved (never published, version gone) raises NotFoundError or
    InvalidInputError: the caller leaves the answer not graded and says why.
    """
    resolved = of_scoring(c, run.org_id, scoring)
    return Asker(c, run.org_id, run.agent_id, resolved) if resolved else None
