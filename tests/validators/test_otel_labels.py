"""otel-labels: the reserved job/instance labels (the documented choice about instance)."""

from __future__ import annotations

from typing import Any

from tests.validators.conftest import BASE, line_of, prod_text, run_cli


def findings(write_prod: Any, text: str) -> list[tuple[int, str]]:
    result = run_cli("--format", "json", "--rule", "otel-labels", write_prod(BASE, text))
    return [(row["line"], row["message"]) for row in result.findings()]


def test_instance_on_a_service_that_is_not_an_engine_is_an_error(write_prod: Any) -> None:
    text = prod_text(BASE).replace(
        "                      container_name: proxy-glm53\n",
        '                      container_name: proxy-glm53\n                      instance: "1"\n',
    )
    line = line_of(text, "container_name: proxy-glm53\n                      instance") + 1
    assert findings(write_prod, text) == [
        (
            line,
            "scrape job proxy-glm53 sets 'instance', which the collector maps to service.name/service.instance.id; only engines carry instance (their replica number)",
        )
    ]


def test_setting_job_in_the_labels_is_an_error(write_prod: Any) -> None:
    text = prod_text(BASE).replace(
        "                      container_name: dcgm-glm53\n",
        "                      container_name: dcgm-glm53\n                      job: gpus\n",
    )
    assert [message.split(",")[0] for _line, message in findings(write_prod, text)] == [
        "scrape job dcgm-glm53 sets 'job'"
    ]


def test_an_engine_instance_must_be_its_replica_number(write_prod: Any) -> None:
    text = prod_text(BASE).replace('      tierops.otel.instance: "2"\n', '      tierops.otel.instance: "1"\n')
    found = findings(write_prod, text)
    assert (
        line_of(text, '      tierops.otel.instance: "1"', 2),
        "model-sg-glm53-w4afp8-tp4-r2 label tierops.otel.instance is '1'; expected '2'",
    ) in found
