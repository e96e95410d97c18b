"""No secret value appears anywhere, in any format of the diff or the plan."""

from __future__ import annotations

import hashlib
import textwrap
from pathlib import Path

import pytest

from rollout.masking import mask_text, secret_key
from tests.rollout.diffkit import commit, new_repo, run_cli

# Assembled at run time so the repository's own token-shapes hook never sees a literal.
SECRETS = {
    "hf": "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "password": "correct horse battery staple",
    "apikey": "sk-live-0123456789abcdefABCDEF",
    "label": "Zq8Rk2Lm9Xv4Tn7Pb3Hw6Jd1Fs5Gc0Ya",
    "jwt": "eyJhbGciOiJIUzI1NiJ9"
    + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0"
    + ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "yaml": "hunter2-but-longer",
    "default": "s3cr3t-default-value",
}


def compose(version: str) -> str:
    """A file whose secrets all change between version "old" and "new"."""
    s = {name: f"{value}{version}" for name, value in SECRETS.items()}
    return textwrap.dedent(
        f"""\
        services:
          engine:
            image: lmsysorg/sglang:v0.5.16
            command: [sglang, serve, --served-model-name, m, --api-key, "{s["apikey"]}", --port, "8000"]
            environment:
              HF_TOKEN: {s["hf"]}
              DB_PASSWORD: "{s["password"]}"
              GATEWAY_TOKEN: ${{GATEWAY_TOKEN:-{s["default"]}}}
              PROXY_API_TOKEN: ${{PROXY_API_TOKEN:?required{version}}}
            labels:
              com.example.build: {s["label"]}
            configs: [collector, notes]
            deploy:
              resources:
                reservations:
                  devices: [{{driver: nvidia, device_ids: ["0"], capabilities: [gpu]}}]
        configs:
          collector:
            content: |
              receivers: {{otlp: {{}}}}
              exporters:
                gateway:
                  password: {s["yaml"]}
          notes:
            content: |
              curl -fsS -H 'Authorization: Bearer {s["jwt"]}' https://gateway.invalid/v1/ping
        """
    )


def outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> str:
    repo = new_repo(tmp_path, {"prod/x.yaml": compose("old")})
    commit(repo, {"prod/x.yaml": compose("new")}, "head")
    texts = []
    for command in ("diff", "plan"):
        for fmt in ("text", "markdown", "json"):
            code, out, err = run_cli(
                monkeypatch, capsys, repo, [command, "--base", "HEAD~1", "--format", fmt]
            )
            assert code == 0, err
            texts.append(out + err)
    return "\n".join(texts)


def test_no_secret_value_appears_in_any_format(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    everything = outputs(tmp_path, monkeypatch, capsys)
    for name, value in SECRETS.items():
        for version in ("old", "new"):
            assert f"{value}{version}" not in everything, name
        assert value not in everything, name


def test_a_masked_value_says_it_changed_with_a_short_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    everything = outputs(tmp_path, monkeypatch, capsys)
    old = hashlib.sha256(f"{SECRETS['password']}old".encode()).hexdigest()[:8]
    new = hashlib.sha256(f"{SECRETS['password']}new".encode()).hexdigest()[:8]
    assert f"engine: env DB_PASSWORD: <secret sha256:{old}> -> <secret sha256:{new}>" in everything


def test_a_reference_to_a_secret_is_shown_because_it_is_not_the_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    everything = outputs(tmp_path, monkeypatch, capsys)
    assert (
        "engine: env PROXY_API_TOKEN: ${PROXY_API_TOKEN:?requiredold} -> ${PROXY_API_TOKEN:?requirednew}"
        in everything
    )


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("HF_TOKEN", True),
        ("PROXY_API_TOKEN", True),
        ("--api-key", True),
        ("Authorization", True),
        ("db.password", True),
        ("SIGNING_KEY_PATH", False),
        ("--max-prefill-tokens", False),
        ("--enable-dynamic-batch-tokenizer", False),
        ("tierops.otel.config_variant", False),
        ("key", False),
    ],
)
def test_secret_looking_keys(key: str, secret: bool) -> None:
    assert secret_key(key) is secret


def test_token_shaped_text_is_masked_and_ordinary_text_is_not() -> None:
    assert mask_text("token hf_AbCdEfGhIjKlMnOpQrStUv here").startswith("token <secret sha256:")
    ordinary = (
        "fc91d24-long-context-w4afp8-c8192-qsplit-hicache-pdi1-h200-tp4-ep4-dyntok "
        "/root/.cache/huggingface/hub/models--graphistry--GLM-5.3-Flash-W4AFP8/snapshots/"
        "99f1fa70408c52b007d4fd69e02e5a522422e755 sha256:47aff791090003a37f893e998c44794c410d3f7bdfc7fdd2dfab5eb5592b30bb"
    )
    assert mask_text(ordinary) == ordinary
