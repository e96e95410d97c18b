"""dcgm-metrics findings that no guard case covers (the family's own preconditions).

Found by a mutmut run on validators/rules/dcgm_metrics.py: these messages and positions could
be changed with the suite green.
"""

from __future__ import annotations

from typing import Any

from tests.validators.conftest import LONG, prod_text, replace_nth, run_cli


def _dcgm(write_prod: Any, text: str) -> list[tuple[str, int, int, str]]:
    result = run_cli("--format", "json", "--rule", "dcgm-metrics", write_prod(LONG, text))
    return [
        (row["path"].rsplit("/", 1)[-1], row["line"], row["col"], row["message"]) for row in result.findings()
    ]


def test_a_file_without_a_dcgm_exporter_is_told_so_at_services(write_prod: Any) -> None:
    text = prod_text(LONG).replace("nvcr.io/nvidia/k8s/dcgm-exporter:", "nvcr.io/nvidia/k8s/gpu-exporter:")
    assert _dcgm(write_prod, text) == [
        (LONG, 6, 1, "no DCGM exporter service (image dcgm-exporter); GPU metrics are part of the contract")
    ]


def test_two_scrape_jobs_for_the_exporter_are_one_too_many(write_prod: Any) -> None:
    # The proxy's job also scrapes the exporter: two jobs for one target.
    anchor = "                      - proxy-glm53:8000\n"
    text, _line = replace_nth(prod_text(LONG), anchor, anchor + "                      - dcgm-glm53:9400\n")
    found = _dcgm(write_prod, text)
    # At the receiver's scrape_configs key.
    assert [f for f in found if f[3].startswith("expected exactly one scrape job")] == [
        (LONG, 495, 13, "expected exactly one scrape job for dcgm-glm53:9400, found 2")
    ]
