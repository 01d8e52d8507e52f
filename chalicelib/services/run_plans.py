"""Planning an eval run's start (docs/architecture/run-lifecycle.md): the candidate resolved,
the arms, the dataset version, the baseline chosen once, and what the run keeps of how its tool
calls run; nothing is written. `runs.start_run` writes what is planned here, the estimate prices
it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.clock import epoch_ms
from chalicelib.domain import access
from chalicelib.domain.enums import ArmRole
from chalicelib.domain.evaluations import (
    implied_parts,
    resolve_selector,
    selector_of,
    selector_value,
)
from chalicelib.domain.identity import Identity
from chalicelib.domain.records import Arm
from chalicelib.domain.replay import Replay
from chalicelib.domain.spec import spec_hash
from chalicelib.errors import InvalidInputError, NotFoundError
from chalicelib.services import access as access_service
from chalicelib.services import (
    baselines,
    draft_checks,
    environments,
    estimates,
    judges,
    recordings,
    rerun_choice,
)
from chalicelib.services import datasets as dataset_service
from chalicelib.services import model_profiles as profile_service
from chalicelib.services.planning import Plan


def _ungraded_warning(n: int) -> str:
    noun = "case has" if n == 1 else "cases have"
    return (
        f"{n} {noun} nothing to grade {'it' if n == 1 else 'them'}. The result will be "
        "inconclusive."
    )


def resolve_candidate(
    c: Container, who: Identity, agent_id: str, candidate: Any, version: Any
) -> tuple[dict[str, Any], int | None, bool]:
    """The spec to run, its resolved version (None for the draft) and whether it is the draft.

    `candidate` is `"draft"`, `"version"` (with `version` a number, `"latest"` or `"published"`,
    default latest), or directly a number, `"latest"` or `"published"`. The version is resolved
    once, here, and pinned on the run (docs/guides/by-hand.md).
    Raises:
        InvalidInputError: a version asked of an agent never published, or a bad selector.
        NotFoundError: unknown agent or version.
    """
    agent = c.agents.get(who.org_id, agent_id)
    if version is not None and candidate not in (None, "version"):
        raise InvalidInputError(
            f'version goes with candidate "version", not {candidate!r}', field="version"
        )
    if candidate == "draft":
        return agent.draft_spec, None, True
    selector = version if candidate in (None, "version") else candidate
    if selector is None:
        selector = "latest"
    latest = int(agent.latest_version or 0)
    if latest == 0:
        raise InvalidInputError(
            f'agent {agent_id} was never published: run its draft instead (candidate: "draft")',
            field="candidate",
        )
    if selector not in ("latest", "published") and not (
        isinstance(selector, int) and not isinstance(selector, bool) and selector >= 1
    ):
        raise InvalidInputError(
            'version must be a positive integer, "latest" or "published"',
            field="version" if candidate in (None, "version") else "candidate",
        )
    number = resolve_selector(selector, latest_version=latest, live_version=agent.live_version)
    row = c.agents.get_version(who.org_id, agent_id, number)
    if row is None:
        raise NotFoundError(f"version {number} of agent {agent_id} not found", field="version")
    return row.spec, number, False


def _arm(
    arm_id: str, spec: dict[str, Any], version: int | None, draft: bool, replay: Replay
) -> Arm:
    """One candidate side of a run: what it runs (the spec copied at start) and how it is
    labelled (its version, model and how its tool calls are answered)."""
    return Arm(
        arm_id=arm_id,
        role=ArmRole.CANDIDATE,
        version=version,
        draft=draft,
        spec=spec,
        spec_hash=spec_hash(spec),
        model_profile_id=spec.get("model_profile_id"),
        replay=replay,
    )


def version_before(
    c: Container, who: Identity, agent_id: str, candidate_version: int | None, draft: bool
) -> tuple[int, dict[str, Any]] | None:
    """The version before the candidate and its spec: for a draft the published version (the live
    one, else the latest), for version N version N - 1; None when there is none."""
    agent = c.agents.get(who.org_id, agent_id)
    number = (
        int(agent.live_version or agent.latest_version or 0)
        if draft
        else int(candidate_version or 0) - 1
    )
    if number < 1:
        return None
    row = c.agents.get_version(who.org_id, agent_id, number)
    return (number, row.spec) if row is not None else None


def estimate(c: Container, who: Identity, agent_id: str, body: dict[str, Any]) -> estimates.Price:
    """`POST /agents/{id}/eval-runs/estimate`: plan the run as a start would and price it, and for
    a comparison say how likely its reruns leave a confirmed regression to luck
    (`rerun_choice.luck_advice`); nothing is written. Raises what `of_evaluation` and `plan_run`
    raise."""
    plan = plan_run(c, who, agent_id, of_evaluation(c, who, agent_id, body))
    priced = estimates.price(c, who, plan)
    if not priced.ceiling_by_reruns:
        return priced
    advice = rerun_choice.luck_advice(
        c, who.org_id, agent_id, plan.dataset.dataset_id, plan.reruns, priced.ceiling_by_reruns
    )
    return replace(priced, luck=advice)


def of_evaluation(
    c: Container, who: Identity, agent_id: str, body: dict[str, Any]
) -> dict[str, Any]:
    """A start body that names an `evaluation_id`, made the evaluation's run: its
    candidate is the evaluation's version selector (resolved once, by `plan_run`), and it must be
    of the evaluation's agent and dataset. An implied evaluation's id must be of the agent and
    dataset the start names; the start picks its candidate as without one. A body without an
    evaluation is returned as it is.

    Raises:
        ForbiddenError: no runs:view (a start needs it first).
        NotFoundError: the organization has no such evaluation, or the caller may not see its agent
            or dataset.
        InvalidInputError: another agent (`evaluation_id`) or dataset (`dataset_id`) than the
            evaluation's, the draft (`candidate`), or another selector (`version`, `candidate`).
    """
    evaluation_id = body.get("evaluation_id")
    if not evaluation_id:
        return body
    implied = implied_parts(evaluation_id)
    if implied is not None:
        if implied != (agent_id, body.get("dataset_id")):
            raise InvalidInputError(
                f"evaluation {evaluation_id} is of another agent or dataset than this run's",
                field="evaluation_id",
            )
        return body
    who.require(access.RUNS_VIEW, "starting an eval run")
    evaluation = c.evaluations.get(who.org_id, evaluation_id)
    if not (who.sees("agent", evaluation.agent_id) and who.sees("dataset", evaluation.dataset_id)):
        # as another organization's: its agent and dataset are not named to whoever may not see them
        raise NotFoundError(f"evaluation {evaluation_id} not found", field="evaluation_id")
    if evaluation.agent_id != agent_id:
        raise InvalidInputError(
            f"evaluation {evaluation_id} evaluates agent {evaluation.agent_id}, not {agent_id}",
            field="evaluation_id",
        )
    if body.get("dataset_id") not in (None, evaluation.dataset_id):
        raise InvalidInputError(
            f"evaluation {evaluation_id} runs dataset {evaluation.dataset_id}",
            field="dataset_id",
        )
    candidate, version = body.get("candidate"), body.get("version")
    if candidate == "draft":
        raise InvalidInputError(
            "an evaluation runs the version its selector picks, never the draft",
            field="candidate",
        )
    named = version if candidate in (None, "version") else candidate
    if named is not None and selector_of(named) != evaluation.version:
        raise InvalidInputError(
            f"evaluation {evaluation_id} picks version {evaluation.version!r}: leave the version "
            "out, or change the evaluation",
            field="version" if candidate in (None, "version") else "candidate",
        )
    return {
        **body,
        "dataset_id": evaluation.dataset_id,
        "candidate": "version",
        "version": selector_value(evaluation.version),
    }


def plan_run(
    c: Container,
    who: Identity,
    agent_id: str,
    body: dict[str, Any],
    *,
    baseline_version: int | None = None,
    default_baseline: bool = True,
    judge_version: int | None = None,
) -> Plan:
    """Check a start body and decide what the run would be: the candidate, the dataset version, the
    arms and the baseline (chosen once, here). Nothing is written.

    Args:
        body: validated start body (see `api.schemas.StartRun`) as a dict.
        baseline_version: with `paired_baseline`, the version run beside the candidate instead of
            the version before it (a promotion's: the version the environment serves).
        default_baseline: False leaves a run with neither `paired_baseline` nor `baseline_run_id`
            without a baseline (a suite's first measurement), instead of the cheap default.
        judge_version: grade with this judge version, whatever the dataset names (a guard's pin).
    Raises:
        NotFoundError: unknown agent, version, dataset, dataset version, environment or judge.
        InvalidInputError: a run that could tell nothing, refused before it starts.
        ForbiddenError / InvalidInputError: (field `candidate`, with `problems`) a draft naming
            what its starter may not use or what does not exist (`draft_checks.check`); (field
            `model_profile_ids`, with `problems`) model profiles that would send a secret where
            the starter may not aim one, or one that does not exist
            (`draft_checks.check_profiles`); (field `candidate`, 403) a connection the arms
            would call that sends a secret and was saved before its secret was checked, for a
            starter without `secrets:manage` (`draft_checks.check_connections`).
    """
    access_service.check_start(
        who, agent_id, body["dataset_id"], draft=body.get("candidate") == "draft"
    )
    spec, resolved, is_draft = resolve_candidate(
        c, who, agent_id, body.get("candidate"), body.get("version")
    )
    if is_draft:  # checked as its starter: a published version was checked by its publish
        draft_checks.check(c, who, agent_id, spec)
    if body.get("environment_id") not in (None, "default"):
        c.environments.get(who.org_id, body["environment_id"])
    dataset_version = dataset_service.resolve_version(
        c, who, body["dataset_id"], body.get("dataset_version")
    )
    replay = recordings.replay_options(c, who.org_id, body)
    case_count = int(dataset_version.case_count or 0)
    if case_count == 0:
        raise InvalidInputError("the dataset version has no cases", field="dataset_version")
    scoring = judges.pin_scoring(dataset_version.scoring, judge_version)
    judge = judges.of_scoring(c, who.org_id, scoring)
    ungraded, judged = dataset_service.coverage(c, dataset_version, judge, scoring)
    if ungraded >= case_count:
        raise InvalidInputError(
            "no required scorer applies to any case: add a check, an expected "
            "tool call or grading criteria",
            field="dataset_version",
        )
    c.runtimes.validate_spec(spec)
    settings = c.settings
    stability = bool(body.get("stability"))
    default_reruns = 1 if stability else settings.eval_reruns
    auto = body.get("reruns") == "auto"
    if auto and stability:
        raise InvalidInputError(
            'reruns "auto" picks the reruns of a comparison, and a stability run compares '
            "nothing: give a number",
            field="reruns",
        )
    reruns = default_reruns if body.get("reruns") is None or auto else int(body["reruns"])
    profiles = [
        c.model_profiles.get(who.org_id, pid, field=f"model_profile_ids[{i}]")
        for i, pid in enumerate(body.get("model_profile_ids") or [])
    ]
    if len({p.model_profile_id for p in profiles}) < len(profiles):
        raise InvalidInputError("a model profile is named twice", field="model_profile_ids")
    # checked as its starter, like a draft: a profile laid over the spec may send its secrets
    # elsewhere than the spec (or the version) was checked for
    draft_checks.check_profiles(
        c, who, [(f"model_profile_ids[{i}]", spec, p) for i, p in enumerate(profiles)]
    )
    arms = [
        _arm(
            "candidate" if i == 0 else f"candidate:{p.model_profile_id}",
            profile_service.apply(spec, p),
            resolved,
            is_draft,
            replay,
        )
        for i, p in enumerate(profiles)
    ] or [_arm("candidate", spec, resolved, is_draft, replay)]
    for arm in arms if profiles else []:  # a profile laid over the spec is checked like a spec
        c.runtimes.validate_spec(arm.spec)
    for name in ("paired_baseline", "baseline_run_id"):
        if stability and body.get(name):
            raise InvalidInputError(
                f"a stability run compares nothing: leave out {name}", field=name
            )
    if stability and reruns < 1:
        raise InvalidInputError(
            "a stability run asks every case again at least once", field="reruns"
        )
    if body.get("paired_baseline") and body.get("baseline_run_id"):
        raise InvalidInputError(
            "name either paired_baseline or baseline_run_id", field="baseline_run_id"
        )
    if (body.get("paired_baseline") or body.get("baseline_run_id")) and reruns < 1:
        raise InvalidInputError(
            "a run compared with a baseline needs at least one rerun", field="reruns"
        )
    before = version_before(c, who, agent_id, resolved, is_draft)
    if baseline_version is not None:
        row = c.agents.get_version(who.org_id, agent_id, baseline_version)
        before = (baseline_version, row.spec) if row is not None else None
    if body.get("paired_baseline") and before is None:
        raise InvalidInputError(
            "a first version has nothing before it to compare with"
            if not is_draft
            else "the draft has no published version to compare with: run it without a baseline",
            field="paired_baseline",
        )
    info: dict[str, Any] = {}
    if not stability and (
        default_baseline or body.get("paired_baseline") or body.get("baseline_run_id")
    ):
        before_spec = before[1] if before else None
        if before_spec is not None and profiles and body.get("paired_baseline"):
            draft_checks.check_profiles(
                c, who, [("model_profile_ids[0]", before_spec, profiles[0])]
            )
            before_spec = profile_service.apply(
                before_spec, profiles[0]
            )  # the baseline runs on the first model
        base_arm, info = baselines.choose(
            c,
            who,
            agent_id,
            candidate_spec=arms[0].spec,
            version_before=before[0] if before else None,
            dataset_id=dataset_version.dataset_id,
            dataset_version=int(dataset_version.version),
            scoring=scoring,
            environment_id=body.get("environment_id"),
            body=body,
            before_spec=before_spec,
            paired=bool(body.get("paired_baseline")),
            now_ms=epoch_ms(c.clock.now()),
            judge_key=judge.key if judge else None,
            replay=replay,
        )
        if base_arm is not None:
            c.runtimes.validate_spec(base_arm.spec)
            arms.append(base_arm)
    # a connection saved before its secret was checked sends it only for who may aim a secret
    draft_checks.check_connections(
        c,
        who,
        [("baseline" if a.role is ArmRole.BASELINE else "candidate", a.spec) for a in arms],
        isolation(c, who.org_id, body.get("environment_id"))["test_connections"],
    )
    warnings = [_ungraded_warning(ungraded)] if ungraded else []
    reruns_auto = None
    if auto:
        if not any(a.role is ArmRole.BASELINE for a in arms):
            raise InvalidInputError(
                'reruns "auto" needs a baseline to compare with: name paired_baseline or '
                "baseline_run_id, or give reruns a number",
                field="reruns",
            )
        reruns, reruns_auto, said = rerun_choice.choose(
            c, who.org_id, agent_id, dataset_version.dataset_id, default=reruns
        )
        warnings.append(said)
    if judge is not None:
        if judge.spec.temperature > 0:
            warnings.append(
                f"the judge grades at temperature {judge.spec.temperature:g}: the same answer may "
                "be graded differently twice"
            )
        tested = {baselines.model_of(a.spec) for a in arms if a.role is ArmRole.CANDIDATE} | {
            a.spec.get("model") for a in arms if a.role is ArmRole.CANDIDATE
        }
        if judge.model in tested:
            warnings.append(
                f"the judge runs on {judge.model}, the model being tested: it grades its own "
                "answers"
            )
    return Plan(
        agent_id,
        spec,
        resolved,
        is_draft,
        dataset_version,
        case_count,
        ungraded,
        judged,
        judge,
        arms,
        info,
        reruns,
        stability,
        warnings,
        scoring,
        replay,
        {**isolation(c, who.org_id, body.get("environment_id")), **replay.settings()},
        reruns_auto,
    )


def isolation(c: Container, org_id: str, environment_id: str | None) -> dict[str, Any]:
    """What a run keeps of its environment for how its tool calls run (docs/guides/tools.md; the
    plan adds its replay, `Replay.settings`): the environment's test connections as the run starts
    (a connection or environment a running run uses cannot be removed, and a later change to the
    map does not change a run under way)."""
    try:
        env = environments.resolve(
            c, org_id, None if environment_id in (None, "default") else environment_id
        )
    except NotFoundError:
        return {"test_connections": {}}
    return {"test_connections": dict(env.test_connections or {})}
