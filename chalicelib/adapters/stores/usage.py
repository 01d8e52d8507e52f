"""Agent runs and the month's usage by surface (docs/reference/usage.md); port
`ports.usage.Usage`."""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from typing import Any

from pynamodb.exceptions import TransactWriteError
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action

from chalicelib.adapters.stores.base import TX, delete_found, reason_codes
from chalicelib.adapters.tables import AgentRunRow, RunRow, SpendRow, org_key
from chalicelib.domain.agent_runs import AgentRun, EvalCase, Surface, SurfaceUsage
from chalicelib.domain.records import Run
from chalicelib.errors import ConflictError

REPORT_CHUNK = 25
"""Runs per transaction of a usage report: each is a put, and the months' counters of the
organization and of every agent named (at most 25) ride in the same transaction: ≤ 51 items."""
CONFLICT_TRIES = 5


def row_of_run(run: AgentRun) -> AgentRunRow:
    """The table row of `run` (also put by the recording transaction, `RunStore.record_attempt`)."""
    return AgentRunRow(
        org_key(run.org_id, run.agent_run_id),
        agent_run_id=run.agent_run_id,
        org_id=run.org_id,
        agent_id=run.agent_id,
        surface=run.surface,
        surface_key=org_key(run.org_id, run.agent_id, run.surface),
        org_surface_key=org_key(run.org_id, run.surface),
        started_key=f"{run.started_ms:013d}#{run.agent_run_id}",
        started_at=run.started_at,
        started_ms=run.started_ms,
        version=run.version,
        draft=run.draft,
        model=run.model,
        status=run.status,
        asked=run.asked,
        request=run.request,
        cost_micros=run.cost_micros,
        input_tokens=run.input_tokens,
        output_tokens=run.output_tokens,
        latency_ms=round(float(run.latency_ms), 3),
        ran_as=run.ran_as,
        eval_case=(
            {
                "run_id": run.eval_case.run_id,
                "case_id": run.eval_case.case_id,
                "attempt": run.eval_case.attempt,
                "dataset_id": run.eval_case.dataset_id,
                "dataset_version": run.eval_case.dataset_version,
            }
            if run.eval_case is not None
            else None
        ),
        key=run.key,
    )


def run_of_row(row: AgentRunRow) -> AgentRun:
    """The agent run a row holds."""
    ec = row.eval_case
    return AgentRun(
        agent_run_id=row.agent_run_id,
        org_id=row.org_id,
        agent_id=row.agent_id,
        surface=row.surface,
        started_at=row.started_at,
        started_ms=int(row.started_ms),
        version=int(row.version) if row.version is not None else None,
        draft=bool(row.draft),
        model=row.model,
        status=row.status,
        asked=row.asked,
        request=row.request,
        cost_micros=int(row.cost_micros or 0),
        input_tokens=int(row.input_tokens or 0),
        output_tokens=int(row.output_tokens or 0),
        latency_ms=float(row.latency_ms or 0),
        ran_as=row.ran_as,
        eval_case=(
            EvalCase(
                run_id=ec["run_id"],
                case_id=ec["case_id"],
                attempt=int(ec["attempt"]),
                dataset_id=ec.get("dataset_id", ""),
                dataset_version=int(ec.get("dataset_version", 0)),
            )
            if ec
            else None
        ),
        key=row.key,
    )


def _month_keys(org_id: str, agent_id: str, month: str) -> tuple[str, str]:
    return org_key(org_id, "org", month), org_key(org_id, "agent", agent_id, month)


def _usage_of(item: SpendRow | None) -> dict[str, SurfaceUsage]:
    if item is None:
        return {s.value: SurfaceUsage() for s in Surface}
    spent, judge = int(item.spent_micros or 0), int(item.judge_micros or 0)
    production = int(item.production_micros or 0)
    return {
        Surface.PRODUCTION.value: SurfaceUsage(
            production,
            int(item.production_input_tokens or 0),
            int(item.production_output_tokens or 0),
            int(item.production_runs or 0),
        ),
        Surface.EVAL.value: SurfaceUsage(
            max(0, spent - judge - production),
            int(item.eval_input_tokens or 0),
            int(item.eval_output_tokens or 0),
            int(item.eval_runs or 0),
        ),
        Surface.GRADER.value: SurfaceUsage(judge, 0, 0, int(item.grader_runs or 0)),
    }


