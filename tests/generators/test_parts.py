"""Shared parts: the sidecars defined once (parts.yaml), taken by each stack under its names."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from generators.cli import main as generate
from tests.conftest import FLEET, replace_once

STACKS = Path(__file__).resolve().parents[1] / "fixtures" / "stacks"
FILE = "GLM-5.3-Flash-SGL-TP4-W4AFP8.yaml"


def _line(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if line.startswith(text))


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fixture fleet with its stack's sidecars and configs taken from parts.yaml."""
    root = tmp_path / "fleet"
    shutil.copytree(FLEET, root)
    shutil.copy(STACKS / "parts.yaml", root / "generators" / "parts.yaml")
    shutil.copy(STACKS / "glm53-parts.source.yaml", root / "generators" / "glm53.source.yaml")
    monkeypatch.setenv("TIEROPS_FLEET", str(root))
    return root


def test_a_stack_built_from_parts_renders_the_same_bytes(fleet: Path) -> None:
    assert (fleet / "generators" / "glm53.source.yaml").read_text().count("part:") == 6
    assert generate(["--check"]) == 0  # every prod file byte-identical


def test_keys_beside_part_change_that_stack_only_and_keep_their_place(fleet: Path) -> None:
    source = fleet / "generators" / "glm53.source.yaml"
    replace_once(
        source,
        "  proxy-glm53: {part: proxy}",
        "  proxy-glm53:\n    part: proxy\n    environment: {LOAD_BALANCING: round_robin, EXTRA: x}",
    )
    replace_once(source, "  nginx: {part: front-door}", "  nginx: {part: front-door, restart: always}")
    before: dict[str, Any] = yaml.safe_load((fleet / "prod" / FILE).read_bytes())["services"]
    assert generate(["--write"]) == 0
    after: dict[str, Any] = yaml.safe_load((fleet / "prod" / FILE).read_bytes())["services"]
    env = after["proxy-glm53"]["environment"]
    assert env["LOAD_BALANCING"] == "round_robin" and env["EXTRA"] == "x"
    old_env = before["proxy-glm53"]["environment"]
    # a mapping merges key by key: the part's other keys stay, in their order
    assert list(env)[: len(old_env)] == list(old_env)
    assert {k: v for k, v in env.items() if k not in ("LOAD_BALANCING", "EXTRA")} == {
        k: v for k, v in old_env.items() if k != "LOAD_BALANCING"
    }
    assert after["nginx"]["restart"] == "always"
    assert {k: v for k, v in after["nginx"].items() if k != "restart"} == {
        k: v for k, v in before["nginx"].items() if k != "restart"
    }
    for name in ("model-downloader", "model-proxy-registrar", "dcgm-glm53", "otelcol-contrib"):
        assert after[name] == before[name]


@pytest.mark.parametrize(
    ("where", "old", "new", "anchor", "message"),
    [
        (
            "source",
            "{part: front-door}",
            "{part: front-dor}",
            "  nginx: {part",
            "nginx: no part 'front-dor' in parts.yaml; did you mean 'front-door'?",
        ),
        (
            "source",
            "parts: parts.yaml",
            "parts: shared.yaml",
            "parts:",
            "parts: no file shared.yaml beside this source",
        ),
        (
            "parts",
            "\nconfigs:\n",
            "\nconfgs:\n",
            "confgs:",
            "parts: unknown key 'confgs'; did you mean 'configs'?",
        ),
        # A mistake inside a part is placed in the parts file, where it is written.
        (
            "parts",
            "    image: nginx\n",
            "    image: nginz\n",
            "    image: nginz",
            "nginx: image must name an entry of images:",
        ),
    ],
)
def test_a_mistake_is_refused_at_the_line_of_the_file_that_holds_it(
    fleet: Path, capsys: pytest.CaptureFixture[str], where: str, old: str, new: str, anchor: str, message: str
) -> None:
    path = fleet / "generators" / ("glm53.source.yaml" if where == "source" else "parts.yaml")
    replace_once(path, old, new)
    before = {p.name: p.read_bytes() for p in (fleet / "prod").iterdir()}
    assert generate(["--write"]) == 2
    err = capsys.readouterr().err
    assert f"generators/{path.name}:{_line(path, anchor)}:" in err and message in err, err
    assert "Traceback" not in err
    assert {p.name: p.read_bytes() for p in (fleet / "prod").iterdir()} == before
