"""The model profile every judge of the e2e tests grades with (tests only)."""

from __future__ import annotations

from typing import Any


def grader_profile(api: Any, base_url: str, **extra: Any) -> None:
    """Save the model profile `grader` (model `judge-model`) that sends a judge's requests to
    `base_url` (a fake OpenAI-compatible server on 127.0.0.1); `extra` adds fields (`price`)."""
    api.ok(
        "POST",
        "/api/v1/model-profiles",
        json={
            "model_profile_id": "grader",
            "model": "judge-model",
            "settings": {"base_url": base_url},
            **extra,
        },
    )
