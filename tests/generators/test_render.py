"""What the rendered production files say: structure, the dyntok feature, determinism."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from generators.render import render_all
from generators.source import load_source
from generators.targets import load_targets
from tests.conftest import PROD, SOURCE, TARGETS

ENGINES = ("model-sg-glm53-w4afp8-tp4-r1", "model-sg-glm53-w4afp8-tp4-r2")
SERVICES = {
    "model-downloader",
    *ENGINES,
    "proxy-glm53",
    "nginx",
    "model-proxy-registrar",
    "dcgm-glm53",
    "otelcol-contrib",
}
BASE = "GLM-5.3-Flash-SGL-TP4-W4AFP8.yaml"
CANARY = "GLM-5.3-Flash-SGL-TP4-W4AFP8-Canary.yaml"
LONG = "GLM-5.3-Flash-SGL-TP4-W4AFP8-LongContext.yaml"
INGESTION_FLAG = "--enable-dynamic-batch-tokenizer"


def _load(data: bytes) -> Any:
    return YAML(typ="safe", pure=True).load(io.BytesIO(data))


def _render(targets: Path = TARGETS) -> dict[str, bytes]:
    source = load_source(SOURCE)
    return render_all(source, load_targets(source, targets))


def _collector_labels(document: Any, service: str) -> dict[str, str]:
    collector = _load(document["configs"]["otelcol_app_config"]["content"].encode())
    jobs = collector["receivers"]["prometheus/apps"]["config"]["scrape_configs"]
    (job,) = [job for job in jobs if job["job_name"] == service]
    labels: dict[str, str] = job["static_configs"][0]["labels"]
    return labels


@pytest.fixture(scope="module")
def documents() -> dict[str, Any]:
    return {path.name: _load(path.read_bytes()) for path in PROD.glob("*.yaml")}


def test_every_prod_file_is_a_mapping_with_the_service_set_of_the_spec(documents: dict[str, Any]) -> None:
    assert sorted(documents) == sorted([BASE, CANARY, LONG])
    for document in documents.values():
        assert isinstance(document, dict)
        assert set(document["services"]) == SERVICES
        for name, service in document["services"].items():
            assert service["container_name"] == name


def test_r1_owns_gpus_0_to_3_and_r2_owns_4_to_7(documents: dict[str, Any]) -> None:
    for document in documents.values():
        for engine, gpus in zip(ENGINES, (["0", "1", "2", "3"], ["4", "5", "6", "7"]), strict=True):
            (device,) = document["services"][engine]["deploy"]["resources"]["reservations"]["devices"]
            assert device == {"driver": "nvidia", "device_ids": gpus, "capabilities": ["gpu"]}


def test_both_long_context_engines_end_with_the_ingestion_flag_exactly_once(
    documents: dict[str, Any],
) -> None:
    for engine in ENGINES:
        service = documents[LONG]["services"][engine]
        assert service["command"].count(INGESTION_FLAG) == 1
        assert service["command"][-1] == INGESTION_FLAG
        variant = service["labels"]["tierops.otel.config_variant"]
        assert variant.endswith("-h200-tp4-ep4-dyntok")
        assert _collector_labels(documents[LONG], engine)["config_variant"] == variant


def test_no_base_or_canary_engine_carries_the_ingestion_flag(documents: dict[str, Any]) -> None:
    for name in (BASE, CANARY):
        for engine in ENGINES:
            service = documents[name]["services"][engine]
            assert INGESTION_FLAG not in service["command"]
            assert "dyntok" not in service["labels"]["tierops.otel.config_variant"]


def test_variants_follow_the_template_of_the_spec(documents: dict[str, Any]) -> None:
    def variant(name: str, engine: str) -> str:
        return str(documents[name]["services"][engine]["labels"]["tierops.otel.config_variant"])

    assert variant(BASE, ENGINES[0]) == "fc91d24-base-w4afp8-c4096-pdi1-h200-tp4-ep4"
    assert variant(BASE, ENGINES[1]) == "fc91d24-base-w4afp8-c4096-pdi1-h200-tp4-ep4"
    assert variant(CANARY, ENGINES[0]) == "fc91d24-canary-w4afp8-c4096-pdi1-h200-tp4-ep4"
    assert variant(CANARY, ENGINES[1]) == "fc91d24-canary-w4afp8-c4096-hicache-pdi1-h200-tp4-ep4"
    assert (
        variant(LONG, ENGINES[0])
        == "fc91d24-long-context-w4afp8-c8192-qsplit-hicache-pdi1-h200-tp4-ep4-dyntok"
    )
    assert (
        variant(LONG, ENGINES[1])
        == "fc91d24-long-context-w4afp8-c8192-qsplit-hicache-pdi2-h200-tp4-ep4-dyntok"
    )


def test_engine_and_scrape_job_labels_agree_everywhere(documents: dict[str, Any]) -> None:
    for document in documents.values():
        for name, service in document["services"].items():
            labels = service.get("labels") or {}
            if labels.get("tierops.otel.scrape") != "true":
                continue
            scraped = _collector_labels(document, name)
            for key, value in labels.items():
                suffix = key.removeprefix("tierops.otel.")
                if suffix not in ("scrape", "job", "port", "path"):
                    assert scraped[suffix] == value, (name, suffix)


def test_the_base_argv_is_in_contract_order(documents: dict[str, Any]) -> None:
    command = documents[BASE]["services"][ENGINES[1]]["command"]
    flags = [token for token in command if token.startswith("--")]
    assert command[:2] == ["sglang", "serve"]
    assert flags == [
        "--model-path", "--served-model-name", "--tp-size", "--ep-size", "--mem-fraction-static",
        "--max-running-requests", "--max-queued-requests", "--chunked-prefill-size", "--max-prefill-tokens",
        "--prefill-decode-interval", "--cuda-graph-max-bs-decode", "--kv-cache-dtype", "--reasoning-parser",
        "--tool-call-parser", "--context-length", "--dist-init-addr", "--watchdog-timeout", "--host", "--port",
        "--enable-metrics", "--enable-cache-report",
    ]  # fmt: skip
    assert command[command.index("--dist-init-addr") + 1] == "127.0.0.1:29511"


def test_every_canary_service_is_behind_the_canary_profile(documents: dict[str, Any]) -> None:
    for service in documents[CANARY]["services"].values():
        assert service["profiles"] == ["w4afp8-canary"]
    for name in (BASE, LONG):
        assert all("profiles" not in service for service in documents[name]["services"].values())


def test_rendering_twice_gives_identical_bytes() -> None:
    assert _render() == _render()


def test_files_are_utf8_lf_with_one_trailing_newline_and_a_generated_header() -> None:
    for path in PROD.glob("*.yaml"):
        data = path.read_bytes()
        data.decode("utf-8")
        assert b"\r" not in data
        assert data.endswith(b"\n") and not data.endswith(b"\n\n")
        assert data.startswith(b"# GENERATED FILE: DO NOT EDIT.")
        assert b"nox -s generate" in data.split(b"\nname:")[0]


def test_removing_dyntok_from_one_replica_changes_exactly_that_replicas_flag_and_variant(
    tmp_path: Path,
) -> None:
    text = TARGETS.read_text()
    head, tail = text.rsplit("      - dyntok\n", 1)  # the last one: r2 of the long-context target
    targets = tmp_path / "targets.yaml"
    targets.write_text(head + tail)
    before = _render()
    after = _render(targets)
    assert {name for name in before if before[name] != after[name]} == {LONG}
    old, new = _load(before[LONG]), _load(after[LONG])
    r1, r2 = ENGINES
    assert old["services"][r1] == new["services"][r1]
    assert old["services"][r2]["command"][:-1] == new["services"][r2]["command"]
    assert INGESTION_FLAG not in new["services"][r2]["command"]
    old_variant = old["services"][r2]["labels"]["tierops.otel.config_variant"]
    new_variant = new["services"][r2]["labels"]["tierops.otel.config_variant"]
    assert new_variant == old_variant.removesuffix("-dyntok")
    assert _collector_labels(new, r2)["config_variant"] == new_variant
    # Nothing else in the service or the file changed.
    old["services"][r2]["command"].pop()
    old["services"][r2]["labels"]["tierops.otel.config_variant"] = new_variant
    assert old["services"][r2] == new["services"][r2]
    del old["configs"]["otelcol_app_config"], new["configs"]["otelcol_app_config"]
    assert old["configs"] == new["configs"]


def test_feature_order_in_the_targets_file_does_not_change_the_output(tmp_path: Path) -> None:
    text = TARGETS.read_text()
    shuffled = text.replace(
        "      - chunk: 8192\n      - qsplit\n      - hicache\n      - pdi: 1\n      - dyntok\n",
        "      - dyntok\n      - pdi: 1\n      - hicache\n      - qsplit\n      - chunk: 8192\n",
    )
    assert shuffled != text
    targets = tmp_path / "targets.yaml"
    targets.write_text(shuffled)
    assert _render(targets) == _render()


def test_yaml_1_1_readers_and_libyaml_read_the_same_document_as_ruamel(documents: dict[str, Any]) -> None:
    """PyYAML (YAML 1.1, libyaml underneath) must not read a port as an int, an argv
    token as a float, or refuse a URL in a flow list: the one quoting rule prevents it."""
    import yaml

    for path in PROD.glob("*.yaml"):
        assert yaml.load(path.read_bytes(), Loader=yaml.CSafeLoader) == documents[path.name]
