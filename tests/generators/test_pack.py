"""A pack: several stacks in one file on one host, GPU sharing declared or refused."""

from __future__ import annotations

import io
import shutil
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from generators.cli import main
from tests.conftest import ROOT, replace_once
from tests.validators.conftest import run_cli

PACK_DIR = ROOT / "tests" / "fixtures" / "stacks" / "pack"
RENDERED = PACK_DIR / "Pack-Fixture.yaml"
EMBED = "model-vllm-qwen3-embedding-0.6b"
RERANK = "model-vllm-qwen3-reranker-0.6b"


@pytest.fixture
def stacks(tmp_path: Path) -> Path:
    directory = tmp_path / "generators"
    shutil.copytree(PACK_DIR, directory, ignore=shutil.ignore_patterns("Pack-Fixture.yaml"))
    (tmp_path / "prod").mkdir()
    return directory


def _run(stacks: Path, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main([*args, "--stacks-dir", str(stacks), "--prod-dir", str(stacks.parent / "prod")])
    out, err = capsys.readouterr()
    return code, out, err


def _rendered_with(write_prod: Any, old: str, new: str, stem: str = "Pack-Fixture") -> Path:
    """The rendered fixture with the first `old` replaced, as the fleet's prod/<stem>.yaml."""
    text = RENDERED.read_text(encoding="utf-8")
    assert old in text
    path: Path = write_prod(f"{stem}.yaml", text.replace(old, new, 1))
    return path


def _services(data: bytes) -> dict[str, Any]:
    services: dict[str, Any] = YAML(typ="safe", pure=True).load(io.BytesIO(data))["services"]
    return services


def test_the_fixture_is_what_the_generators_render(stacks: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, _err = _run(stacks, "--write", capsys=capsys)
    assert code == 0
    # The header names the pack file where it was read; everything after it is equal.
    written = (stacks.parent / "prod" / "Pack-Fixture.yaml").read_bytes().split(b"\n")
    fixture = RENDERED.read_bytes().split(b"\n")
    assert written[2:] == fixture[2:]
    assert written[2] == b"# Target: Pack-Fixture (tier base; hosts: hostA)"


def test_every_member_brings_its_engines_and_the_host_services_are_there_once() -> None:
    services = _services(RENDERED.read_bytes())
    engines = [name for name, body in services.items() if "deploy" in body and "x-gpu-share" in body]
    assert engines == [EMBED, RERANK]
    assert [name for name in services if name.startswith("proxy-")] == [
        "proxy-qwen36",
        "proxy-qwen3emb",
        "proxy-qwen3rerank",
    ]
    nginx = services["nginx"]
    assert nginx["ports"] == ["8000:8000", "8002:8002", "8003:8003", "8004:8004"]
    assert nginx["networks"] == ["small-models", "qwen36", "qwen3emb", "qwen3rerank"]
    registrar = services["model-proxy-registrar"]["environment"]["MODELS"]
    assert registrar.split() == [
        "Qwen/Qwen3.6-35B-A3B-FP8=8002",
        "Qwen/Qwen3-Embedding-0.6B=8003",
        "Qwen/Qwen3-Reranker-0.6B=8004",
    ]
    # The exporter watches every GPU an engine uses; a GPU two engines share counts once.
    dcgm = services["dcgm"]["deploy"]["resources"]["reservations"]["devices"][0]["device_ids"]
    assert dcgm == ["0", "1", "2"]


def test_the_front_door_config_has_one_server_per_member() -> None:
    text = RENDERED.read_text(encoding="utf-8")
    for port, proxy in (("8002", "proxy-qwen36"), ("8003", "proxy-qwen3emb"), ("8004", "proxy-qwen3rerank")):
        assert f"listen {port} ssl;" in text
        assert f"proxy_pass http://{proxy}_pool;" in text


def test_the_rendered_pack_passes_the_generic_checks_and_its_pack_policy() -> None:
    # The fixture fleet's contracts/packs.yaml claims the stem: its collector may
    # default its token softly, and nothing else is allowed beyond the generic checks.
    result = run_cli("--format", "text", RENDERED)
    assert result.code == 0, result.out


def test_without_its_pack_claim_the_collector_soft_default_is_a_finding(write_prod: Any) -> None:
    # The pack's own file, with the collector's token declared soft by its pack claim...
    path = write_prod("Pack-Fixture.yaml", RENDERED.read_text(encoding="utf-8"))
    assert "MONITORING_INGEST_TOKEN" not in run_cli("--format", "text", path).out
    # ...and without that declaration: a secret must then be required.
    packs = path.parent.parent / "validators" / "contracts" / "packs.yaml"
    text = packs.read_text(encoding="utf-8")
    declared = "soft_default_env: [MONITORING_INGEST_TOKEN]"
    assert declared in text
    packs.write_text(text.replace(declared, "soft_default_env: []"), encoding="utf-8")
    result = run_cli("--format", "text", path)
    assert result.code == 1
    assert "otelcol-contrib env MONITORING_INGEST_TOKEN names a secret and has a soft default" in result.out


def test_an_undeclared_shared_gpu_is_refused(stacks: Path, capsys: pytest.CaptureFixture[str]) -> None:
    replace_once(stacks / "small.pack.yaml", "  gpu_sharing:\n", "  x-unused:\n")
    replace_once(stacks / "small.pack.yaml", "  x-unused:", "  gpu_sharing: []\n  x-unused:")
    code, _out, err = _run(stacks, "--check", capsys=capsys)
    assert code != 0
    assert f"GPU 0 is assigned to {EMBED}, {RERANK}; declare it under gpu_sharing" in err


def test_a_declaration_that_names_other_engines_is_refused(
    stacks: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    replace_once(stacks / "small.pack.yaml", f"engines: [{EMBED}, {RERANK}]", f"engines: [{EMBED}]")
    code, _out, err = _run(stacks, "--check", capsys=capsys)
    assert code != 0
    assert f"gpu_sharing on GPU 0 names {EMBED}, but the engines on it are {EMBED}, {RERANK}" in err
    assert "small.pack.yaml:" in err


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("    qwen3emb: {port: 8003", "    qwen3embed: {port: 8003", "no stack 'qwen3embed'"),
        ("{port: 8003,", "{port: 8002,", "member qwen3emb: port 8002 is already qwen36's"),
        ("{port: 8003,", "{port: 8000,", "member qwen3emb: port 8000 is reserved"),
        ("    dcgm: {part: metrics-exporter}\n", "    dcgm: {part: proxy}\n", "dcgm has role 'proxy'"),
    ],
)
def test_pack_mistakes_are_refused_at_their_line(
    stacks: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, message: str
) -> None:
    replace_once(stacks / "small.pack.yaml", old, new)
    code, _out, err = _run(stacks, "--check", capsys=capsys)
    assert code != 0
    assert message in err
    assert "Traceback" not in err


def test_two_members_pinning_one_image_name_differently_are_refused(
    stacks: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    replace_once(stacks / "qwen3emb.source.yaml", "vllm-openai@sha256:0376", "vllm-openai@sha256:1376")
    code, _out, err = _run(stacks, "--check", capsys=capsys)
    assert code != 0
    assert "image 'engine' is docker.io/vllm/vllm-openai@sha256:1376" in err


def test_a_source_that_renders_nothing_is_refused(stacks: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(stacks / "qwen3emb.source.yaml", stacks / "lonely.source.yaml")
    code, _out, err = _run(stacks, "--check", capsys=capsys)
    assert code != 0
    assert "stack 'lonely' has a source but no lonely.targets.yaml and no pack names it" in err


def test_list_shows_each_member_replica_and_its_gpus(
    stacks: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _err = _run(stacks, "--list", capsys=capsys)
    assert code == 0
    assert "Pack-Fixture  " in out and "  pack" in out
    assert "    qwen3emb r1 (GPUs 0): \n    qwen3rerank r1 (GPUs 0): " in out


def test_undeclared_sharing_is_a_warning_in_a_file_nothing_claims(tmp_path: Path) -> None:
    # Another team's pack may share a GPU on purpose without our declaration.
    foreign = tmp_path / "Their-Pack.yaml"
    text = RENDERED.read_text(encoding="utf-8")
    foreign.write_text(text.replace("    x-gpu-share: two 0.6B", "    x-note: two 0.6B", 1), encoding="utf-8")
    result = run_cli("--format", "text", foreign)
    line = next(line for line in result.out.splitlines() if "(gpu-sharing)" in line)
    assert "[warning] model-vllm-qwen3-embedding-0.6b GPU 0 is also reserved by" in line


def test_each_member_s_contract_judges_its_own_engines_in_the_pack(write_prod: Any) -> None:
    old = '      - --gpu-memory-utilization\n      - "0.15"\n'
    changed = _rendered_with(write_prod, old, old.replace("0.15", "0.25"))
    result = run_cli("--format", "text", changed)
    assert result.code == 1
    assert (
        "model-vllm-qwen3-embedding-0.6b --gpu-memory-utilization is 0.25; the contract says 0.15 "
        "(validators/contracts/qwen3emb.yaml) (prod-config)"
    ) in result.out
    # The other members' contracts say nothing of a service that is not theirs.
    assert result.out.count("(prod-config)") == 1


def test_a_pack_member_without_a_contract_for_the_file_is_an_error() -> None:
    from dataclasses import replace

    from validators.context import load_context
    from validators.runner import _unclaimed

    ctx = load_context()
    without = replace(ctx, contracts=tuple(c for c in ctx.contracts if c.path.stem != "qwen3emb"))
    found = _unclaimed(Path("prod/Pack-Fixture.yaml"), "prod/Pack-Fixture.yaml", without)
    assert [finding.message for finding in found] == [
        "pack member qwen3emb has no contract that lists 'Pack-Fixture' under files: "
        "(validators/contracts/qwen3emb.yaml); its engines would get no stack checks"
    ]
    assert _unclaimed(Path("prod/Pack-Fixture.yaml"), "prod/Pack-Fixture.yaml", ctx) == []


def test_a_member_s_labels_are_judged_by_its_contract_and_not_by_the_others(write_prod: Any) -> None:
    old = "      tierops.otel.model: Qwen/Qwen3-Embedding-0.6B\n"
    changed = _rendered_with(write_prod, old, old.replace("0.6B", "8B"))
    result = run_cli("--format", "text", changed)
    assert result.code == 1
    findings = [line for line in result.out.splitlines() if line.endswith("(otel-labels)")]
    assert len(findings) == 2, result.out
    assert (
        "model-vllm-qwen3-embedding-0.6b label tierops.otel.model is 'Qwen/Qwen3-Embedding-8B'; "
        "expected 'Qwen/Qwen3-Embedding-0.6B'"
    ) in findings[0]


def test_the_host_s_exporter_must_see_every_member_s_gpus(write_prod: Any) -> None:
    old = '                - "1"\n                - "2"\n              capabilities:'
    changed = _rendered_with(write_prod, old, '                - "1"\n              capabilities:')
    result = run_cli("--format", "text", changed)
    assert result.code == 1
    assert (
        "dcgm does not see GPUs ['2'] that model-vllm-qwen36-35b-a3b-fp8-tp1-r2 uses (dcgm-metrics)"
        in result.out
    )
