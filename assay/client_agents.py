"""The client's agent methods: agents, drafts and versions, model profiles, environments and
their test connections, connections, promotions and suites."""

from __future__ import annotations

from typing import Any

from assay.transport import JSON, ApiBase, _fields, _path, operation


class AgentsApi(ApiBase):
    """Agents and their versions, model profiles, environments, promotions, suites."""

    # --- agents -----------------------------------------------------------------------------

    @operation("POST", "/api/v1/agents")
    def create_agent(self, *, name: str, spec: JSON, agent_id: str | None = None) -> JSON:
        """Create an agent with its first draft `spec`."""
        return self._json(
            "POST", "/api/v1/agents", json=_fields(name=name, spec=spec, agent_id=agent_id)
        )

    @operation("GET", "/api/v1/agents")
    def list_agents(self) -> JSON:
        """The organization's agents."""
        return self._json("GET", "/api/v1/agents")

    @operation("GET", "/api/v1/agents/{agent_id}")
    def get_agent(self, agent_id: str) -> JSON:
        """One agent."""
        return self._json("GET", _path("/api/v1/agents/{agent_id}", agent_id=agent_id))

    @operation("DELETE", "/api/v1/agents/{agent_id}")
    def delete_agent(self, agent_id: str) -> JSON:
        """Delete an agent and everything of it (its runs, suites, evaluations, promotions...);
        409 while one of its runs is queued or running."""
        return self._json("DELETE", _path("/api/v1/agents/{agent_id}", agent_id=agent_id))

    @operation("GET", "/api/v1/agents/{agent_id}/draft")
    def get_draft(self, agent_id: str) -> JSON:
        """The agent's draft."""
        return self._json("GET", _path("/api/v1/agents/{agent_id}/draft", agent_id=agent_id))

    @operation("PUT", "/api/v1/agents/{agent_id}/draft")
    def put_draft(self, agent_id: str, *, spec: JSON, name: str | None = None) -> JSON:
        """Replace the agent's draft spec (and rename it when `name` is given)."""
        return self._json(
            "PUT",
            _path("/api/v1/agents/{agent_id}/draft", agent_id=agent_id),
            json=_fields(spec=spec, name=name),
        )

    @operation("POST", "/api/v1/agents/{agent_id}/versions")
    def publish(self, agent_id: str, **body: Any) -> JSON:
        """Publish the draft as the next version."""
        return self._json(
            "POST",
            _path("/api/v1/agents/{agent_id}/versions", agent_id=agent_id),
            json=_fields(**body),
        )

    @operation("GET", "/api/v1/agents/{agent_id}/versions")
    def list_versions(self, agent_id: str) -> JSON:
        """The agent's published versions."""
        return self._json("GET", _path("/api/v1/agents/{agent_id}/versions", agent_id=agent_id))

    @operation("GET", "/api/v1/agents/{agent_id}/versions/{version}")
    def get_version(self, agent_id: str, version: int) -> JSON:
        """One published version."""
        return self._json(
            "GET",
            _path(
                "/api/v1/agents/{agent_id}/versions/{version}", agent_id=agent_id, version=version
            ),
        )

    # --- model profiles, environments, promotions -------------------------------------------

    @operation("POST", "/api/v1/model-profiles")
    def create_model_profile(self, **body: Any) -> JSON:
        """Create a model profile (`model_profile_id`, `model`, ...)."""
        return self._json("POST", "/api/v1/model-profiles", json=_fields(**body))

    @operation("GET", "/api/v1/model-profiles")
    def list_model_profiles(self) -> JSON:
        """The organization's model profiles."""
        return self._json("GET", "/api/v1/model-profiles")

    @operation("GET", "/api/v1/model-profiles/{model_profile_id}")
    def get_model_profile(self, model_profile_id: str) -> JSON:
        """One model profile."""
        return self._json(
            "GET",
            _path("/api/v1/model-profiles/{model_profile_id}", model_profile_id=model_profile_id),
        )

    @operation("DELETE", "/api/v1/model-profiles/{model_profile_id}")
    def delete_model_profile(self, model_profile_id: str) -> Any:
        """Delete a model profile."""
        return self.request(
            "DELETE",
            _path("/api/v1/model-profiles/{model_profile_id}", model_profile_id=model_profile_id),
        )

    @operation("POST", "/api/v1/environments")
    def create_environment(self, **body: Any) -> JSON:
        """Create an environment (`environment_id`, `name`, ...)."""
        return self._json("POST", "/api/v1/environments", json=_fields(**body))

    @operation("GET", "/api/v1/environments")
    def list_environments(self) -> JSON:
        """The organization's environments."""
        return self._json("GET", "/api/v1/environments")

    @operation("GET", "/api/v1/environments/{environment_id}")
    def get_environment(self, environment_id: str) -> JSON:
        """One environment."""
        return self._json(
            "GET", _path("/api/v1/environments/{environment_id}", environment_id=environment_id)
        )

    @operation("DELETE", "/api/v1/environments/{environment_id}")
    def delete_environment(self, environment_id: str) -> Any:
        """Delete an environment."""
        return self.request(
            "DELETE", _path("/api/v1/environments/{environment_id}", environment_id=environment_id)
        )

    @operation("PUT", "/api/v1/environments/{environment_id}/test-connections")
    def set_test_connections(self, environment_id: str, test_connections: dict[str, str]) -> JSON:
        """Replace an environment's test connections (`{connection_id: test_connection_id}`)."""
        return self._json(
            "PUT",
            _path(
                "/api/v1/environments/{environment_id}/test-connections",
                environment_id=environment_id,
            ),
            json={"test_connections": test_connections},
        )

    # --- connections ---------------------------------------------------------------------------

    @operation("POST", "/api/v1/connections")
    def create_connection(self, **body: Any) -> JSON:
        """Create a connection (`connection_id`, `kind`, `url`, `auth_secret`?, `description`?)."""
        return self._json("POST", "/api/v1/connections", json=_fields(**body))

    @operation("GET", "/api/v1/connections")
    def list_connections(self) -> JSON:
        """The organization's connections."""
        return self._json("GET", "/api/v1/connections")

    @operation("GET", "/api/v1/connections/{connection_id}")
    def get_connection(self, connection_id: str) -> JSON:
        """One connection."""
        return self._json(
            "GET", _path("/api/v1/connections/{connection_id}", connection_id=connection_id)
        )

    @operation("DELETE", "/api/v1/connections/{connection_id}")
    def delete_connection(self, connection_id: str) -> Any:
        """Delete a connection (409 while an eval run or an environment uses it)."""
        return self.request(
            "DELETE", _path("/api/v1/connections/{connection_id}", connection_id=connection_id)
        )

    @operation("POST", "/api/v1/agents/{agent_id}/promotions")
    def promote(self, agent_id: str, *, environment_id: str, version: int) -> JSON:
        """Promote `version` onto `environment_id` (it may wait for the guards' runs)."""
        return self._json(
            "POST",
            _path("/api/v1/agents/{agent_id}/promotions", agent_id=agent_id),
            json={"environment_id": environment_id, "version": version},
        )

    @operation("GET", "/api/v1/agents/{agent_id}/promotions")
    def list_promotions(self, agent_id: str) -> JSON:
        """The agent's promotions."""
        return self._json("GET", _path("/api/v1/agents/{agent_id}/promotions", agent_id=agent_id))

    @operation("GET", "/api/v1/agents/{agent_id}/promotions/{promotion_id}")
    def get_promotion(self, agent_id: str, promotion_id: str) -> JSON:
        """One promotion."""
        return self._json(
            "GET",
            _path(
                "/api/v1/agents/{agent_id}/promotions/{promotion_id}",
                agent_id=agent_id,
                promotion_id=promotion_id,
            ),
        )

    @operation("GET", "/api/v1/agents/{agent_id}/guards")
    def guard_status(self, agent_id: str) -> JSON:
        """Each guard of the agent on each environment and its state (`passed`, `failed`,
        `corrected`, `out_of_date`, `not_checked`) with its run."""
        return self._json("GET", _path("/api/v1/agents/{agent_id}/guards", agent_id=agent_id))

    # --- suites -----------------------------------------------------------------------------

    @operation("POST", "/api/v1/agents/{agent_id}/suites")
    def create_suite(self, agent_id: str, **body: Any) -> JSON:
        """Save a suite (`dataset_id`, `threshold`, `triggers`, ...)."""
        return self._json(
            "POST",
            _path("/api/v1/agents/{agent_id}/suites", agent_id=agent_id),
            json=_fields(**body),
        )

    @operation("GET", "/api/v1/agents/{agent_id}/suites")
    def list_suites(self, agent_id: str) -> JSON:
        """The agent's suites."""
        return self._json("GET", _path("/api/v1/agents/{agent_id}/suites", agent_id=agent_id))

    def _suite(self, agent_id: str, suite_id: str, tail: str = "") -> str:
        return _path(
            "/api/v1/agents/{agent_id}/suites/{suite_id}" + tail,
            agent_id=agent_id,
            suite_id=suite_id,
        )

    @operation("GET", "/api/v1/agents/{agent_id}/suites/{suite_id}")
    def get_suite(self, agent_id: str, suite_id: str) -> JSON:
        """One suite."""
        return self._json("GET", self._suite(agent_id, suite_id))

    @operation("PATCH", "/api/v1/agents/{agent_id}/suites/{suite_id}")
    def update_suite(self, agent_id: str, suite_id: str, **body: Any) -> JSON:
        """Change a suite (any subset of its fields)."""
        return self._json("PATCH", self._suite(agent_id, suite_id), json=_fields(**body))

    @operation("DELETE", "/api/v1/agents/{agent_id}/suites/{suite_id}")
    def delete_suite(self, agent_id: str, suite_id: str) -> Any:
        """Delete a suite."""
        return self.request("DELETE", self._suite(agent_id, suite_id))

    @operation("POST", "/api/v1/agents/{agent_id}/suites/{suite_id}/pause")
    def pause_suite(self, agent_id: str, suite_id: str) -> JSON:
        """Pause a suite."""
        return self._json("POST", self._suite(agent_id, suite_id, "/pause"))

    @operation("POST", "/api/v1/agents/{agent_id}/suites/{suite_id}/resume")
    def resume_suite(self, agent_id: str, suite_id: str) -> JSON:
        """Resume a paused suite."""
        return self._json("POST", self._suite(agent_id, suite_id, "/resume"))

    @operation("POST", "/api/v1/agents/{agent_id}/suites/{suite_id}/run")
    def run_suite(self, agent_id: str, suite_id: str) -> JSON:
        """Run a suite now; the suite as it is after (`active_run_id`, `pending`)."""
        return self._json("POST", self._suite(agent_id, suite_id, "/run"))

    @operation("GET", "/api/v1/agents/{agent_id}/suites/{suite_id}/results")
    def suite_results(self, agent_id: str, suite_id: str) -> JSON:
        """A suite's results, newest first."""
        return self._json("GET", self._suite(agent_id, suite_id, "/results"))
