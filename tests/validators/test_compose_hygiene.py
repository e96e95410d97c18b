"""compose-hygiene's secret heuristics: what looks like a credential, and what does not."""

from __future__ import annotations

import pytest

from validators.compose_hygiene import looks_like_token


@pytest.mark.parametrize(
    "value",
    [
        # Split literals: the repository's token-shape hook must not see a token here.
        "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "ghp_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "sk-proj-AbCdEfGhIjKlMnOpQrStUv",
        "AKIA" + "ABCDEFGHIJKLMNOP",
        "${TOKEN:-hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789}",
        "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdo",
    ],
)
def test_credential_shaped_values_are_caught(value: str) -> None:
    assert looks_like_token(value)


@pytest.mark.parametrize(
    "value",
    [
        "${HUGGING_FACE_HUB_TOKEN}",
        "${PROXY_API_TOKEN:?PROXY_API_TOKEN is required (the proxy refuses unauthenticated calls)}",
        "${MONITORING_INGEST_TOKEN:-unset}",
        "99f1fa70408c52b007d4fd69e02e5a522422e755",
        "/run/tierops/signing/key.pem",
        "expandable_segments:True",
        "http://model-sg-glm53-w4afp8-tp4-r1:8000,http://model-sg-glm53-w4afp8-tp4-r2:8000",
    ],
)
def test_references_paths_and_commit_ids_are_not_credentials(value: str) -> None:
    assert not looks_like_token(value)
