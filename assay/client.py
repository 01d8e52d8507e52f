"""A typed Python client of the assay HTTP API (issue 13, scope 2), on httpx.

Every route of the OpenAPI document (`GET /openapi.json`) has one method here, named by
`@operation`; `tests/unit/test_client_contract.py` checks the two against each other both ways,
so a route added to the service without a method here (or a method naming a route the service does
not have) fails the tests. Bodies and queries are passed as keyword arguments whose names are the
API's fields; a value of None is left out. Answers are the API's JSON (`dict`).

    from assay.client import AssayClient
    api = AssayClient("https://assay.example.com", token)
    run = api.start_run("agt_1", dataset_id="ds_1", candidate="draft")
    run = api.wait(run["run_id"])

Errors: `ApiError` for every answer of 400 and above (its `status`, the error body's `code`,
`message`, `field` and the request id), `ApiUnreachable` when no answer came at all.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar
from urllib.parse import quote

import httpx

JSON = dict[str, Any]
F = TypeVar("F", bound=Callable[..., Any])

OPERATIONS: dict[tuple[str, str], str] = {}
"""`(METHOD, path template)` -> the method of `AssayClient` that calls it."""

ENDED = frozenset({"completed", "failed", "cancelled", "budget_exceeded"})
"""Run statuses after which nothing more starts (seed 001 "Runs")."""


def operation(method: str, path: str) -> Callable[[F], F]:
    """Name the route a client method calls (kept in `OPERATIONS`)."""

    def mark(fn: F) -> F:
        OPERATIONS[(method, path)] = fn.__name__
        return fn

    return mark


def sign_event(event: dict[str, Any], secret: str) -> dict[str, Any]:
    """`event` (a message for the agent-events queue) with its `signature`: `sha256=` and the hex
    HMAC-SHA256, keyed with the organization's `pipeline-signing-key` secret, of the event's
    canonical JSON (sorted keys, no whitespace, UTF-8 as is) without `signature`."""
    unsigned = {k: v for k, v in event.items() if k != "signature"}
    text = json.dumps(unsigned, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    digest = hmac.new(secret.encode(), text.encode(), hashlib.sha256).hexdigest()
    return {**unsigned, "signature": f"sha256={digest}"}


class ApiError(Exception):
    """The API answered `status` >= 400. `code`, `message` and `field` come from its error body
    (`{"error": {"code", "message", "field"?}}`), `request_id` from the body or the
    `X-Request-Id` header when the service gave one, `body` is the whole JSON (or None)."""

    def __init__(
        self,
        method: str,
        path: str,
        status: int,
        body: Any,
        request_id: str | None = None,
    ) -> None:
        error = body.get("error") if isinstance(body, dict) else None
        error = error if isinstance(error, dict) else {}
        self.method, self.path, self.status, self.body = method, path, status, body
        self.code: str = str(error.get("code") or f"http_{status}")
        self.message: str = str(error.get("message") or (body if isinstance(body, str) else ""))
        self.field: str | None = error.get("field")
        self.error: dict[str, Any] = error
        self.request_id: str | None = error.get("request_id") or request_id
        where = f" (field {self.field})" if self.field else ""
        rid = f" [request {self.request_id}]" if self.request_id else ""
        super().__init__(f"{method} {path} -> {status} {self.code}: {self.message}{where}{rid}")


class ApiUnreachable(Exception):
    """No answer from the API (refused, timed out, bad URL)."""


PATH_SAFE = "!$&'()*+,;=:@"
"""What a path segment holds as it is (RFC 3986 `pchar`): a user id such as `ana+ci@example.com`
goes as written, because Chalice hands a path parameter to its route still percent-encoded,
locally and behind API Gateway (aws/chalice#511): `ana%40example.com` would name nobody."""


def _path(template: str, **ids: Any) -> str:
    """`template` with each `{name}` replaced by its id, quoted as one path segment (`PATH_SAFE`
    left as it is)."""
    out = template
    for name, value in ids.items():
        out = out.replace("{" + name + "}", quote(str(value), safe=PATH_SAFE))
    return out


def _fields(**values: Any) -> JSON:
    """The fields given (None left out)."""
    return {k: v for k, v in values.items() if v is not None}


class AssayClient:
    """The assay API at `base_url` as organization member `token` (a bearer token).

    Args:
        base_url: e.g. `https://<api-id>.execute-api.<region>.amazonaws.com/api` or the
            `ASSAY_URL` that `assay dev` prints.
        token: the bearer token (`ASSAY_TOKEN`).
        timeout_s: seconds per request.
        transport: an httpx transport (tests).
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout_s: float = 60.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.base_url,
            timeout=timeout_s,
            headers={"Authorization": f"Bearer {token}", "User-Agent": "assay-client/0.1"},
            transport=transport,
        )

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> AssayClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def request(
        self, method: str, path: str, *, json: Any = None, params: JSON | None = None
    ) -> Any:
        """One API call; the answer's JSON (None for an empty answer).

        Raises:
            ApiError: the API answered 400 or above.
            ApiUnreachable: no answer.
        """
        try:
            resp = self._http.request(method, path, json=json, params=params or None)
        except httpx.HTTPError as exc:
            raise ApiUnreachable(f"{method} {self.base_url}{path}: {exc}") from None
        body: Any = None
        if resp.content:
            try:
                body = resp.json()
            except ValueError:
                body = resp.text
        if resp.status_code >= 400:
            raise ApiError(method, path, resp.status_code, body, resp.headers.get("x-request-id"))
        return body

    def _json(
        self, method: str, path: str, *, json: Any = None, params: JSON | None = None
    ) -> JSON:
        """`request` for the routes that answer a JSON object."""
        body = self.request(method, path, json=json, params=params)
        return body if isinstance(body, dict) else {"value": body}

    # --- the document -----------------------------------------------------------------------

    @operation("GET", "/openapi.json")
    def openapi(self) -> JSON:
        """The OpenAPI 3.1 document of the API."""
        return self._json("GET", "/openapi.json")

    # --- access: who asks, members, grants, API keys ------------------------------------------

    @operation("GET", "/api/v1/me")
    def me(self) -> JSON:
        """Who this client is signed in as, their role and what they may do now."""
        return self._json("GET", "/api/v1/me")

    @operation("GET", "/api/v1/members")
    def list_members(self) -> JSON:
        """The organization's members (needs members:manage)."""
        return self._json("GET", "/api/v1/members")

    @operation("POST", "/api/v1/members")
    def add_member(self, *, user_id: str, role: str) -> JSON:
        """Add a person with a role: guest, viewer, runner, editor or admin."""
        return self._json("POST", "/api/v1/members", json={"user_id": user_id, "role": role})

    @operation("GET", "/api/v1/members/{user_id}")
    def get_member(self, user_id: str) -> JSON:
        """One member, their role and grants."""
        return self._json("GET", _path("/api/v1/members/{user_id}", user_id=user_id))

    @operation("PATCH", "/api/v1/members/{user_id}")
    def change_member(self, user_id: str, *, role: str) -> JSON:
        """Give a member another role."""
        return self._json(
            "PATCH", _path("/api/v1/members/{user_id}", user_id=user_id), json={"role": role}
        )

    @operation("DELETE", "/api/v1/members/{user_id}")
    def remove_member(self, user_id: str) -> JSON:
        """Remove a member."""
        return self._json("DELETE", _path("/api/v1/members/{user_id}", user_id=user_id))

    @operation("PUT", "/api/v1/members/{user_id}/grants/{kind}/{resource_id}")
    def put_grant(
        self, user_id: str, kind: str, resource_id: str, *, permissions: list[str]
    ) -> JSON:
        """Grant a member permissions on one agent or dataset (`kind` "agent" or "dataset")."""
        path = _path(
            "/api/v1/members/{user_id}/grants/{kind}/{resource_id}",
            user_id=user_id,
            kind=kind,
            resource_id=resource_id,
        )
        return self._json("PUT", path, json={"permissions": permissions})

    @operation("DELETE", "/api/v1/members/{user_id}/grants/{kind}/{resource_id}")
    def delete_grant(self, user_id: str, kind: str, resource_id: str) -> JSON:
        """Take a member's grant on one agent or dataset away."""
        path = _path(
            "/api/v1/members/{user_id}/grants/{kind}/{resource_id}",
            user_id=user_id,
            kind=kind,
            resource_id=resource_id,
        )
        return self._json("DELETE", path)

    @operation("POST", "/api/v1/api-keys")
    def create_api_key(self, *, scopes: list[str], name: str | None = None) -> JSON:
        """Issue an API key with `scopes` (a subset of yours); its `key` is shown only here."""
        return self._json("POST", "/api/v1/api-keys", json=_fields(name=name, scopes=scopes))

    @operation("GET", "/api/v1/api-keys")
    def list_api_keys(self) -> JSON:
        """Your API keys (every key of the organization for a members:manage holder)."""
        return self._json("GET", "/api/v1/api-keys")

    @operation("DELETE", "/api/v1/api-keys/{key_id}")
    def revoke_api_key(self, key_id: str) -> JSON:
        """Revoke an API key at once."""
        return self._json("DELETE", _path("/api/v1/api-keys/{key_id}", key_id=key_id))

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
    def put_draft(self, agent_id: str, *, spec: JSON) -> JSON:
        """Replace the agent's draft spec."""
        return self._json(
            "PUT", _path("/api/v1/agents/{agent_id}/draft", agent_id=agent_id), json={"spec": spec}
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

    # --- eval runs --------------------------------------------------------------------------

    @operation("POST", "/api/v1/agents/{agent_id}/eval-runs/estimate")
    def estimate(self, agent_id: str, *, dataset_id: str, **body: Any) -> JSON:
        """What a start with the same body would cost and leave of the budgets (seed 004 "The
        budget it leaves"); the body's fields as `start_run`'s."""
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
        `model_profile_ids`, `stability`."""
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

    # --- seed 001's evaluation routes, summaries --------------------------------------------

    @operation("GET", "/api/evaluations/progress/{run_id}")
    def evaluation_progress(self, run_id: str) -> JSON:
        """Seed 001's progress route (the same as `progress`)."""
        return self._json("GET", _path("/api/evaluations/progress/{run_id}", run_id=run_id))

    @operation("GET", "/api/evaluations/stream/{run_id}")
    def evaluation_stream(self, run_id: str, **query: Any) -> JSON:
        """Seed 001's stream route (the same as `events`)."""
        return self._json(
            "GET", _path("/api/evaluations/stream/{run_id}", run_id=run_id), params=_fields(**query)
        )

    @operation("POST", "/api/evaluations")
    def create_evaluation(self, *, agent_id: str, dataset_id: str, **body: Any) -> JSON:
        """Create an evaluation (seed 001): `agent_id`, `dataset_id`, and optionally `version`
        (`latest` default, `published` or a number), `name`, `evaluation_id`."""
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
        """Seed 001's summaries route (the same as `agent_summaries`)."""
        return self._json("POST", "/api/evaluations/agent-summaries", json={"agents": agents})

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
