"""Inline configs: the collector config diffed as YAML, scrape jobs by name; other text as text."""

from __future__ import annotations

from rollout.diff.changes import Aspect
from rollout.diff.report import render_markdown
from tests.rollout.diffkit import R1, R2, changeset, file_change, prod_text, text_lines

PDI1 = "fc91d24-long-context-w4afp8-c8192-qsplit-hicache-pdi1-h200-tp4-ep4-dyntok"


def test_a_scrape_label_change_reads_as_job_label_old_new() -> None:
    old = prod_text()
    scrape_label = f"{' ' * 22}config_variant: {PDI1}\n"
    assert old.count(scrape_label) == 1
    new = old.replace(scrape_label, f"{' ' * 22}config_variant: fc91d24-other\n")
    assert text_lines(old, new)[1:] == [
        "  config otelcol_app_config (used by otelcol-contrib):",
        f"    scrape job {R1}: label config_variant: {PDI1} -> fc91d24-other",
    ]
    (change,) = file_change(old, new).others
    assert change.aspect is Aspect.CONFIG
    assert change.subject == f"scrape job {R1}: label config_variant"


def test_the_same_label_change_on_several_scrape_jobs_is_one_line() -> None:
    old = prod_text()
    scrape_label = f"{' ' * 22}deployment: GLM-5.3-Flash-SGL-TP4-W4AFP8-LongContext\n"
    new = old.replace(scrape_label, f"{' ' * 22}deployment: renamed\n")
    lines = text_lines(old, new)
    assert (
        f"    scrape jobs {R1}, {R2}, proxy-glm53, dcgm-glm53: "
        "label deployment: GLM-5.3-Flash-SGL-TP4-W4AFP8-LongContext -> renamed"
    ) in lines


def test_reordering_scrape_jobs_is_no_change() -> None:
    old = prod_text()
    start = old.index("              - job_name: proxy-glm53\n")
    middle = old.index("              - job_name: dcgm-glm53\n")
    end = old.index("      processors:\n")
    new = old[:start] + old[middle:end] + old[start:middle] + old[end:]
    assert new != old
    assert file_change(old, new).others == ()


def test_a_removed_scrape_job_is_named() -> None:
    old = prod_text()
    start = old.index("              - job_name: dcgm-glm53\n")
    end = old.index("      processors:\n")
    new = old[:start] + old[end:]
    lines = text_lines(old, new)
    assert lines[1] == "  config otelcol_app_config (used by otelcol-contrib):"
    assert lines[2].startswith(
        '    scrape job dcgm-glm53: - job {"job_name": "dcgm-glm53", "scrape_interval": "15s"'
    )


def test_a_text_config_is_a_unified_diff() -> None:
    old = prod_text()
    new = old.replace("client_max_body_size 0;", "client_max_body_size 200m;")
    lines = text_lines(old, new)[1:]
    assert lines[:2] == ["  config nginx_conf (used by nginx):", "    text changed (+1 -1 lines)"]
    hunk = lines[2:]
    assert hunk[0].startswith("      @@ -") and hunk[0].endswith(" @@")
    assert [line for line in hunk if line.startswith(("      -", "      +"))] == [
        "      -    client_max_body_size 0;",
        "      +    client_max_body_size 200m;",
    ]
    assert len(hunk) == 1 + 3 + 2 + 3  # header, 3 lines of context either side


def test_a_long_text_diff_is_collapsed_in_markdown_and_a_short_one_is_not() -> None:
    old = prod_text()
    short = old.replace("client_max_body_size 0;", "client_max_body_size 200m;")
    markdown = render_markdown(changeset({"prod/x.yaml": old}, {"prod/x.yaml": short}))
    assert "<details>" not in markdown
    assert "```diff\n@@ -" in markdown
    long = old.replace("proxy_set_header", "proxy_set_header_new").replace("listen", "listen_on")
    markdown = render_markdown(changeset({"prod/x.yaml": old}, {"prod/x.yaml": long}))
    assert (
        "<details><summary>config nginx_conf (used by nginx): text changed (+8 -8 lines)</summary>"
        in markdown
    )


def test_a_config_added_and_one_nobody_mounts_are_reported() -> None:
    old = prod_text()
    new = old.replace("configs:\n  nginx_conf:\n", "configs:\n  spare:\n    content: hello\n  nginx_conf:\n")
    assert text_lines(old, new)[1:] == ["  config spare:", "    + config spare"]
