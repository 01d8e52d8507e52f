"""The run listings of the fake ledger (`FakeRuns`): pages of an organization's runs by agent,
dataset or evaluation, newest first, and the trend rows of its completed runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chalicelib.domain import evaluations
from chalicelib.domain.chart import TrendRun
from chalicelib.domain.records import Run
from chalicelib.services.ports.ledger import RunPage, TrendPage


def _listing(agent_id: str | None, dataset_id: str | None, evaluation_id: str | None) -> str:
    if evaluation_id is not None:
        return f"evaluation:{evaluation_id}"
    if agent_id is not None:
        return f"agent:{agent_id}"
    return f"dataset:{dataset_id}" if dataset_id is not None else "org"


class FakeRunLists:
    """The listing reads of `ports.ledger.Runs` over the runs `kept` by (org_id, run_id)."""

    kept: dict[tuple[str, str], Run]
    agent_pages_read: list[int]
    """How many runs each `list_by_agent` page held, in the order read (tests of bounded reads)."""

    def _newest(self, org_id: str, keep: Callable[[Run], bool]) -> list[Run]:
        runs = [r for (org, _), r in self.kept.items() if org == org_id and keep(r)]
        return sorted(runs, key=lambda r: r.created_at, reverse=True)

    def _page(
        self, runs: list[Run], org_id: str, listing: str, limit: int, start: dict[str, Any] | None
    ) -> RunPage:
        after = runs.index(self.kept[(org_id, start["run_id"])]) + 1 if start else 0
        page = runs[after : after + limit]
        more = after + limit < len(runs)
        return RunPage(
            page,
            {"org_id": org_id, "listing": listing, "run_id": page[-1].run_id} if more else None,
        )

    def list_by_agent(
        self,
        org_id: str,
        agent_id: str,
        limit: int = 50,
        start: dict[str, Any] | None = None,
        before: str | None = None,
    ) -> RunPage:
        page = self._page(
            self._newest(
                org_id,
                lambda r: r.agent_id == agent_id and (before is None or r.created_at < before),
            ),
            org_id,
            f"agent:{agent_id}",
            limit,
            start,
        )
        self.agent_pages_read.append(len(page.runs))
        return page

    def list_by_org(
        self, org_id: str, limit: int = 50, start: dict[str, Any] | None = None
    ) -> RunPage:
        return self._page(self._newest(org_id, lambda r: True), org_id, "org", limit, start)

    def list_by_dataset(
        self, org_id: str, dataset_id: str, limit: int = 50, start: dict[str, Any] | None = None
    ) -> RunPage:
        return self._page(
            self._newest(org_id, lambda r: r.dataset_id == dataset_id),
            org_id,
            f"dataset:{dataset_id}",
            limit,
            start,
        )

    def _trends(
        self, org_id: str, keep: Callable[[Run], bool], limit: int, start: dict[str, Any] | None
    ) -> TrendPage:
        """A page of the trend rows the store keeps: one per completed run, newest first."""
        kept = (r for (org, _), r in self.kept.items() if org == org_id and keep(r))
        rows = sorted(
            (t for t in map(TrendRun.of, kept) if t is not None),
            key=lambda t: (t.started_at, t.run_id),
            reverse=True,
        )
        after = int(start["after"]) if start else 0
        more = after + limit < len(rows)
        return TrendPage(rows[after : after + limit], {"after": after + limit} if more else None)

    def trends_by_agent(
        self, org_id: str, agent_id: str, limit: int = 500, start: dict[str, Any] | None = None
    ) -> TrendPage:
        return self._trends(org_id, lambda r: r.agent_id == agent_id, limit, start)

    def trends_by_dataset(
        self, org_id: str, dataset_id: str, limit: int = 500, start: dict[str, Any] | None = None
    ) -> TrendPage:
        return self._trends(org_id, lambda r: r.dataset_id == dataset_id, limit, start)

    def list_by_evaluation(
        self, org_id: str, evaluation_id: str, limit: int = 50, start: dict[str, Any] | None = None
    ) -> RunPage:
        return self._page(
            self._newest(
                org_id,
                lambda r: (
                    evaluations.evaluation_of(r.evaluation_id, r.agent_id, r.dataset_id)
                    == evaluation_id
                ),
            ),
            org_id,
            f"evaluation:{evaluation_id}",
            limit,
            start,
        )

    @staticmethod
    def page_start_of(
        run: Run,
        *,
        agent_id: str | None = None,
        dataset_id: str | None = None,
        evaluation_id: str | None = None,
    ) -> dict[str, Any]:
        return {
            "org_id": run.org_id,
            "listing": _listing(agent_id, dataset_id, evaluation_id),
            "run_id": run.run_id,
        }

    @staticmethod
    def is_page_start(
        start: Any,
        org_id: str,
        *,
        agent_id: str | None = None,
        dataset_id: str | None = None,
        evaluation_id: str | None = None,
    ) -> bool:
        listing = _listing(agent_id, dataset_id, evaluation_id)
        return (
            isinstance(start, dict)
            and set(start) == {"org_id", "listing", "run_id"}
            and start["org_id"] == org_id
            and start["listing"] == listing
        )
