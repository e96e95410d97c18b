"""prod-config beyond the mutation suite: spellings that mean the same pass."""

from __future__ import annotations

from typing import Any

from tests.validators.conftest import LONG, prod_text, run_cli
from tierops.yamlload import YList, YMap
from validators.loader import Document, parse

R1 = "model-sg-glm53-w4afp8-tp4-r1"
R2 = "model-sg-glm53-w4afp8-tp4-r2"


def _block(text: str, service: str, key: str, next_key: str) -> tuple[int, int, Any]:
    """0-based line range [start, end) of `key:` in `service`, up to `next_key:`, and its value."""
    doc = parse(text.encode(), LONG)
    assert isinstance(doc, Document)
    body = doc.data["services"][service]
    assert isinstance(body, YMap)
    return body.at(key).line - 1, body.at(next_key).line - 1, body[key]


def _respell(text: str) -> str:
    """r1's command as one shell string with alias and --flag=value spellings; r2's env as a list."""
    lines = text.split("\n")
    start, end, command = _block(text, R1, "command", "environment")
    assert isinstance(command, YList)
    joined = " ".join(str(token) for token in command)
    joined = joined.replace("--tp-size 4", "--tensor-parallel-size 4").replace("--ep-size 4", "--ep 4")
    joined = joined.replace("--chunked-prefill-size 8192", "--chunked-prefill-size=8192")
    lines[start:end] = [f"    command: '{joined}'"]
    text = "\n".join(lines)
    lines = text.split("\n")
    start, end, env = _block(text, R2, "environment", "deploy")
    assert isinstance(env, YMap)
    lines[start:end] = ["    environment:", *(f"      - '{key}={value}'" for key, value in env.items())]
    return "\n".join(lines)


def test_string_command_aliases_equals_and_list_env_mean_the_same(write_prod: Any) -> None:
    text = _respell(prod_text(LONG))
    assert "    command: 'sglang serve --model-path" in text
    assert "      - 'HF_HUB_OFFLINE=1'" in text
    result = run_cli("--format", "json", write_prod(LONG, text))
    assert result.code == 0
    # No contract finding: only the style family says how a generated file spells argv.
    assert {(row["rule"], row["level"]) for row in result.findings()} == {("style", "warning")}
    assert all(row["message"].startswith("style only:") for row in result.findings())


def test_a_string_command_finding_points_at_the_string(write_prod: Any) -> None:
    text = _respell(prod_text(LONG)).replace(" --enable-dynamic-batch-tokenizer'", "'", 1)
    result = run_cli("--format", "json", "--rule", "prod-config", write_prod(LONG, text))
    line = text[: text.index("    command: 'sglang")].count("\n") + 1
    assert result.code == 1
    assert ("prod-config", line) in {(row["rule"], row["line"]) for row in result.findings()}
