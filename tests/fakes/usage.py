"""`ports.usage.Usage` in dicts: agent runs shared with `FakeRuns` (which `record_attempt` puts),
spend shared with `FakeBudgets` (production cost spends from the budgets an eval checks)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from chalicelib.domain.agent_runs import AgentRun, Surface, SurfaceUsage
from chalicelib.domain.records import Run

_FIELDS = ("asked", "judged", "input_tokens", "output_tokens")


class FakeUsage:
    def __init__(self, runs: Any, budgets: Any) -> None:
        self.runs, self.budgets = runs, budgets
        self.counters: dict[tuple[str, str | None, str], dict[str, int]] = {}
        """(org_id, agent_id or None, month) -> production_* / eval_* / grader_runs counters."""

    @property
    def kept(self) -> dict[tuple[str, str], AgentRun]:
        return self.runs.agent_runs_kept  # type: ignore[no-any-return]

    def get(self, org_id: str, agent_run_id: str) -> AgentRun | None:
        return self.kept.get((org_id, agent_run_id))

    def list_for_agent(
        self, org_id: str, agent_id: str, surfaces: Sequence[str], *, before: str | None, limit: int
    ) -> tuple[list[AgentRun], str | None]:
        return self._page(org_id, agent_id, surfaces, before, limit)

    def list_for_org(
        self, org_id: str, surfaces: Sequence[str], *, before: str | None, limit: int
    ) -> tuple[list[AgentRun], str | None]:
        return self._page(org_id, None, surfaces, before, limit)

    def _page(
        self,
        org_id: str,
        agent_id: str | None,
        surfaces: Sequence[str],
        before: str | None,
        limit: int,
    ) -> tuple[list[AgentRun], str | None]:
        def key(r: AgentRun) -> str:
            return f"{r.started_ms:013d}#{r.agent_run_id}"

        rows = sorted(
            (
                r
                for (org, _), r in self.kept.items()
                if org == org_id
                and agent_id in (None, r.agent_id)
                and r.surface in surfaces
                and (before is None or key(r) < before)
            ),
            key=key,
            reverse=True,
        )
        page = rows[:limit]
        return page, key(page[-1]) if len(rows) > limit and page else None

    def _add(self, org_id: str, agent_id: str, month: str, **figures: int) -> None:
        for scope in (None, agent_id):
            kept = self.counters.setdefault((org_id, scope, month), {})
            for name, value in figures.items():
                kept[name] = kept.get(name, 0) + value

    def report(self, org_id: str, month: str, runs: Sequence[AgentRun]) -> int:
        written = 0
        for run in runs:
            if (org_id, run.agent_run_id) in self.kept:
                continue
            self.kept[(org_id, run.agent_run_id)] = run
            written += 1
            self.budgets.charge(org_id, run.agent_id, month, run.cost_micros, judge=False)
            self._add(
                org_id,
                run.agent_id,
                month,
                production_micros=run.cost_micros,
                production_runs=1,
                production_input_tokens=run.input_tokens,
                production_output_tokens=run.output_tokens,
            )
        return written

    def add_grader(self, run: AgentRun, month: str) -> bool:
        if (run.org_id, run.agent_run_id) in self.kept:
            return False
        self.kept[(run.org_id, run.agent_run_id)] = run
        self._add(run.org_id, run.agent_id, month, grader_runs=1)
        return True

    def count_run(self, run: Run, month: str) -> bool:
        kept = self.runs.get(run.org_id, run.run_id)
        if kept is None or int(kept.usage_counts) != int(run.usage_counts):
            return False
        before = dict(run.usage_counted or {})
        now = {f: int(getattr(run, f)) for f in _FIELDS}
        delta = {f: now[f] - int(before.get(f, 0)) for f in _FIELDS}
        if not any(delta.values()):
            return False
        month = before.get("month", month)
        self.runs.set(
            run.org_id,
            run.run_id,
            usage_counted={**now, "month": month},
            usage_counts=int(run.usage_counts) + 1,
        )
        self._add(
            run.org_id,
            run.agent_id,
            month,
            eval_runs=delta["asked"],
            eval_input_tokens=delta["input_tokens"],
            eval_output_tokens=delta["output_tokens"],
            grader_runs=delta["judged"],
        )
        return True

    def _usage(self, org_id: str, scope: str | None, month: str) -> dict[str, SurfaceUsage]:
        n = self.counters.get((org_id, scope, month), {})
        spend = self.budgets.spent.get((org_id, scope, month))
        spent = spend.spent_micros if spend else 0
        judge = spend.judge_micros if spend else 0
        production = n.get("production_micros", 0)
        return {
            Surface.PRODUCTION.value: SurfaceUsage(
                production,
                n.get("production_input_tokens", 0),
                n.get("production_output_tokens", 0),
                n.get("production_runs", 0),
            ),
            Surface.EVAL.value: SurfaceUsage(
                max(0, spent - judge - production),
                n.get("eval_input_tokens", 0),
                n.get("eval_output_tokens", 0),
                n.get("eval_runs", 0),
            ),
            Surface.GRADER.value: SurfaceUsage(judge, 0, 0, n.get("grader_runs", 0)),
        }

    def month(
        self, org_id: str, month: str
    ) -> tuple[dict[str, SurfaceUsage], dict[str, dict[str, SurfaceUsage]]]:
        agents = {
            scope
            for (org, scope, m) in [*self.counters, *self.budgets.spent]
            if org == org_id and m == month and scope is not None
        }
        return self._usage(org_id, None, month), {
            a: self._usage(org_id, a, month) for a in sorted(agents)
        }

    def delete(self, org_id: str, agent_run_ids: Iterable[str]) -> int:
        return sum(self.kept.pop((org_id, rid), None) is not None for rid in agent_run_ids)

    def delete_agent(self, org_id: str, agent_id: str) -> int:
        gone = [k for k, r in self.kept.items() if k[0] == org_id and r.agent_id == agent_id]
        for k in gone:
            del self.kept[k]
        return len(gone)
