"""Routes of the organization's secrets (write-only) and recordings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chalice import Response

from chalicelib.api.common import api_view
from chalicelib.api.lazy import LazyModule
from chalicelib.api.routes.base import bp
from chalicelib.api.schemas import PutSecret, RecordingFromRun, UploadRecording
from chalicelib.domain.ids import MAX_RECORDING_BYTES

if TYPE_CHECKING:
    from chalicelib.api import views
    from chalicelib.services import recordings as recording_service
    from chalicelib.services import secrets as secret_service
else:  # imported by the first request that needs each (`chalicelib.api.lazy`)
    views = LazyModule("chalicelib.api.views")
    recording_service = LazyModule("chalicelib.services.recordings")
    secret_service = LazyModule("chalicelib.services.secrets")


# --- the organization's secrets (write-only) and recordings ------------------------------------


def _no_content() -> Response:
    return Response(body="", status_code=204)


@bp.route("/api/v1/secrets", methods=["GET"])
@api_view(bp, needs=("secrets:manage",))
def list_secrets(c, who):
    return {"secrets": [views.secret_view(m) for m in secret_service.list_secrets(c, who)]}


@bp.route("/api/v1/secrets/{name}", methods=["PUT"])
@api_view(bp, body=PutSecret, needs=("secrets:manage",))
def put_secret(c, who, name, body):
    return views.secret_view(secret_service.put(c, who, name, body.value))


@bp.route("/api/v1/secrets/{name}", methods=["GET"])
@api_view(bp, needs=("secrets:manage",))
def get_secret(c, who, name):
    return views.secret_view(secret_service.get(c, who, name))


@bp.route("/api/v1/secrets/{name}", methods=["DELETE"])
@api_view(bp, needs=("secrets:manage",))
def delete_secret(c, who, name):
    secret_service.delete(c, who, name)
    return _no_content()


@bp.route("/api/v1/recordings", methods=["POST"])
@api_view(
    bp,
    body=UploadRecording,
    max_body_bytes=MAX_RECORDING_BYTES,
    too_large_field="content",
    needs=("datasets:edit",),
)
def upload_recording(c, who, body):
    meta, created = recording_service.upload(c, who, body.content, body.recording_id)
    return views.recording_view(meta), 201 if created else 200


@bp.route("/api/v1/recordings/from-run/{run_id}", methods=["POST"])
@api_view(bp, body=RecordingFromRun, needs=("datasets:edit", "runs:view"))
def recording_from_run(c, who, run_id, body):
    """A recording made of a completed run's first answers and tool calls, one line per case."""
    meta, created = recording_service.from_run(c, who, run_id, body.recording_id, body.arm_id)
    return views.recording_view(meta), 201 if created else 200


@bp.route("/api/v1/recordings", methods=["GET"])
@api_view(bp, needs=("datasets:view",))
def list_recordings(c, who):
    return {
        "recordings": [views.recording_view(m) for m in recording_service.list_recordings(c, who)]
    }


@bp.route("/api/v1/recordings/{recording_id}", methods=["GET"])
@api_view(bp, needs=("datasets:view",))
def get_recording(c, who, recording_id):
    return views.recording_view(recording_service.get(c, who, recording_id))


@bp.route("/api/v1/recordings/{recording_id}", methods=["DELETE"])
@api_view(bp, needs=("datasets:edit",))
def delete_recording(c, who, recording_id):
    recording_service.delete(c, who, recording_id)
    return _no_content()