def _merged(
    index: Any, hash_keys: Sequence[str], *, before: str | None, limit: int
) -> tuple[list[AgentRun], str | None]:
    """The newest `limit` rows under `hash_keys` of `index` older than `before`, merged by
    `started_key`, with the next page's cursor: at most `limit + 1` rows read per key."""
    streams = []
    for hash_key in hash_keys:
        condition: Condition | None = (
            AgentRunRow.started_key < before if before is not None else None
        )
        rows = index.query(
            hash_key, condition, scan_index_forward=False, limit=limit + 1, page_size=limit + 1
        )
        streams.append([(r.started_key, r) for r in rows])
    merged = list(heapq.merge(*streams, key=lambda kr: kr[0], reverse=True))
    page = merged[:limit]
    more = len(merged) > limit
    return [run_of_row(r) for _, r in page], (page[-1][0] if more and page else None)


class UsageStore:
    """Agent runs (`agent_runs`) and the usage counters on the `spend` rows."""

    def get(self, org_id: str, agent_run_id: str) -> AgentRun | None:
        """One agent run of the organization, or None."""
        try:
            return run_of_row(AgentRunRow.get(org_key(org_id, agent_run_id), consistent_read=True))
        except AgentRunRow.DoesNotExist:
            return None

    def list_for_agent(
        self,
        org_id: str,
        agent_id: str,
        surfaces: Sequence[str],
        *,
        before: str | None,
        limit: int,
    ) -> tuple[list[AgentRun], str | None]:
        """The agent's runs of `surfaces`, newest first, `limit` at most, older than the cursor
        `before` (a row's `started_key`); with the cursor of the next page (None: the last).
        Reads at most `limit + 1` rows per surface."""
        return _merged(
            AgentRunRow.agent_index,
            [org_key(org_id, agent_id, s) for s in surfaces],
            before=before,
            limit=limit,
        )

    def list_for_org(
        self, org_id: str, surfaces: Sequence[str], *, before: str | None, limit: int
    ) -> tuple[list[AgentRun], str | None]:
        """The organization's runs of `surfaces` across its agents, as `list_for_agent`."""
        return _merged(
            AgentRunRow.org_index,
            [org_key(org_id, s) for s in surfaces],
            before=before,
            limit=limit,
        )

    def report(self, org_id: str, month: str, runs: Sequence[AgentRun]) -> int:
        """Write production runs not written before (by id) and add each to the organization's
        and its agent's month (cost to `spent_micros` too: production spends from the budgets
        an eval checks), all in one transaction per `REPORT_CHUNK` runs. Returns how many were
        new.

        Raises:
            ConflictError: the counters stayed contended for `CONFLICT_TRIES` tries.
        """
        written = 0
        for start in range(0, len(runs), REPORT_CHUNK):
            chunk = list(runs[start : start + REPORT_CHUNK])
            for _ in range(CONFLICT_TRIES):
                if not chunk:
                    break
                try:
                    self._report_chunk(org_id, month, chunk)
                    written += len(chunk)
                    break
                except TransactWriteError as exc:
                    codes = reason_codes(exc)
                    if "ConditionalCheckFailed" in codes:
                        chunk = [
                            r
                            for r, code in zip(chunk, codes[: len(chunk)], strict=True)
                            if code != "ConditionalCheckFailed"
                        ]
                        continue
                    if "TransactionConflict" in codes:
                        continue
                    raise
            else:
                raise ConflictError("usage counters are busy: send the report again", field="runs")
        return written

    def _report_chunk(self, org_id: str, month: str, chunk: Sequence[AgentRun]) -> None:
        totals: dict[str, list[int]] = {}
        for run in chunk:
            for key in _month_keys(org_id, run.agent_id, month):
                sums = totals.setdefault(key, [0, 0, 0, 0])
                sums[0] += run.cost_micros
                sums[1] += run.input_tokens
                sums[2] += run.output_tokens
                sums[3] += 1
        with TX.write() as t:
            for run in chunk:  # first, so a failed condition's index is the run's
                t.save(row_of_run(run), condition=AgentRunRow.run_key.does_not_exist())
            for key, (micros, tokens_in, tokens_out, count) in totals.items():
                actions: list[Action] = [
                    SpendRow.spent_micros.add(micros),
                    SpendRow.production_micros.add(micros),
                    SpendRow.production_input_tokens.add(tokens_in),
                    SpendRow.production_output_tokens.add(tokens_out),
                    SpendRow.production_runs.add(count),
                ]
                if "#agent#" in key:
                    actions.append(SpendRow.month_key.set(org_key(org_id, month)))
                t.update(SpendRow(key), actions=actions)

    def add_grader(self, run: AgentRun, month: str) -> bool:
        """Write a grader run of a "grade again" once (by id) and count it in the month's usage of
        its organization and agent (its cost is charged with the request, as every judge's), in
        one transaction. False when it was written before."""
        for _ in range(CONFLICT_TRIES):
            try:
                with TX.write() as t:
                    t.save(row_of_run(run), condition=AgentRunRow.run_key.does_not_exist())
                    for key in _month_keys(run.org_id, run.agent_id, month):
                        actions: list[Action] = [SpendRow.grader_runs.add(1)]
                        if "#agent#" in key:
                            actions.append(SpendRow.month_key.set(org_key(run.org_id, month)))
                        t.update(SpendRow(key), actions=actions)
                return True
            except TransactWriteError as exc:
                codes = reason_codes(exc)
                if codes and codes[0] == "ConditionalCheckFailed":
                    return False
                if "TransactionConflict" not in codes:
                    raise
        raise ConflictError("usage counters are busy: grade again later", field="run_id")

    def count_run(self, run: Run, month: str) -> bool:
        """Add what `run` (as read) answered and graded since it was last counted to the
        month's usage of its organization and agent: its `asked`/`judged` attempts and tokens,
        beyond the figures kept on the run as last counted (`usage_counted`), in one transaction
        conditional on those (a count that lost to another is not added twice). False when
        another count moved first (read the run again) or nothing is new.

        The month is the one the run is first counted in; later counts of the run (an attempt
        in flight when it was cancelled) add to that month too."""
        kept = dict(run.usage_counted or {})
        now = {
            "asked": int(run.asked),
            "judged": int(run.judged),
            "input_tokens": int(run.input_tokens),
            "output_tokens": int(run.output_tokens),
        }
        delta = {k: v - int(kept.get(k, 0)) for k, v in now.items()}
        if not any(delta.values()):
            return False
        month = kept.get("month", month)
        counts = int(run.usage_counts or 0)
        condition = RunRow.usage_counts == counts
        if not counts:  # a run kept before usage was counted has no `usage_counts`
            condition = condition | RunRow.usage_counts.does_not_exist()
        try:
            with TX.write() as t:
                t.update(
                    RunRow(org_key(run.org_id, run.run_id)),
                    actions=[
                        RunRow.usage_counted.set({**now, "month": month}),
                        RunRow.usage_counts.set(counts + 1),
                    ],
                    condition=condition,
                )
                for key in _month_keys(run.org_id, run.agent_id, month):
                    actions: list[Action] = [
                        SpendRow.eval_runs.add(delta["asked"]),
                        SpendRow.eval_input_tokens.add(delta["input_tokens"]),
                        SpendRow.eval_output_tokens.add(delta["output_tokens"]),
                        SpendRow.grader_runs.add(delta["judged"]),
                    ]
                    if "#agent#" in key:
                        actions.append(SpendRow.month_key.set(org_key(run.org_id, month)))
                    t.update(SpendRow(key), actions=actions)
            return True
        except TransactWriteError as exc:
            lost = ("ConditionalCheckFailed", "TransactionConflict")
            if any(code in lost for code in reason_codes(exc)):
                return False
            raise

    def month(
        self, org_id: str, month: str
    ) -> tuple[dict[str, SurfaceUsage], dict[str, dict[str, SurfaceUsage]]]:
        """The organization's month by surface, and each agent's that ran in it."""
        try:
            org = SpendRow.get(org_key(org_id, "org", month), consistent_read=True)
        except SpendRow.DoesNotExist:
            org = None
        agents: dict[str, dict[str, SurfaceUsage]] = {}
        prefix = org_key(org_id, "agent", "")
        for row in SpendRow.month_index.query(org_key(org_id, month)):
            agent_id = row.key[len(prefix) :].rsplit("#", 1)[0]
            agents[agent_id] = _usage_of(row)
        return _usage_of(org), agents

    def delete(self, org_id: str, agent_run_ids: Iterable[str]) -> int:
        """Delete these agent runs of the organization (absent ones are skipped)."""
        return delete_found(
            (AgentRunRow(org_key(org_id, rid)) for rid in agent_run_ids), AgentRunRow
        )

    def delete_agent(self, org_id: str, agent_id: str) -> int:
        """Delete every run of the agent, of every surface."""
        count = 0
        for surface in Surface:
            rows = AgentRunRow.agent_index.query(
                org_key(org_id, agent_id, surface.value), attributes_to_get=["run_key"]
            )
            count += delete_found(rows, AgentRunRow)
        return count
