"""The client's access methods: who asks (`me`), members, their grants, API keys."""

from __future__ import annotations

from assay.transport import JSON, ApiBase, _fields, _path, operation


class AccessApi(ApiBase):
    """Who asks, the organization's members and grants, API keys."""

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
