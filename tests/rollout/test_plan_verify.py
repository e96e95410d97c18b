"""Each engine's verification follows from its change, as the runbook does by hand.

For every flag added, removed or changed, one check: the engine's startup `server_args`
line shows the new value, keyed by the flag with underscores, typed as the pinned
build's manifest says (a float flag prints `3600.0`, a string one is quoted).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.rollout.diffkit import LONG, R1, prod_text
from tests.rollout.plankit import HAND, hand, plan_of, step


def _r1_only(text: str, old: str, new: str) -> str:
    """Replace `old` by `new` in r1's definition only (r1 comes first in the file)."""
    start = text.index(f"  {R1}:\n")
    return text[:start] + text[start:].replace(old, new, 1)


def test_every_changed_flag_gets_its_server_args_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    old = prod_text()
    new = _r1_only(
        old,
        '      - --chunked-prefill-size\n      - "8192"',
        '      - --chunked-prefill-size\n      - "16384"',
    )
    new = _r1_only(
        new, '      - --watchdog-timeout\n      - "1800"', '      - --watchdog-timeout\n      - "3600"'
    )
    new = _r1_only(
        new, "      - --kv-cache-dtype\n      - bfloat16", "      - --kv-cache-dtype\n      - fp8_e5m2"
    )
    new = _r1_only(new, '      - --max-queued-requests\n      - "8"\n', "")
    new = _r1_only(
        new, "      - --enable-cache-report\n", '      - --dynamic-batch-tokenizer-batch-size\n      - "64"\n'
    )
    plan = plan_of(tmp_path, monkeypatch, capsys, {LONG: old}, {LONG: new})
    (stage,) = plan["files"][0]["stages"]
    checks = [c for c in step(stage, "verify")["checks"] if c["what"].startswith("startup server_args")]
    assert {(c["what"], c["expect"]) for c in checks} == {
        ("startup server_args: --chunked-prefill-size is 16384", "'chunked_prefill_size': 16384"),
        ("startup server_args: --watchdog-timeout is 3600.0", "'watchdog_timeout': 3600.0"),
        ("startup server_args: --kv-cache-dtype is 'fp8_e5m2'", "'kv_cache_dtype': 'fp8_e5m2'"),
        (
            "startup server_args: --max-queued-requests is back to the build's default",
            "'max_queued_requests': <the default>, no longer 8",
        ),
        ("startup server_args: --enable-cache-report is off", "'enable_cache_report': False"),
        (
            "startup server_args: --dynamic-batch-tokenizer-batch-size is 64",
            "'dynamic_batch_tokenizer_batch_size': 64",
        ),
    }
    read = (
        f"docker compose -p work -f {LONG} logs --no-log-prefix {R1} 2>&1 | grep -m1 server_args | grep -o "
    )
    by_key = {c["expect"].split("'")[1]: c["command"] for c in checks}
    assert by_key["watchdog_timeout"] == read + "\"'watchdog_timeout': [^,})]*\""


def test_the_rollback_verification_expects_the_old_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    old = prod_text()
    new = _r1_only(
        old,
        '      - --chunked-prefill-size\n      - "8192"',
        '      - --chunked-prefill-size\n      - "16384"',
    )
    plan = plan_of(tmp_path, monkeypatch, capsys, {LONG: old}, {LONG: new})
    (back,) = plan["files"][0]["rollback"]
    expects = [c["expect"] for c in step(back, "verify")["checks"] if c["what"].startswith("startup")]
    assert expects == ["'chunked_prefill_size': 8192"]


def test_an_unchanged_argv_gets_no_flag_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    old = prod_text()
    new = _r1_only(old, "NCCL_DEBUG: WARN", "NCCL_DEBUG: INFO")
    assert new != old
    plan = plan_of(tmp_path, monkeypatch, capsys, {LONG: old}, {LONG: new})
    (stage,) = plan["files"][0]["stages"]
    assert not [c for c in step(stage, "verify")["checks"] if "server_args" in c["command"]]


def test_a_vllm_engine_gets_no_invented_server_args_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    new = hand().replace("--max-model-len 32768", "--max-model-len 65536")
    plan = plan_of(tmp_path, monkeypatch, capsys, {HAND: hand()}, {HAND: new})
    for stage in plan["files"][0]["stages"]:
        assert not [c for c in step(stage, "verify")["checks"] if "server_args" in c["command"]]


def test_a_secret_flag_gets_no_check_that_would_print_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    old = prod_text()
    new = _r1_only(
        old,
        "      - --enable-metrics\n",
        "      - --enable-metrics\n      - --api-key\n      - hunter2hunter2\n",
    )
    new = _r1_only(
        new,
        '      - --chunked-prefill-size\n      - "8192"',
        '      - --chunked-prefill-size\n      - "16384"',
    )
    plan = plan_of(tmp_path, monkeypatch, capsys, {LONG: old}, {LONG: new})
    (stage,) = plan["files"][0]["stages"]
    expects = [c["expect"] for c in step(stage, "verify")["checks"] if c["what"].startswith("startup")]
    assert expects == ["'chunked_prefill_size': 16384"]
    assert "hunter2hunter2" not in str(plan)


def test_server_args_types_come_from_an_sglang_build_whatever_the_builds_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A vLLM build listed first must not type SGLang's server_args values."""
    from dataclasses import replace

    from rollout.plan import checks
    from validators import contract

    builds = contract.load_builds()
    sglang = next(build for build in builds if build.engine == "sglang")
    vllm = replace(
        sglang, name="vllm-first", engine="vllm", manifest="vllm-0.23.0.json", images=("x/vllm@sha256:0",)
    )
    monkeypatch.setattr(contract, "load_builds", lambda *_args: (vllm, sglang))
    checks._flag_types.cache_clear()
    try:
        # An SGLang int flag that vLLM does not have: typed by the SGLang manifest.
        assert checks._python_value("--chunked-prefill-size", "16384", "any/image@sha256:1") == "16384"
        assert checks._flag_types("any/image@sha256:1").get("--mem-fraction-static") == "float"
        assert "--gpu-memory-utilization" not in checks._flag_types("any/image@sha256:1")
    finally:
        checks._flag_types.cache_clear()


@pytest.mark.parametrize(
    ("command", "path", "expect"),
    [
        ("vllm serve m --runner pooling --convert embed", "/v1/embeddings", "HTTP 200 with one embedding"),
        ("vllm serve m --runner pooling --convert classify", "/v1/score", "HTTP 200 with one score"),
        ("sglang serve --model-path m --is-embedding", "/v1/embeddings", "HTTP 200 with one embedding"),
        ("vllm serve m --max-model-len 4096", "/v1/chat/completions", "HTTP 200 with one choice"),
    ],
)
def test_the_real_request_matches_what_the_engine_serves(command: str, path: str, expect: str) -> None:
    from rollout.plan import checks

    service = {"command": command.split()}  # the plan reads canonical services: lists
    _what, got_path, request, got_expect = checks._real_request(
        checks._options(service), checks._switches(service), "m"
    )
    assert (got_path, got_expect) == (path, expect)
    assert request["model"] == "m"
