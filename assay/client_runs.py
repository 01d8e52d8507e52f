"""The client's eval-run methods: start, estimate, read and wait for runs, their cases and
comparison; the evaluation routes and the verdict summaries."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from assay.transport import JSON, ApiBase, ApiError, _fields, _path, operation

ENDED = frozenset({"completed", "failed", "cancelled", "budget_exceeded"})
"""Run statuses after which nothing more starts (docs/architecture/run-lifecycle.md)."""


class RunsApi(ApiBase):
    """Eval runs, their cases and comparison, evaluations and verdict summaries."""

    # --- eval runs --------------------------------------------------------------------------

    @operation("POST", "/api/v1/agents/{agent_id}/eval-runs/estimate")
    def estimate(self, agent_id: str, *, dataset_id: str, **body: Any) -> JSON:
        """What a start with the same body would cost and leave of the budgets
        (docs/guides/costs.md); the body's fields as `start_run`'s."""
        return self._json(
            "POST",
            _path("/api/v1/agents/{agent_id}/eval-runs/estimate", agent_id=agent_id),
            json=_fields(dataset_id=dataset_id, **body),
        )

    @operation("POST", "/api/v1/agents/{agent_id}/eval-runs")
    def start_run(self, agent_id: str, *, dataset_id: str, **body: Any) -> JSON:
        """Start an eval run. Body fields (all optional but `dataset_id`): `dataset_version`,
        `candidate` (`draft`, `version`, `latest`, `published` or a number), `version`,
        `environment_id`, `paired_baseline`, `reruns`, `baseline_run_id`,
        `model_profile_ids`, `stability`, `from_recordings` with `recording_id` (answer tool calls
        from a recording), `live_reads`."""
        return self._json(
            "POST",
            _path("/api/v1/agents/{agent_id}/eval-runs", agent_id=agent_id),
            json=_fields(dataset_id=dataset_id, **body),
        )

    @operation("GET", "/api/v1/agents/{agent_id}/eval-runs")
    def agent_runs(self, agent_id: str, **query: Any) -> JSON:
        """The agent's eval runs, newest first."""
        return self._json(
            "GET",
            _path("/api/v1/agents/{agent_id}/eval-runs", agent_id=agent_id),
            params=_fields(**query),
        )

    @operation("GET", "/api/v1/agents/{agent_id}/eval-runs/chart")
    def agent_chart(self, agent_id: str, *, last: str | None = None) -> JSON:
        """The pass-rate chart of the agent's runs (`last`: "10", "30" or "all"): `svg`,
        `series`, `points` and the window."""
        return self._json(
            "GET",
            _path("/api/v1/agents/{agent_id}/eval-runs/chart", agent_id=agent_id),
            params=_fields(last=last),
        )

    @operation("GET", "/api/v1/eval-runs")
    def runs(self, **query: Any) -> JSON:
        """Every eval run the caller may see, newest first."""
        return self._json("GET", "/api/v1/eval-runs", params=_fields(**query))

    def _run(self, run_id: str, tail: str = "") -> str:
        return _path("/api/v1/eval-runs/{run_id}" + tail, run_id=run_id)

    @operation("GET", "/api/v1/eval-runs/{run_id}")
    def get_run(self, run_id: str) -> JSON:
        """One run: header, progress, outcome, summaries and its attempts."""
        return self._json("GET", self._run(run_id))

    @operation("DELETE", "/api/v1/eval-runs/{run_id}")
    def delete_run(self, run_id: str) -> Any:
        """Delete a run that ended."""
        return self.request("DELETE", self._run(run_id))

    @operation("POST", "/api/v1/eval-runs/{run_id}/cancel")
    def cancel(self, run_id: str) -> JSON:
        """Cancel a queued or running run."""
        return self._json("POST", self._run(run_id, "/cancel"))

    @operation("POST", "/api/v1/eval-runs/{run_id}/grade-again")
    def grade_again(self, run_id: str, **body: Any) -> JSON:
        """Grade a run's answers the judge could not grade, again."""
        return self._json("POST", self._run(run_id, "/grade-again"), json=_fields(**body))

    @operation("GET", "/api/v1/eval-runs/{run_id}/comparison")
    def comparison(self, run_id: str) -> JSON:
        """The candidate against its baseline (404 for a run without one)."""
        return self._json("GET", self._run(run_id, "/comparison"))

    def comparison_or_none(self, run_id: str) -> JSON | None:
        """`comparison`, or None when the run has no baseline to compare with."""
        try:
            return self.comparison(run_id)
        except ApiError as exc:
            if exc.status == 404 and "no baseline" in exc.message:
                return None
            raise

    @operation("GET", "/api/v1/eval-runs/{run_id}/cases")
    def cases_page(self, run_id: str, **query: Any) -> JSON:
        """One page of a run's cases (`outcome`, `tag`, `arm_id`, `case_id`, `limit`, `cursor`
        where the service pages them)."""
        return self._json("GET", self._run(run_id, "/cases"), params=_fields(**query))

    def cases(self, run_id: str, **query: Any) -> Iterator[JSON]:
        """Every case of a run, page after page (following `next_cursor`)."""
        cursor: str | None = None
        while True:
            page = self.cases_page(run_id, cursor=cursor, **query)
            yield from page.get("cases", [])
            cursor = page.get("next_cursor")
            if not cursor:
                return

    @operation("GET", "/api/v1/eval-runs/{run_id}/answer")
    def answer(self, run_id: str, attempt_key: str) -> JSON:
        """An attempt's whole kept answer."""
        return self._json("GET", self._run(run_id, "/answer"), params={"attempt_key": attempt_key})

    @operation("GET", "/api/v1/eval-runs/{run_id}/arms/{arm_id}/spec")
    def arm_spec(self, run_id: str, arm_id: str) -> JSON:
        """The spec one side ran."""
        return self._json(
            "GET",
            _path("/api/v1/eval-runs/{run_id}/arms/{arm_id}/spec", run_id=run_id, arm_id=arm_id),
        )

    @operation("GET", "/api/v1/eval-runs/{run_id}/spec-changes")
    def spec_changes(self, run_id: str) -> JSON:
        """What changed from the baseline's spec to the candidate's."""
        return self._json("GET", self._run(run_id, "/spec-changes"))

    @operation("GET", "/api/v1/eval-runs/{run_id}/progress")
    def progress(self, run_id: str) -> JSON:
        """Recorded results against the total."""
        return self._json("GET", self._run(run_id, "/progress"))

    @operation("GET", "/api/v1/eval-runs/{run_id}/events")
    def events(self, run_id: str, **query: Any) -> JSON:
        """Attempts recorded after `after` (a long poll of up to `wait` seconds)."""
        return self._json("GET", self._run(run_id, "/events"), params=_fields(**query))

    def wait(
        self,
        run_id: str,
        *,
        every_s: float = 1.0,
        timeout_s: float | None = None,
        on_progress: Callable[[JSON], None] | None = None,
    ) -> JSON:
        """Poll the run's progress until it ends; returns the last progress.

        Raises:
            TimeoutError: `timeout_s` seconds passed first.
        """
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            p = self.progress(run_id)
            if on_progress is not None:
                on_progress(p)
            if p.get("status") in ENDED:
                return p
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"run {run_id} still {p.get('status')} after {timeout_s:g} s")
            time.sleep(every_s)

    # --- the evaluation routes, summaries ---------------------------------------------------

    @operation("GET", "/api/evaluations/progress/{run_id}")
    def evaluation_progress(self, run_id: str) -> JSON:
        """The progress route under `/api/evaluations/` (the same as `progress`)."""
        return self._json("GET", _path("/api/evaluations/progress/{run_id}", run_id=run_id))

    @operation("GET", "/api/evaluations/stream/{run_id}")
    def evaluation_stream(self, run_id: str, **query: Any) -> JSON:
        """The stream route under `/api/evaluations/` (the same as `events`)."""
        return self._json(
            "GET", _path("/api/evaluations/stream/{run_id}", run_id=run_id), params=_fields(**query)
        )

    @operation("POST", "/api/evaluations")
    def create_evaluation(self, *, agent_id: str, dataset_id: str, **body: Any) -> JSON:
        """Create an evaluation (docs/guides/by-hand.md): `agent_id`, `dataset_id`, and optionally
        `version` (`latest` default, `published` or a number), `name`, `evaluation_id`."""
        return self._json(
            "POST",
            "/api/evaluations",
            json=_fields(agent_id=agent_id, dataset_id=dataset_id, **body),
        )

    @operation("GET", "/api/evaluations")
    def evaluations(self, **query: Any) -> JSON:
        """The organization's evaluations by id (`limit`, `cursor`)."""
        return self._json("GET", "/api/evaluations", params=_fields(**query))

    def _evaluation(self, evaluation_id: str, tail: str = "") -> str:
        return _path("/api/evaluations/{evaluation_id}" + tail, evaluation_id=evaluation_id)

    @operation("GET", "/api/evaluations/{evaluation_id}")
    def get_evaluation(self, evaluation_id: str) -> JSON:
        """One evaluation (an implied one, `implied~<agent>~<dataset>`, too)."""
        return self._json("GET", self._evaluation(evaluation_id))

    @operation("PATCH", "/api/evaluations/{evaluation_id}")
    def update_evaluation(self, evaluation_id: str, **body: Any) -> JSON:
        """Change an evaluation's `name`, `agent_id` or `version`; past runs keep their pins."""
        return self._json("PATCH", self._evaluation(evaluation_id), json=_fields(**body))

    @operation("DELETE", "/api/evaluations/{evaluation_id}")
    def delete_evaluation(self, evaluation_id: str) -> JSON:
        """Delete an evaluation and its runs (409 while one of them runs)."""
        return self._json("DELETE", self._evaluation(evaluation_id))

    @operation("POST", "/api/evaluations/{evaluation_id}/runs")
    def start_evaluation_run(self, evaluation_id: str, **body: Any) -> JSON:
        """Start a run of the evaluation; body fields as `start_run`'s but `dataset_id`,
        `candidate` and `version` (the evaluation decides them)."""
        return self._json("POST", self._evaluation(evaluation_id, "/runs"), json=_fields(**body))

    @operation("GET", "/api/evaluations/{evaluation_id}/runs")
    def evaluation_runs(self, evaluation_id: str, **query: Any) -> JSON:
        """The evaluation's run history, newest first (`limit`, `cursor`)."""
        return self._json("GET", self._evaluation(evaluation_id, "/runs"), params=_fields(**query))

    @operation("GET", "/api/evaluations/{evaluation_id}/runs/{run_id}")
    def get_evaluation_run(self, evaluation_id: str, run_id: str) -> JSON:
        """One run of the evaluation with all its results (as `get_run`)."""
        return self._json(
            "GET", self._evaluation(evaluation_id, _path("/runs/{run_id}", run_id=run_id))
        )

    @operation("DELETE", "/api/evaluations/{evaluation_id}/runs/{run_id}")
    def delete_evaluation_run(self, evaluation_id: str, run_id: str) -> JSON:
        """Delete one run of the evaluation (as `delete_run`)."""
        return self._json(
            "DELETE", self._evaluation(evaluation_id, _path("/runs/{run_id}", run_id=run_id))
        )

    @operation("POST", "/api/v1/agent-summaries")
    def agent_summaries(self, agents: list[JSON]) -> JSON:
        """Verdict summaries of up to 100 agents (`[{agentId, agentVersion?}]`)."""
        return self._json("POST", "/api/v1/agent-summaries", json={"agents": agents})

    @operation("POST", "/api/evaluations/agent-summaries")
    def evaluation_summaries(self, agents: list[JSON]) -> JSON:
        """The summaries route under `/api/evaluations/` (the same as `agent_summaries`)."""
        return self._json("POST", "/api/evaluations/agent-summaries", json={"agents": agents})
