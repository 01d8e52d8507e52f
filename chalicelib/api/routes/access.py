"""Routes of the contract and of access: the OpenAPI document, who asks, members, grants,
API keys."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chalicelib.api.common import api_view
from chalicelib.api.lazy import LazyModule
from chalicelib.api.routes.base import bp
from chalicelib.api.schemas import AddMember, ChangeMember, CreateApiKey, PutGrant
from chalicelib.errors import NotFoundError

if TYPE_CHECKING:
    from chalicelib.api import views
    from chalicelib.services import access as access_service
else:  # imported by the first request that needs each (`chalicelib.api.lazy`)
    views = LazyModule("chalicelib.api.views")
    access_service = LazyModule("chalicelib.services.access")


# --- the contract ----------------------------------------------------------------------------


@bp.route("/openapi.json", methods=["GET"])
@api_view(bp, auth=False)
def openapi_document(c, who):
    """The OpenAPI 3.1 document of every route (public: it holds no tenant's data)."""
    from chalicelib.api import openapi  # built on the first request, not at a cold start

    return openapi.document(bp.current_app)


# --- access: who asks, members, grants, API keys (docs/reference/access.md) ----------------------


@bp.route("/api/v1/me", methods=["GET"])
@api_view(bp)
def get_me(c, who):
    """Who this request is resolved as, and what they may do now."""
    return views.me_view(who, c.members.get(who.org_id, who.user_id))


@bp.route("/api/v1/members", methods=["GET"])
@api_view(bp)
def list_members(c, who):
    return {"members": [views.member_view(m) for m in access_service.list_members(c, who)]}


@bp.route("/api/v1/members", methods=["POST"])
@api_view(bp, body=AddMember)
def add_member(c, who, body):
    return views.member_view(access_service.add_member(c, who, body.user_id, body.role)), 201


@bp.route("/api/v1/members/{user_id}", methods=["GET"])
@api_view(bp)
def get_member(c, who, user_id):
    who.require("members:manage", "reading a member")
    found = c.members.get(who.org_id, user_id)
    if found is None:
        raise NotFoundError(f"{user_id} is not a member", field="user_id")
    return views.member_view(found)


@bp.route("/api/v1/members/{user_id}", methods=["PATCH"])
@api_view(bp, body=ChangeMember)
def change_member(c, who, user_id, body):
    return views.member_view(access_service.change_role(c, who, user_id, body.role))


@bp.route("/api/v1/members/{user_id}", methods=["DELETE"])
@api_view(bp)
def remove_member(c, who, user_id):
    access_service.remove_member(c, who, user_id)
    return {"user_id": user_id, "deleted": True}


@bp.route("/api/v1/members/{user_id}/grants/{kind}/{resource_id}", methods=["PUT"])
@api_view(bp, body=PutGrant)
def put_grant(c, who, user_id, kind, resource_id, body):
    member = access_service.set_grant(c, who, user_id, kind, resource_id, body.permissions)
    return views.member_view(member)


@bp.route("/api/v1/members/{user_id}/grants/{kind}/{resource_id}", methods=["DELETE"])
@api_view(bp)
def delete_grant(c, who, user_id, kind, resource_id):
    return views.member_view(access_service.remove_grant(c, who, user_id, kind, resource_id))


@bp.route("/api/v1/api-keys", methods=["POST"])
@api_view(bp, body=CreateApiKey)
def create_api_key(c, who, body):
    """Issue an API key; its `key` (the bearer value) is shown in this answer only."""
    key, bearer = access_service.create_api_key(c, who, body.name, body.scopes)
    return {**views.api_key_view(key), "key": bearer}, 201


@bp.route("/api/v1/api-keys", methods=["GET"])
@api_view(bp)
def list_api_keys(c, who):
    return {"api_keys": [views.api_key_view(k) for k in access_service.list_api_keys(c, who)]}


@bp.route("/api/v1/api-keys/{key_id}", methods=["DELETE"])
@api_view(bp)
def revoke_api_key(c, who, key_id):
    return views.api_key_view(access_service.revoke_api_key(c, who, key_id))
