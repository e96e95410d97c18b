"""compose-hygiene's secrets: no secret written literally anywhere a secret goes.

Each test writes one secret into a committed prod file and pins the finding's rule, line,
column and subject, and that the secret itself is never printed. Secret-looking literals
are split so the repository's own token-shape hook does not see a token in this file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.validators.conftest import LONG, line_of, prod_text, replace_nth, run_cli
from tierops import secrets

HF = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
PASSWORD = "Tr0ub4dor-" + "horse-staple"


def _check(write_prod: Any, text: str) -> tuple[int, list[dict[str, Any]], str]:
    path: Path = write_prod(LONG, text)
    result = run_cli("--format", "json", "--rule", "compose-hygiene", path)
    return result.code, result.findings(), result.out + result.err


def _only(findings: list[dict[str, Any]]) -> dict[str, Any]:
    assert len(findings) == 1, findings
    finding: dict[str, Any] = findings[0]
    assert finding["rule"] == "compose-hygiene"
    return finding


def test_soft_default_for_the_proxy_token_is_a_literal_secret(write_prod: Any) -> None:
    text, line = replace_nth(
        prod_text(LONG),
        "${PROXY_API_TOKEN:?PROXY_API_TOKEN is required (the proxy refuses unauthenticated calls)}",
        "${PROXY_API_TOKEN:-changeme}",
    )
    code, findings, output = _check(write_prod, text)
    finding = _only(findings)
    assert (code, finding["line"], finding["col"]) == (1, line, 7)
    assert finding["message"].startswith(
        "proxy-glm53 env PROXY_API_TOKEN names a secret and has a soft default"
    )
    assert "changeme" not in output


def test_bearer_token_inside_a_healthcheck_command(write_prod: Any) -> None:
    text, line = replace_nth(
        prod_text(LONG),
        'test: [CMD, curl, -fsS, --max-time, "3", "http://localhost:8000/health"]',
        f'test: [CMD, curl, -fsS, -H, "Authorization: Bearer {PASSWORD}", "http://localhost:8000/health"]',
        nth=3,
    )
    code, findings, output = _check(write_prod, text)
    finding = _only(findings)
    assert (code, finding["line"]) == (1, line)
    assert finding["message"] == (
        "proxy-glm53 healthcheck test word 5 carries an Authorization credential; pass it from the host env"
    )
    assert PASSWORD not in output


def test_literal_bearer_in_the_collector_config_names_the_key(write_prod: Any) -> None:
    text, line = replace_nth(prod_text(LONG), "Bearer $${env:MONITORING_INGEST_TOKEN}", f"Bearer {PASSWORD}")
    code, findings, output = _check(write_prod, text)
    assert code == 1
    finding = _only(findings)
    assert (finding["line"], finding["col"]) == (line, 13)
    assert finding["message"] == (
        "configs.otelcol_app_config.content exporters.otlphttp/gateway.headers.Authorization names a secret "
        "and holds a literal value; write $${env:VAR} and set VAR in the collector's environment"
    )
    assert PASSWORD not in output


def test_literal_password_key_in_the_collector_config(write_prod: Any) -> None:
    anchor = "          headers:\n            Authorization: Bearer $${env:MONITORING_INGEST_TOKEN}\n"
    text, line = replace_nth(
        prod_text(LONG),
        anchor,
        anchor.replace(
            "          headers:\n", f"          auth:\n            password: {PASSWORD}\n          headers:\n"
        ),
    )
    code, findings, output = _check(write_prod, text)
    finding = _only(findings)
    assert (code, finding["line"], finding["col"]) == (1, line + 1, 13)
    assert (
        "exporters.otlphttp/gateway.auth.password names a secret and holds a literal value"
        in finding["message"]
    )
    assert PASSWORD not in output


def test_declared_collector_soft_default_may_hold_a_placeholder_only(write_prod: Any) -> None:
    text, line = replace_nth(
        prod_text(LONG), "${MONITORING_INGEST_TOKEN:-unset}", "${MONITORING_INGEST_TOKEN:-changeme}"
    )
    code, findings, _output = _check(write_prod, text)
    finding = _only(findings)
    assert (code, finding["line"]) == (1, line)
    assert finding["message"].startswith("otelcol-contrib env MONITORING_INGEST_TOKEN names a secret")


@pytest.mark.parametrize(
    "key", ["PGPASSWORD", "apiToken", "DB_PASS", "ENCRYPTION_KEY", "TOKEN2", "client-secret"]
)
def test_secret_like_env_keys_in_any_spelling_hold_only_references(write_prod: Any, key: str) -> None:
    anchor = "      PROXY_API_TOKEN: "
    text, line = replace_nth(prod_text(LONG), anchor, f"      {key}: {PASSWORD}\n{anchor}")
    code, findings, output = _check(write_prod, text)
    finding = _only(findings)
    assert (code, finding["line"], finding["col"]) == (1, line, 7)
    var = key if key.isidentifier() else "VAR"
    assert finding["message"] == (
        f"proxy-glm53 env {key} names a secret and holds a literal value; pass it from the host: ${{{var}:?{var} is required}}"
    )
    assert PASSWORD not in output


def test_token_shape_under_an_innocent_key(write_prod: Any) -> None:
    text, line = replace_nth(
        prod_text(LONG), "      HF_TOKEN: ${HUGGING_FACE_HUB_TOKEN}\n", f"      HF_HOME_HINT: {HF}\n"
    )
    code, findings, output = _check(write_prod, text)
    finding = _only(findings)
    assert (code, finding["line"]) == (1, line)
    assert "model-downloader env HF_HOME_HINT carries a Hugging Face token" in finding["message"]
    assert HF not in output


def test_literal_value_of_a_secret_flag_in_the_command(write_prod: Any) -> None:
    text, line = replace_nth(
        prod_text(LONG),
        "      - --enable-dynamic-batch-tokenizer\n",
        f"      - --enable-dynamic-batch-tokenizer\n      - --api-key\n      - {PASSWORD}\n",
    )
    code, findings, output = _check(write_prod, text)
    finding = _only(findings)
    assert (code, finding["line"]) == (1, line + 1)
    assert finding["message"].startswith("model-sg-glm53-w4afp8-tp4-r1 command word ")
    assert finding["message"].endswith("carries a literal --api-key value; pass it from the host env")
    assert PASSWORD not in output


def test_literal_token_assigned_in_the_registrar_script(write_prod: Any) -> None:
    text = prod_text(LONG)
    line = line_of(text, '-H "Authorization: Bearer $$REGISTRAR_TOKEN"')
    text = text.replace('"Authorization: Bearer $$REGISTRAR_TOKEN"', f'"Authorization: Bearer {PASSWORD}"')
    code, findings, output = _check(write_prod, text)
    finding = _only(findings)
    assert (code, finding["line"]) == (1, line)
    assert finding["message"].startswith("configs.registrar_script.content line ")
    assert finding["message"].endswith("carries an Authorization credential; read it from the environment")
    assert PASSWORD not in output


def test_literal_secret_label(write_prod: Any) -> None:
    anchor = '      tierops.otel.scrape: "true"\n'
    text, line = replace_nth(prod_text(LONG), anchor, f"      tierops.auth_token: {PASSWORD}\n{anchor}")
    code, findings, output = _check(write_prod, text)
    finding = _only(findings)
    assert (code, finding["line"]) == (1, line)
    assert finding["message"].startswith(
        "model-sg-glm53-w4afp8-tp4-r1 label tierops.auth_token names a secret"
    )
    assert PASSWORD not in output


def test_the_committed_files_carry_no_secret(write_prod: Any) -> None:
    assert _check(write_prod, prod_text(LONG))[:2] == (0, [])


# -- tierops.secrets: what is and is not a secret ----------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "PGPASSWORD",
        "apiToken",
        "DB_PASS",
        "ENCRYPTION_KEY",
        "TOKEN2",
        "--api-key",
        "Authorization",
        "x-api-key",
    ],
)
def test_secret_like_keys(key: str) -> None:
    assert secrets.secret_key(key)


@pytest.mark.parametrize(
    "key",
    [
        "SIGNING_KEY_PATH",
        "--max-prefill-tokens",
        "HF_TOKEN_FILE",
        "bypass",
        "key_id",
        "--enable-dynamic-batch-tokenizer",
        "--swa-full-tokens-ratio",
        "TOKEN_REFRESH_INTERVAL",
    ],
)
def test_keys_naming_where_or_how_many_are_not_secrets(key: str) -> None:
    assert not secrets.secret_key(key)


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("changeme", "literal"),
        ("${PROXY_API_TOKEN:-changeme}", "soft-default"),
        ("${X:+abc}", "soft-default"),
        ("${X-}", "soft-default"),
        ("abc${X}", "literal"),
    ],
)
def test_literals_where_a_secret_goes(value: str, kind: str) -> None:
    literal = secrets.literal_in(value)
    assert literal is not None and literal.kind == kind


@pytest.mark.parametrize(
    "value",
    [
        "${X}",
        "${X:?required}",
        "Bearer ${X}",
        "${X:-${Y}}",
        "$$REGISTRAR_TOKEN",
        "Bearer $${env:TOKEN}",
        "/run/key.pem",
    ],
)
def test_references_and_paths_are_not_literals(value: str) -> None:
    assert secrets.literal_in(value) is None


@pytest.mark.parametrize(
    "text",
    [
        "fc91d24-long-context-w4afp8-c8192-qsplit-hicache-pdi1-h200-tp4-ep4-dyntok",
        "/root/.cache/huggingface/hub/models--graphistry--GLM-5.3-Flash-W4AFP8/snapshots/99f1fa70408c52b007d4fd69e02e5a522422e755",
        "http://model-sg-glm53-w4afp8-tp4-r1:8000,http://model-sg-glm53-w4afp8-tp4-r2:8000",
        'curl -H "Authorization: Bearer $REGISTRAR_TOKEN" "$GATEWAY_URL/v1/endpoints/register"',
    ],
)
def test_names_paths_and_references_in_free_text_are_not_credentials(text: str) -> None:
    assert list(secrets.text_hits(text)) == []


@pytest.mark.parametrize(
    ("text", "what"),
    [
        (HF, "a Hugging Face token (hf_ + 30 or more letters or digits)"),
        ("Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdo", "a high-entropy token"),
        (f"curl -H 'Authorization: Bearer {PASSWORD}'", "an Authorization credential"),
        (f"DB_PASS={PASSWORD} psql", "a literal DB_PASS"),
        (f"NOTE=DB_PASS={PASSWORD}", "a literal DB_PASS"),  # inside an innocent name's value
        (f'{{"X-Api-Key": "{PASSWORD}"}}', "an Authorization credential"),  # a quoted (JSON) key
        (f"PRIVATE-TOKEN: {PASSWORD}", "an Authorization credential"),  # GitLab's header
        (f"X-Auth-Token={PASSWORD}", "an Authorization credential"),
    ],
)
def test_credentials_in_free_text(text: str, what: str) -> None:
    hits = list(secrets.text_hits(text))
    assert [hit.what for hit in hits][:1] == [what]
    credential = PASSWORD if PASSWORD in text else text
    assert text[hits[0].start : hits[0].end] == credential  # the span is the credential's own


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # A model architecture inside an argv's JSON: a class name of whole words.
        ('{"architectures": ["Qwen3ForSequenceClassification"]}', False),
        ("LlamaForCausalLMWithValueHead2024", False),
        # Random tokens that mix cases are still tokens.
        ("QwenXk3ForSeqZZ9classificationAbc", True),
        ("aB3xK9mQ2wE7rT5yU1iO8pL4", True),
        ("K7QX9ZP2LM4RT8WZ3QB6YH1N", True),
    ],
)
def test_a_class_name_is_not_a_high_entropy_token(text: str, secret: bool) -> None:
    assert any(hit.what == "a high-entropy token" for hit in secrets.text_hits(text)) is secret


def test_the_output_boundary_reads_headers_as_the_findings_do() -> None:
    from rollout.diff import secret_values as masking

    # The module's own names (it imports them and does not re-export them).
    assert vars(masking)["HEADER"] is secrets.HEADER  # one definition: a finding and a mask agree
    assert vars(masking)["HEADER_WORDS"] is secrets.HEADER_WORDS
