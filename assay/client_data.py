"""The client's data methods: datasets, judges, budgets, usage, notices, secrets, recordings."""

from __future__ import annotations

from typing import Any

from assay.transport import JSON, ApiBase, _fields, _path, operation


class DataApi(ApiBase):
    """Datasets, judges, budgets, notifications, secrets and recordings."""

    # --- notifications, budgets, judges -----------------------------------------------------

    @operation("GET", "/api/v1/notifications")
    def notifications(self) -> JSON:
        """The caller's notices."""
        return self._json("GET", "/api/v1/notifications")

    @operation("POST", "/api/v1/notifications/{notification_id}/read")
    def mark_read(self, notification_id: str) -> JSON:
        """Mark a notice read."""
        return self._json(
            "POST",
            _path("/api/v1/notifications/{notification_id}/read", notification_id=notification_id),
        )

    @operation("PUT", "/api/v1/notifications/settings")
    def notification_settings(self, *, email: bool) -> JSON:
        """Whether notices are also emailed."""
        return self._json("PUT", "/api/v1/notifications/settings", json={"email": email})

    @operation("GET", "/api/v1/budget")
    def org_budget(self) -> JSON:
        """The organization's monthly budget and what is spent."""
        return self._json("GET", "/api/v1/budget")

    @operation("PUT", "/api/v1/budget")
    def set_org_budget(self, **body: Any) -> JSON:
        """Set the organization's monthly budget (`monthly_usd`)."""
        return self._json("PUT", "/api/v1/budget", json=_fields(**body))

    @operation("GET", "/api/v1/agents/{agent_id}/budget")
    def agent_budget(self, agent_id: str) -> JSON:
        """The agent's monthly budget and what is spent."""
        return self._json("GET", _path("/api/v1/agents/{agent_id}/budget", agent_id=agent_id))

    @operation("PUT", "/api/v1/agents/{agent_id}/budget")
    def set_agent_budget(self, agent_id: str, **body: Any) -> JSON:
        """Set the agent's monthly budget (`monthly_usd`)."""
        return self._json(
            "PUT",
            _path("/api/v1/agents/{agent_id}/budget", agent_id=agent_id),
            json=_fields(**body),
        )

    # --- usage and agent runs ---------------------------------------------------------------

    @operation("POST", "/api/v1/usage/runs")
    def report_usage(self, runs: list[JSON]) -> JSON:
        """Report production runs (each `{key, agent_id, cost_usd, ...}`, counted once per key)."""
        return self._json("POST", "/api/v1/usage/runs", json={"runs": runs})

    @operation("GET", "/api/v1/usage")
    def usage(self, month: str | None = None) -> JSON:
        """The month's usage: production, with the eval and grader traffic beside it."""
        return self._json("GET", "/api/v1/usage", params=_fields(month=month))

    @operation("GET", "/api/v1/agents/{agent_id}/runs")
    def agent_run_history(self, agent_id: str, **query: Any) -> JSON:
        """The agent's runs, newest first (`surface`, `exclude_surface`, `before`, `limit`)."""
        return self._json(
            "GET",
            _path("/api/v1/agents/{agent_id}/runs", agent_id=agent_id),
            params=_fields(**query),
        )

    @operation("GET", "/api/v1/runs")
    def activity(self, **query: Any) -> JSON:
        """Every agent's runs, newest first (`surface`, `exclude_surface`, `before`, `limit`)."""
        return self._json("GET", "/api/v1/runs", params=_fields(**query))

    @operation("GET", "/api/v1/runs/{agent_run_id}")
    def agent_run(self, agent_run_id: str) -> JSON:
        """One agent run, with what the model was given."""
        return self._json("GET", _path("/api/v1/runs/{agent_run_id}", agent_run_id=agent_run_id))

    @operation("PUT", "/api/v1/organizations/{org_id}/limits")
    def set_org_limits(self, org_id: str, *, concurrency: int | None) -> JSON:
        """The operator's: give organization `org_id` its own concurrency limit (case attempts in
        flight at once, 1-1000), or None to remove it (it follows `EVAL_ORG_CONCURRENCY` again).
        The client's token must be the deployment's operator key (`ASSAY_OPERATOR_KEY`)."""
        return self._json(
            "PUT",
            _path("/api/v1/organizations/{org_id}/limits", org_id=org_id),
            json={"concurrency": concurrency},
        )

    @operation("POST", "/api/v1/judges")
    def create_judge(self, **body: Any) -> JSON:
        """Create a judge."""
        return self._json("POST", "/api/v1/judges", json=_fields(**body))

    @operation("GET", "/api/v1/judges/{judge_id}")
    def get_judge(self, judge_id: str) -> JSON:
        """One judge."""
        return self._json("GET", _path("/api/v1/judges/{judge_id}", judge_id=judge_id))

    @operation("POST", "/api/v1/judges/{judge_id}/versions")
    def publish_judge(self, judge_id: str, **body: Any) -> JSON:
        """Publish a judge's next version."""
        return self._json(
            "POST",
            _path("/api/v1/judges/{judge_id}/versions", judge_id=judge_id),
            json=_fields(**body),
        )

    @operation("GET", "/api/v1/judges/{judge_id}/versions/{version}")
    def get_judge_version(self, judge_id: str, version: int) -> JSON:
        """One published judge version."""
        return self._json(
            "GET",
            _path(
                "/api/v1/judges/{judge_id}/versions/{version}", judge_id=judge_id, version=version
            ),
        )

    # --- datasets ---------------------------------------------------------------------------

    @operation("POST", "/api/v1/datasets")
    def create_dataset(self, *, name: str, dataset_id: str | None = None, **body: Any) -> JSON:
        """Create a dataset (no version yet)."""
        return self._json(
            "POST", "/api/v1/datasets", json=_fields(name=name, dataset_id=dataset_id, **body)
        )

    @operation("GET", "/api/v1/datasets")
    def list_datasets(self) -> JSON:
        """The organization's datasets."""
        return self._json("GET", "/api/v1/datasets")

    @operation("GET", "/api/v1/datasets/{dataset_id}")
    def get_dataset(self, dataset_id: str) -> JSON:
        """One dataset."""
        return self._json("GET", _path("/api/v1/datasets/{dataset_id}", dataset_id=dataset_id))

    @operation("DELETE", "/api/v1/datasets/{dataset_id}")
    def delete_dataset(self, dataset_id: str) -> JSON:
        """Delete a dataset and everything of it (its versions, cases, runs, suites,
        evaluations); 409 while one of its runs is queued or running."""
        return self._json("DELETE", _path("/api/v1/datasets/{dataset_id}", dataset_id=dataset_id))

    @operation("POST", "/api/v1/datasets/{dataset_id}/versions")
    def add_dataset_version(self, dataset_id: str, **body: Any) -> JSON:
        """Add a version: `cases` or `source: {format, content}`, with `scoring`."""
        return self._json(
            "POST",
            _path("/api/v1/datasets/{dataset_id}/versions", dataset_id=dataset_id),
            json=_fields(**body),
        )

    @operation("POST", "/api/v1/datasets/{dataset_id}/criteria")
    def add_criterion(self, dataset_id: str, *, note: str, tags: list[str], **body: Any) -> JSON:
        """Add a note as a criterion of the dataset's judge, scoped to case `tags` (publishes the
        judge's next version; `criterion_id` optional)."""
        return self._json(
            "POST",
            _path("/api/v1/datasets/{dataset_id}/criteria", dataset_id=dataset_id),
            json=_fields(note=note, tags=tags, **body),
        )

    @operation("GET", "/api/v1/datasets/{dataset_id}/versions/{version}/cases")
    def dataset_cases(self, dataset_id: str, version: int, **query: Any) -> JSON:
        """A dataset version's cases."""
        return self._json(
            "GET",
            _path(
                "/api/v1/datasets/{dataset_id}/versions/{version}/cases",
                dataset_id=dataset_id,
                version=version,
            ),
            params=_fields(**query),
        )

    @operation("GET", "/api/v1/datasets/{dataset_id}/eval-runs")
    def dataset_runs(self, dataset_id: str, **query: Any) -> JSON:
        """The eval runs measured on a dataset."""
        return self._json(
            "GET",
            _path("/api/v1/datasets/{dataset_id}/eval-runs", dataset_id=dataset_id),
            params=_fields(**query),
        )

    @operation("GET", "/api/v1/datasets/{dataset_id}/eval-runs/chart")
    def dataset_chart(self, dataset_id: str, *, last: str | None = None) -> JSON:
        """The pass-rate chart of the dataset's runs (`last`: "10", "30" or "all"): `svg`,
        `series`, `points` and the window."""
        return self._json(
            "GET",
            _path("/api/v1/datasets/{dataset_id}/eval-runs/chart", dataset_id=dataset_id),
            params=_fields(last=last),
        )

    @operation("POST", "/api/v1/datasets/{dataset_id}/scores/rescore")
    def rescore(self, dataset_id: str, **body: Any) -> JSON:
        """Grade a dataset's answers again."""
        return self._json(
            "POST",
            _path("/api/v1/datasets/{dataset_id}/scores/rescore", dataset_id=dataset_id),
            json=_fields(**body),
        )

    # --- the review queue ---------------------------------------------------------------------

    @operation("GET", "/api/v1/datasets/{dataset_id}/review")
    def review_items(self, dataset_id: str, **query: Any) -> JSON:
        """A page of the dataset's review queue (`state`, `agent_id`, `tag`, `limit`,
        `cursor`)."""
        return self._json(
            "GET",
            _path("/api/v1/datasets/{dataset_id}/review", dataset_id=dataset_id),
            params=_fields(**query),
        )

    @operation("GET", "/api/v1/datasets/{dataset_id}/review/{item_id}")
    def review_item(self, dataset_id: str, item_id: str) -> JSON:
        """One item of the review queue, with its audit entries."""
        return self._json(
            "GET",
            _path(
                "/api/v1/datasets/{dataset_id}/review/{item_id}",
                dataset_id=dataset_id,
                item_id=item_id,
            ),
        )

    @operation("POST", "/api/v1/datasets/{dataset_id}/review/{item_id}/decision")
    def decide_review(
        self, dataset_id: str, item_id: str, verdict: str, note: str | None = None
    ) -> JSON:
        """A person's verdict (`pass` or `fail`) on a waiting item."""
        return self._json(
            "POST",
            _path(
                "/api/v1/datasets/{dataset_id}/review/{item_id}/decision",
                dataset_id=dataset_id,
                item_id=item_id,
            ),
            json=_fields(verdict=verdict, note=note),
        )

    @operation("POST", "/api/v1/datasets/{dataset_id}/review/{item_id}/undo")
    def undo_review(self, dataset_id: str, item_id: str) -> JSON:
        """Take a decision back."""
        return self._json(
            "POST",
            _path(
                "/api/v1/datasets/{dataset_id}/review/{item_id}/undo",
                dataset_id=dataset_id,
                item_id=item_id,
            ),
        )

    @operation("POST", "/api/v1/datasets/{dataset_id}/review/{item_id}/criterion")
    def review_note_as_criterion(
        self, dataset_id: str, item_id: str, tags: list[str], criterion_id: str | None = None
    ) -> JSON:
        """A decision's note becomes a judge criterion for the cases carrying `tags`
        (`criterion_id` optional: `note_` and a hash of the note and tags when absent)."""
        return self._json(
            "POST",
            _path(
                "/api/v1/datasets/{dataset_id}/review/{item_id}/criterion",
                dataset_id=dataset_id,
                item_id=item_id,
            ),
            json=_fields(tags=tags, criterion_id=criterion_id),
        )

    @operation("POST", "/api/v1/eval-runs/{run_id}/review")
    def send_failed_to_review(self, run_id: str, side: str = "candidate") -> JSON:
        """Send one side's failed first answers of an ended run to the review queue."""
        return self._json(
            "POST", _path("/api/v1/eval-runs/{run_id}/review", run_id=run_id), json={"side": side}
        )

    # --- secrets, recordings ----------------------------------------------------------------

    @operation("GET", "/api/v1/secrets")
    def list_secrets(self) -> JSON:
        """The organization's secrets: names and when each changed, never values."""
        return self._json("GET", "/api/v1/secrets")

    @operation("PUT", "/api/v1/secrets/{name}")
    def put_secret(self, name: str, value: str) -> JSON:
        """Create or replace a secret."""
        return self._json("PUT", _path("/api/v1/secrets/{name}", name=name), json={"value": value})

    @operation("GET", "/api/v1/secrets/{name}")
    def get_secret(self, name: str) -> JSON:
        """A secret's name and when it changed (never its value)."""
        return self._json("GET", _path("/api/v1/secrets/{name}", name=name))

    @operation("DELETE", "/api/v1/secrets/{name}")
    def delete_secret(self, name: str) -> Any:
        """Delete a secret."""
        return self.request("DELETE", _path("/api/v1/secrets/{name}", name=name))

    @operation("POST", "/api/v1/recordings")
    def upload_recording(self, *, content: str, recording_id: str | None = None) -> JSON:
        """Upload a recording (JSONL of `{case_id, input, answer}`)."""
        return self._json(
            "POST", "/api/v1/recordings", json=_fields(content=content, recording_id=recording_id)
        )

    @operation("POST", "/api/v1/recordings/from-run/{run_id}")
    def recording_from_run(
        self, run_id: str, *, recording_id: str, arm_id: str | None = None
    ) -> JSON:
        """Make a recording of a completed run's first answers and tool calls (one line per case
        of `arm_id`, default `candidate`)."""
        return self._json(
            "POST",
            _path("/api/v1/recordings/from-run/{run_id}", run_id=run_id),
            json=_fields(recording_id=recording_id, arm_id=arm_id),
        )

    @operation("GET", "/api/v1/recordings")
    def list_recordings(self) -> JSON:
        """The organization's recordings."""
        return self._json("GET", "/api/v1/recordings")

    @operation("GET", "/api/v1/recordings/{recording_id}")
    def get_recording(self, recording_id: str) -> JSON:
        """One recording."""
        return self._json(
            "GET", _path("/api/v1/recordings/{recording_id}", recording_id=recording_id)
        )

    @operation("DELETE", "/api/v1/recordings/{recording_id}")
    def delete_recording(self, recording_id: str) -> Any:
        """Delete a recording for good."""
        return self.request(
            "DELETE", _path("/api/v1/recordings/{recording_id}", recording_id=recording_id)
        )
