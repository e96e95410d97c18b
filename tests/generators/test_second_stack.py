"""A second stack is data only: a vLLM tensor-parallel-8 stack joins a fleet.

The fixture fleet plus the stack's three files (tests/fixtures/stacks/: source, targets,
contract), and nothing else: the wiring contract is keyed by role, so its services need
no entry there. The generators render its file, the validators judge it by its own
contract, and nothing else in the fleet moves.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from generators.cli import main as generate
from tests.conftest import FLEET
from tests.validators.conftest import run_cli

STACK = Path(__file__).resolve().parents[1] / "fixtures" / "stacks"
FILE = "GLM-5.1-AWQ-VLLM-TP8.yaml"


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "fleet"
    shutil.copytree(FLEET, root)
    for part in ("source", "targets"):
        shutil.copy(STACK / f"glm51vllm.{part}.yaml", root / "generators" / f"glm51vllm.{part}.yaml")
    shutil.copy(STACK / "glm51vllm.contract.yaml", root / "validators" / "contracts" / "glm51vllm.yaml")
    monkeypatch.setenv("TIEROPS_FLEET", str(root))
    return root


def test_the_stack_renders_a_vllm_engine_from_data_alone(fleet: Path) -> None:
    before = {path.name: path.read_bytes() for path in (fleet / "prod").iterdir()}
    assert generate(["--write"]) == 0
    after = {path.name: path.read_bytes() for path in (fleet / "prod").iterdir()}
    assert {name: data for name, data in after.items() if name != FILE} == before  # nothing else moved
    doc = yaml.safe_load(after[FILE])
    engines = [name for name, service in doc["services"].items() if "vllm" in service["image"]]
    assert "model-vllm-glm51-awq-tp8" in engines
    engine = doc["services"]["model-vllm-glm51-awq-tp8"]
    argv = engine["command"]
    # Flags only (the image's entrypoint is the server); a list item keeps its JSON as one word.
    assert argv[:2] == [
        "--model",
        "/root/.cache/huggingface/hub/models--QuantTrio--GLM-5.1-AWQ/snapshots/8f60817aa28023f2607850d1a1e51d21aa34817a",
    ]
    assert argv[argv.index("--override-generation-config") + 1] == '{"temperature": 0.6, "top_p": 0.95}'
    # The variant's parallelism token reads vLLM's own flag.
    assert engine["labels"]["tierops.otel.config_variant"] == "vllm-03768d94-base-awq-h200-tp8"
    assert engine["deploy"]["resources"]["reservations"]["devices"][0]["device_ids"] == [
        str(n) for n in range(8)
    ]


def test_the_validators_judge_it_by_its_own_contract(fleet: Path) -> None:
    assert generate(["--write"]) == 0
    result = run_cli("--format", "json")
    rows = result.findings()
    # Its engine's image is the fleet's vLLM build: its flags are judged, and pass.
    assert rows == []
    assert result.code == 0
    path = fleet / "prod" / FILE
    rendered = path.read_text(encoding="utf-8")
    misspelt = rendered.replace("- --enable-prefix-caching\n", "- --enable-prefix-cachng\n", 1)
    path.write_text(misspelt, encoding="utf-8")
    flagged = run_cli("--format", "json", "--rule", "engine-flags").findings()
    assert [row["message"].rsplit("; ", 1)[-1] for row in flagged] == [
        "did you mean --enable-prefix-caching?"
    ]
    path.write_text(rendered, encoding="utf-8")
    # A change its contract forbids is caught in its file, with its own flag's spelling.
    path.write_text(
        path.read_text(encoding="utf-8").replace('      - "8"\n', '      - "4"\n', 1), encoding="utf-8"
    )
    messages = [row["message"] for row in run_cli("--format", "json", "--rule", "prod-config").findings()]
    assert any("--tensor-parallel-size is 4; the contract says 8" in message for message in messages), (
        messages
    )
    assert any("reserves 8 GPUs but runs --tensor-parallel-size 4" in message for message in messages), (
        messages
    )


def test_its_wiring_is_judged_by_role_without_a_wiring_entry(fleet: Path) -> None:
    # The wiring contract names none of this stack's services: its proxy is found by
    # role, so moving the proxy's listener breaks the front door's upstream and the
    # collector's scrape target, each named with this stack's own service names.
    assert "glm51" not in (fleet / "validators" / "contracts" / "wiring.yaml").read_text(encoding="utf-8")
    assert generate(["--write"]) == 0
    path = fleet / "prod" / FILE
    text = path.read_text(encoding="utf-8")
    assert text.count('LISTEN_ADDR: "0.0.0.0:8000"') == 1
    path.write_text(
        text.replace('LISTEN_ADDR: "0.0.0.0:8000"', 'LISTEN_ADDR: "0.0.0.0:8080"'), encoding="utf-8"
    )
    rows = run_cli("--format", "json", "--rule", "wiring", path).findings()
    messages = sorted(row["message"].split(";")[0] for row in rows)
    assert (
        "nginx upstream glm51_proxy server proxy-glm51:8000: proxy-glm51 listens on 8080, not 8000"
        in messages
    )
    assert any(
        m.startswith("otelcol-contrib scrape job proxy-glm51 target proxy-glm51:8000") for m in messages
    )
