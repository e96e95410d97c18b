"""The DCGM field catalogue and the dcgm-metrics check that reads it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.validators.conftest import BASE, CANARY, LONG, PROD, line_of, prod_text, run_cli
from tierops.errors import InputError
from validators.rules.dcgm_fields import (
    CATALOGUES,
    catalogue_for,
    load_catalogue,
    parse_catalogue,
    release_tag,
    unknown_field,
)

PINNED = "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-distroless@sha256:" + "e9030b4f" * 8
SHIPPED = CATALOGUES / "dcgm-fields-4.5.3-4.8.2.txt"


def dcgm_findings(path: Path) -> list[dict[str, Any]]:
    result = run_cli("--format", "json", "--rule", "dcgm-metrics", path)
    assert "Traceback" not in result.err
    return result.findings()


def test_the_tag_names_the_dcgm_and_exporter_versions() -> None:
    assert release_tag(PINNED) == "4.5.3-4.8.2"
    assert release_tag("nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-ubuntu22.04") == "4.5.3-4.8.2"
    assert release_tag("nvcr.io/nvidia/k8s/dcgm-exporter@sha256:" + "0" * 64) is None
    assert release_tag("dcgm-exporter:latest") is None


def test_the_shipped_catalogue_is_the_pinned_release_and_records_its_source() -> None:
    catalogue = catalogue_for(PINNED)
    assert catalogue is not None and catalogue.path == SHIPPED
    assert (catalogue.tag, catalogue.dcgm_version, catalogue.exporter_version) == (
        "4.5.3-4.8.2",
        "4.5.3",
        "4.8.2",
    )
    header = SHIPPED.read_text(encoding="utf-8")
    assert "NVIDIA/go-dcgm, pkg/dcgm/const_fields.go at commit" in header
    assert "19e93ad2dfed6cbe684e70a247950fdd43144b8a" in header
    assert "NVIDIA/dcgm-exporter, internal/pkg/counters/const.go" in header
    assert len(catalogue.fields) == 624 + 4
    for field in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_EXP_XID_ERRORS_COUNT"):
        assert field in catalogue


def test_every_field_of_every_prod_counters_csv_is_in_the_catalogue() -> None:
    catalogue = load_catalogue(SHIPPED)
    for name in (BASE, CANARY, LONG):
        text = prod_text(name)
        fields = [
            line.strip().split(",")[0] for line in text.splitlines() if line.strip().startswith("DCGM_")
        ]
        assert len(fields) >= 9, name
        assert [field for field in fields if field not in catalogue] == [], name


def test_the_prod_files_pass_dcgm_metrics() -> None:
    result = run_cli(
        "--format", "json", "--rule", "dcgm-metrics", *(PROD / name for name in (BASE, CANARY, LONG))
    )
    assert (result.code, result.findings()) == (0, [])


def test_a_typo_in_a_counter_name_is_an_error_naming_field_service_config_and_csv_line(
    write_prod: Any,
) -> None:
    text = prod_text(LONG).replace(
        "      DCGM_FI_DEV_SM_CLOCK, gauge,", "      DCGM_FI_DEV_SM_CLOCKS, gauge,", 1
    )
    line = line_of(text, "DCGM_FI_DEV_SM_CLOCKS")
    csv_line = line - line_of(text, "  dcgm_counters:\n    content: |") - 1
    found = dcgm_findings(write_prod(LONG, text))
    assert found == [
        {
            "path": str(write_prod(LONG, text)),
            "line": line,
            "col": 7,
            "level": "error",
            "rule": "dcgm-metrics",
            "message": f"dcgm-glm53 config dcgm_counters line {csv_line}: DCGM field DCGM_FI_DEV_SM_CLOCKS does not "
            "exist in dcgm-exporter 4.5.3-4.8.2 (DCGM 4.5.3): the exporter refuses to start ('could not find DCGM "
            "field'); catalogue dcgm-fields-4.5.3-4.8.2.txt",
        }
    ]
    assert csv_line == 11


def test_an_exporter_tag_without_a_catalogue_is_a_warning_and_shape_only(write_prod: Any) -> None:
    text = prod_text(BASE).replace(
        "dcgm-exporter:4.5.3-4.8.2-distroless@", "dcgm-exporter:4.6.0-4.8.3-distroless@", 1
    )
    text = text.replace("      DCGM_FI_DEV_SM_CLOCK, gauge,", "      DCGM_FI_DEV_SM_CLOCKS, gauge,", 1)
    found = dcgm_findings(write_prod(BASE, text))
    assert [(row["line"], row["level"], row["message"]) for row in found] == [
        (
            line_of(text, "dcgm-exporter:4.6.0-4.8.3"),
            "warning",
            "dcgm-glm53 image has no DCGM field catalogue for its release tag "
            "(validators/contracts/dcgm-fields-<tag>.txt); counter names are checked for shape only",
        )
    ]


def test_unknown_field_names_the_catalogue() -> None:
    catalogue = load_catalogue(SHIPPED)
    assert unknown_field("DCGM_FI_DEV_GPU_UTIL", catalogue) is None
    problem = unknown_field("DCGM_FI_DEV_GPU_UTILIZATION", catalogue)
    assert (
        problem is not None
        and "DCGM_FI_DEV_GPU_UTILIZATION does not exist in dcgm-exporter 4.5.3-4.8.2" in problem
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "# tag: 1.0.0-2.0.0\n# dcgm_version: 1.0.0\n# exporter_version: 2.0.0\nDCGM_FI_X\n",
            "line 4 is not `NAME ID`",
        ),
        ("# tag: 1.0.0-2.0.0\n# dcgm_version: 1.0.0\nDCGM_FI_X 1\n", "the header lacks exporter_version"),
        (
            "# tag: 9.9.9-2.0.0\n# dcgm_version: 1.0.0\n# exporter_version: 2.0.0\nDCGM_FI_X 1\n",
            "the file name another",
        ),
        ("# tag: 1.0.0-2.0.0\n# dcgm_version: 1.0.0\n# exporter_version: 2.0.0\n", "no field names"),
    ],
)
def test_a_malformed_catalogue_is_refused_with_one_reason(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_catalogue(text, Path("dcgm-fields-1.0.0-2.0.0.txt"))
