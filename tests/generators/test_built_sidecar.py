"""A sidecar built on the host is a declared exception: `build:` with its reason, or refused."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from generators.cli import main
from tests.conftest import replace_once
from tests.validators.conftest import run_cli

REGISTRAR = "  model-proxy-registrar:\n    role: registrar\n    image: curl\n"


def _generate(source: Path, targets: Path, prod: Path) -> int:
    return main(["--write", "--source", str(source), "--targets-file", str(targets), "--prod-dir", str(prod)])


def test_a_built_sidecar_with_its_reason_is_rendered_and_passes_hygiene(
    source_copy: tuple[Path, Path], prod_copy: Path
) -> None:
    source, targets = source_copy
    replace_once(
        source,
        REGISTRAR,
        "  model-proxy-registrar:\n    role: registrar\n    image: local/registrar:dev\n"
        "    build: ./docker/registrar\n    x-build-reason: its patched client is not published\n",
    )
    assert _generate(source, targets, prod_copy) == 0
    for path in sorted(prod_copy.glob("*.yaml")):
        service: dict[str, Any] = YAML(typ="safe", pure=True).load(io.BytesIO(path.read_bytes()))["services"][
            "model-proxy-registrar"
        ]
        assert service["image"] == "local/registrar:dev"
        assert service["build"] == "./docker/registrar"
        assert service["x-build-reason"] == "its patched client is not published"
        result = run_cli("--format", "json", "--rule", "compose-hygiene", path)
        assert [row for row in result.findings() if "registrar" in row["message"]] == []


@pytest.mark.parametrize(
    ("replacement", "anchor", "message"),
    [
        (
            "  model-proxy-registrar:\n    role: registrar\n    image: local/registrar:dev\n    build: ./docker/registrar\n",
            "    build: ./docker/registrar",
            "model-proxy-registrar: `build:` needs `x-build-reason: <why it is built on the host>` beside it",
        ),
        (
            "  model-proxy-registrar:\n    role: registrar\n    build: ./docker/registrar\n    x-build-reason: patched\n",
            "    role: registrar",  # the service's first line
            "model-proxy-registrar: a built service names the tag it builds, `image: <name:tag>`",
        ),
    ],
)
def test_a_build_without_its_reason_or_its_tag_is_refused_at_its_line(
    source_copy: tuple[Path, Path],
    prod_copy: Path,
    capsys: pytest.CaptureFixture[str],
    replacement: str,
    anchor: str,
    message: str,
) -> None:
    source, targets = source_copy
    replace_once(source, REGISTRAR, replacement)
    before = {p.name: p.read_bytes() for p in prod_copy.iterdir()}
    assert _generate(source, targets, prod_copy) == 2
    err = capsys.readouterr().err
    line = next(n for n, text in enumerate(source.read_text().splitlines(), 1) if text.startswith(anchor))
    assert f"{source}:{line}:" in err and message in err, err
    assert {p.name: p.read_bytes() for p in prod_copy.iterdir()} == before


def test_an_engine_built_on_the_host_is_refused(
    source_copy: tuple[Path, Path], prod_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, targets = source_copy
    text = source.read_text()
    start = text.index("  service:\n    image: engine\n")
    source.write_text(
        text[:start]
        + "  service:\n    image: engine\n    build: ./docker/engine\n"
        + text[start + len("  service:\n    image: engine\n") :]
    )
    assert _generate(source, targets, prod_copy) == 2
    assert (
        "engine.service: an engine runs a pinned image; push its build and pin the digest"
        in capsys.readouterr().err
    )
