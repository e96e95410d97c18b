"""A replica on its own engine build (a canary of a new image), written in the stack's data."""

from __future__ import annotations

import io
import shutil
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from generators.cli import main
from generators.cli import main as generate
from generators.render import render_all
from generators.source import load_source
from generators.targets import load_targets
from tests.conftest import FLEET, replace_once
from tests.validators.conftest import run_cli
from validators.contract import load_contract

NEXT = "docker.io/nearaidev/sglang@sha256:" + "ab" * 32


def _with_next_image(source: Path, replica_keys: str) -> None:
    """Add an `engine_next` image and give r2 the replica keys `replica_keys`."""
    replace_once(source, "images:\n", f"images:\n  engine_next: {NEXT}\n")
    replace_once(source, '    instance: "2"\n', f'    instance: "2"\n{replica_keys}')


def _render(source: Path, targets: Path) -> dict[str, Any]:
    loaded = load_source(source)
    rendered = render_all(loaded, load_targets(loaded, targets))
    return {name: YAML(typ="safe", pure=True).load(io.BytesIO(data)) for name, data in rendered.items()}


def _engines(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        s
        for s in document["services"].values()
        if "deploy" in s and "command" in s and "-r" in s["container_name"]
    ]


def test_a_replica_with_its_own_image_runs_it_and_says_so_in_its_labels(
    source_copy: tuple[Path, Path],
) -> None:
    source, targets = source_copy
    before = _render(source, targets)
    _with_next_image(source, "    image: engine_next\n    build: next01\n")
    after = _render(source, targets)
    for name, document in after.items():
        first, second = _engines(document)
        old_first, old_second = _engines(before[name])
        # r1 is untouched, byte for byte in its image and labels
        assert first["image"] == old_first["image"] and first["labels"] == old_first["labels"]
        assert second["image"] == NEXT
        labels = second["labels"]
        variant = next(v for k, v in labels.items() if k.endswith("config_variant"))
        old_variant = next(v for k, v in old_second["labels"].items() if k.endswith("config_variant"))
        assert variant == "next01" + old_variant[old_variant.index("-") :]
        assert next(v for k, v in labels.items() if k.endswith("engine_image")) == "ab" * 6


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ("    image: engine_next\n", "runs another image than the engine's: give the build token"),
        ("    image: engine_nxt\n    build: next01\n", "image must name an entry of images:"),
        ("    build: next01\n", "`build:` goes with the `image:` it names the build of"),
    ],
)
def test_a_replica_image_without_its_build_or_with_an_unknown_key_is_refused_at_its_line(
    source_copy: tuple[Path, Path],
    prod_copy: Path,
    capsys: pytest.CaptureFixture[str],
    keys: str,
    message: str,
) -> None:
    source, targets = source_copy
    _with_next_image(source, keys)
    before = {p.name: p.read_bytes() for p in prod_copy.iterdir()}
    code = main(
        ["--write", "--source", str(source), "--targets-file", str(targets), "--prod-dir", str(prod_copy)]
    )
    err = capsys.readouterr().err
    assert code == 2
    line = next(
        n
        for n, text in enumerate(source.read_text().splitlines(), 1)
        if text.strip() == keys.split("\n", maxsplit=1)[0].strip()
    )
    assert f"{source}:{line}:" in err and message in err
    assert "Traceback" not in err
    assert {p.name: p.read_bytes() for p in prod_copy.iterdir()} == before


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "fleet"
    shutil.copytree(FLEET, root)
    monkeypatch.setenv("TIEROPS_FLEET", str(root))
    _with_next_image(root / "generators" / "glm53.source.yaml", "    image: engine_next\n    build: next01\n")
    assert generate(["--write"]) == 0
    return root


def _errors(result: Any) -> list[tuple[str, str]]:
    return [(row["rule"], row["message"]) for row in result.findings() if row["level"] == "error"]


def test_the_contract_declares_the_replica_build_and_then_the_file_passes(fleet: Path) -> None:
    contract = fleet / "validators" / "contracts" / "glm53.yaml"
    # Undeclared: the engine is on another image than the tier's build, and its variant
    # starts with another build token than the contract's.
    errors = _errors(run_cli("--format", "json", "--rule", "prod-config"))
    assert any("model-sg-glm53-w4afp8-tp4-r2 image is not the tier's engine build" in m for _, m in errors)
    assert any("config_variant" in m and "next01-" in m for _, m in errors)
    replace_once(contract, "images:\n", f"images:\n  engine_next: {NEXT}\n")
    replace_once(
        contract,
        '      rendezvous: "127.0.0.1:29511"\n',
        '      rendezvous: "127.0.0.1:29511"\n      image: engine_next\n      build: next01\n',
    )
    variant = next(
        line for line in contract.read_text().splitlines() if line.startswith("  variant: fc91d24-")
    )
    replace_once(
        contract,
        variant,
        f"  build: fc91d24\n  variant: '{{build}}{variant.removeprefix('  variant: fc91d24')}'",
    )
    load_contract.cache_clear()  # one process reads each contract once; this test edits it
    # Left: the long-context r2 sets the query split, which the new build is not known to carry.
    (error,) = _errors(run_cli("--format", "json", "--rule", "prod-config"))
    assert (
        "tp4-r2 sets SGLANG_DSA_INDEXER_QSPLIT=1 on an image not known to carry the split patch" in error[1]
    )
    replace_once(contract, "qsplit_images:\n", f"qsplit_images:\n  - {NEXT}\n")
    load_contract.cache_clear()
    assert _errors(run_cli("--format", "json", "--rule", "prod-config")) == []
    assert _errors(run_cli("--format", "json")) == []
    # A wrong image on r2 is named against r2's own build, not the tier's.
    prod = fleet / "prod" / "GLM-5.3-Flash-SGL-TP4-W4AFP8.yaml"
    text = prod.read_text()
    prod.write_text(text.replace(NEXT, NEXT.replace("ab" * 32, "cd" * 32)))
    errors = _errors(run_cli("--format", "json", "--rule", "prod-config", str(prod)))
    assert any(f"image is not r2's own build {NEXT}" in m for _, m in errors)
