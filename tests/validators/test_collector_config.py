"""collector-config: the embedded collector config, checked structurally."""

from __future__ import annotations

from typing import Any

from tests.validators.conftest import BASE, CANARY, line_of, prod_text, run_cli


def rows(write_prod: Any, text: str, name: str = BASE) -> list[tuple[str, int, int, str]]:
    result = run_cli("--format", "json", "--rule", "collector-config", write_prod(name, text))
    return [(row["rule"], row["line"], row["col"], row["message"]) for row in result.findings()]


def test_an_undefined_exporter_in_a_pipeline_is_named_at_its_item(write_prod: Any) -> None:
    text = prod_text(BASE).replace("exporters: [otlphttp/gateway]", "exporters: [otlphttp/gateway, debug]")
    line = line_of(text, "exporters: [otlphttp/gateway, debug]")
    assert rows(write_prod, text) == [
        (
            "collector-config",
            line,
            43,
            "pipeline metrics uses exporter debug, which is not defined under exporters",
        )
    ]


def test_an_unset_env_reference_is_named_where_it_is_read(write_prod: Any) -> None:
    text = prod_text(CANARY).replace("value: $${env:HOST_IP}", "value: $${env:NODE_IP}")
    line = line_of(text, "$${env:NODE_IP}")
    assert rows(write_prod, text, CANARY) == [
        (
            "collector-config",
            line,
            22,
            "collector config reads ${env:NODE_IP}, but otelcol-contrib has no NODE_IP in its environment",
        )
    ]


def test_removing_the_variable_from_the_collector_environment_is_caught(write_prod: Any) -> None:
    text = prod_text(BASE).replace("      MONITORING_INGEST_TOKEN: ${MONITORING_INGEST_TOKEN:-unset}\n", "")
    found = rows(write_prod, text)
    assert [(rule, line) for rule, line, _col, _message in found] == [
        ("collector-config", line_of(text, "$${env:MONITORING_INGEST_TOKEN}"))
    ]


def test_a_config_that_is_not_yaml_is_one_finding_inside_the_compose_file(write_prod: Any) -> None:
    text = prod_text(BASE).replace(
        "        batch:\n          timeout: 10s\n", "        batch:\n          timeout: [10s\n", 1
    )
    found = rows(write_prod, text)
    assert len(found) == 1
    rule, line, _col, message = found[0]
    assert rule == "collector-config"
    assert message.startswith("configs.otelcol_app_config.content: invalid YAML")
    assert line_of(text, "timeout: [10s") <= line <= line_of(text, "timeout: [10s") + 2


def test_a_pipeline_without_exporters_is_named(write_prod: Any) -> None:
    text = prod_text(BASE).replace("            exporters: [otlphttp/gateway]\n", "")
    found = rows(write_prod, text)
    assert [message for _rule, _line, _col, message in found] == ["pipeline metrics names no exporters"]


def test_a_collector_reference_with_one_dollar_is_named(write_prod: Any) -> None:
    text = prod_text(BASE).replace("value: $${env:HOST_IP}", "value: ${env:HOST_IP}")
    line = line_of(text, "value: ${env:HOST_IP}")
    assert rows(write_prod, text) == [
        (
            "collector-config",
            line,
            22,
            "collector config writes ${env:...} with one $; compose would interpolate it: write $${env:...}",
        )
    ]
