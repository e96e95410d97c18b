"""The mutation suite: one change to a committed prod file, one named rule at the right line.

Each case edits a real prod file (text edits, so the file keeps every other byte),
runs the CLI in-process, and asserts exit 1, no traceback, and a finding of the
expected rule at the line of the offending key or item. Where the change breaks more
than one contract (a changed chunk is also a wrong config_variant), the other
findings may appear too; the named one must.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.validators.conftest import BASE, CANARY, LONG, line_of, prod_text, replace_nth, run_cli

ENGINE_DIGEST = "47aff791090003a37f893e998c44794c410d3f7bdfc7fdd2dfab5eb5592b30bb"
OTHER_DIGEST = "0" * 63 + "1"
R1 = "model-sg-glm53-w4afp8-tp4-r1"
R2 = "model-sg-glm53-w4afp8-tp4-r2"


@dataclass(frozen=True)
class Mutation:
    id: str
    file: str
    edits: tuple[tuple[str, str, int], ...]  # (old, new, occurrence)
    rule: str
    offset: int = 0  # expected line = line of the first edit + offset ...
    at: tuple[str, int] | None = None  # ... or the nth line containing this text (mutated file)
    level: str = "error"
    extra: dict[str, Any] = field(default_factory=dict)


def edit(old: str, new: str, nth: int = 1) -> tuple[str, str, int]:
    return (old, new, nth)


def _item(value: str) -> str:
    return f"      - {value}\n"


def _pair(flag: str, value: str) -> str:
    return f"      - {flag}\n      - {value}\n"


MUTATIONS = [
    # -- argv contract (prod-config) ---------------------------------------------------
    Mutation(
        "drop-dyntok-r1",
        LONG,
        (edit(_item("--enable-dynamic-batch-tokenizer"), "", 1),),
        "prod-config",
        offset=-1,
    ),
    Mutation(
        "drop-dyntok-r2",
        LONG,
        (edit(_item("--enable-dynamic-batch-tokenizer"), "", 2),),
        "prod-config",
        offset=-1,
    ),
    Mutation(
        "duplicate-flag",
        BASE,
        (edit(_item("--enable-metrics"), _item("--enable-metrics") * 2),),
        "prod-config",
        offset=1,
    ),
    Mutation(
        "reorder-two-flags",
        BASE,
        (
            edit(
                _pair("--kv-cache-dtype", "bfloat16") + _pair("--reasoning-parser", "glm45"),
                _pair("--reasoning-parser", "glm45") + _pair("--kv-cache-dtype", "bfloat16"),
            ),
        ),
        "prod-config",
        offset=2,
    ),
    Mutation(
        "change-chunk",
        BASE,
        (edit(_pair("--chunked-prefill-size", '"4096"'), _pair("--chunked-prefill-size", '"2048"')),),
        "prod-config",
        offset=1,
    ),
    Mutation(
        "change-queue",
        BASE,
        (edit(_pair("--max-queued-requests", '"8"'), _pair("--max-queued-requests", '"16"'), 2),),
        "prod-config",
        offset=1,
    ),
    Mutation(
        "change-hicache-option", LONG, (edit(_item("write_through"), _item("write_back"), 2),), "prod-config"
    ),
    Mutation(
        "swap-pdi-between-replicas",
        LONG,
        (
            edit(_pair("--prefill-decode-interval", '"1"'), _pair("--prefill-decode-interval", '"2"')),
            edit(_pair("--prefill-decode-interval", '"2"'), _pair("--prefill-decode-interval", '"1"'), 2),
        ),
        "prod-config",
        offset=1,
    ),
    Mutation(
        "collide-dist-init-addr", LONG, (edit('"127.0.0.1:29511"', '"127.0.0.1:29510"'),), "prod-config"
    ),
    Mutation(
        "chunk-16384-without-split",
        BASE,
        (edit(_pair("--chunked-prefill-size", '"4096"'), _pair("--chunked-prefill-size", '"16384"')),),
        "prod-config",
        offset=1,
    ),
    Mutation(
        "split-on-unlisted-image",
        LONG,
        (
            edit(
                f"    image: docker.io/nearaidev/sglang@sha256:{ENGINE_DIGEST}",
                f"    image: docker.io/nearaidev/sglang@sha256:{OTHER_DIGEST}",
                3,
            ),
        ),
        "prod-config",
    ),
    Mutation(
        "qsplit-env-on-base",
        BASE,
        (edit("      NCCL_DEBUG: WARN\n", '      NCCL_DEBUG: WARN\n      SGLANG_DSA_INDEXER_QSPLIT: "1"\n'),),
        "prod-config",
        offset=1,
    ),
    Mutation(
        "literal-env-value-changed",
        BASE,
        (
            edit(
                '      SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION: "0"',
                '      SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION: "1"',
                2,
            ),
        ),
        "prod-config",
    ),
    # -- config_variant (prod-config) ------------------------------------------------
    Mutation(
        "variant-changed-in-label-only",
        BASE,
        (
            edit(
                "tierops.otel.config_variant: fc91d24-base-w4afp8-c4096-pdi1",
                "tierops.otel.config_variant: fc91d24-base-w4afp8-c8192-pdi1",
            ),
        ),
        "prod-config",
    ),
    Mutation(
        "variant-changed-in-scrape-job-only",
        BASE,
        (
            edit(
                "config_variant: fc91d24-base-w4afp8-c4096-pdi1-h200-tp4-ep4\n                      engine",
                "config_variant: fc91d24-base-w4afp8-c4096-pdi2-h200-tp4-ep4\n                      engine",
                2,
            ),
        ),
        "prod-config",
    ),
    Mutation(
        "variant-copied-from-other-replica",
        LONG,
        (
            edit(
                "tierops.otel.config_variant: fc91d24-long-context-w4afp8-c8192-qsplit-hicache-pdi2",
                "tierops.otel.config_variant: fc91d24-long-context-w4afp8-c8192-qsplit-hicache-pdi1",
            ),
        ),
        "prod-config",
    ),
    Mutation(
        "variant-missing-dyntok",
        LONG,
        (
            edit(
                "tierops.otel.config_variant: fc91d24-long-context-w4afp8-c8192-qsplit-hicache-pdi1-h200-tp4-ep4-dyntok",
                "tierops.otel.config_variant: fc91d24-long-context-w4afp8-c8192-qsplit-hicache-pdi1-h200-tp4-ep4",
            ),
            edit(
                "config_variant: fc91d24-long-context-w4afp8-c8192-qsplit-hicache-pdi1-h200-tp4-ep4-dyntok\n                      engine",
                "config_variant: fc91d24-long-context-w4afp8-c8192-qsplit-hicache-pdi1-h200-tp4-ep4\n                      engine",
            ),
        ),
        "prod-config",
    ),
    # -- GPUs, parity, proxy, services (prod-config) ---------------------------------------
    Mutation(
        "gpu-overlap", BASE, (edit('                - "4"\n', '                - "3"\n'),), "prod-config"
    ),
    Mutation(
        "gpu-outside-island",
        BASE,
        (edit('                - "3"\n', '                - "5"\n'),),
        "prod-config",
    ),
    Mutation(
        "gpu-list-reordered",
        BASE,
        (
            edit(
                '                - "0"\n                - "1"\n',
                '                - "1"\n                - "0"\n',
            ),
        ),
        "prod-config",
    ),
    Mutation(
        "parity-restart-on-one-replica",
        BASE,
        (edit("    restart: unless-stopped\n", "    restart: always\n", 2),),
        "prod-config",
    ),
    Mutation(
        "parity-healthcheck-on-one-replica",
        BASE,
        (edit("      start_period: 40m\n", "      start_period: 20m\n", 2),),
        "prod-config",
    ),
    Mutation(
        "proxy-pool-missing-replica",
        BASE,
        (
            edit(
                f"VLLM_BACKEND_URLS: http://{R1}:8000,http://{R2}:8000",
                f"VLLM_BACKEND_URLS: http://{R1}:8000",
            ),
        ),
        "prod-config",
    ),
    Mutation(
        "proxy-pool-out-of-order",
        BASE,
        (
            edit(
                f"VLLM_BACKEND_URLS: http://{R1}:8000,http://{R2}:8000",
                f"VLLM_BACKEND_URLS: http://{R2}:8000,http://{R1}:8000",
            ),
        ),
        "prod-config",
    ),
    Mutation(
        "proxy-depends-on-engine",
        BASE,
        (
            edit(
                "    container_name: proxy-glm53\n",
                f"    container_name: proxy-glm53\n    depends_on:\n      - {R1}\n",
            ),
        ),
        "prod-config",
        offset=2,
    ),
    Mutation(
        "proxy-probe-timeout-changed",
        BASE,
        (edit('HEALTH_CHECK_TIMEOUT_SECS: "3"', 'HEALTH_CHECK_TIMEOUT_SECS: "10"'),),
        "prod-config",
    ),
    Mutation(
        "missing-service",
        BASE,
        (edit("  model-proxy-registrar:\n    image:", "  model-proxy-registrar-gone:\n    image:"),),
        "prod-config",
        at=("services:", 1),
    ),
    Mutation(
        "extra-service",
        BASE,
        (
            edit(
                "volumes:\n  huggingface_cache",
                f"  debug-shell:\n    image: docker.io/library/busybox@sha256:{OTHER_DIGEST}\n    container_name: debug-shell\nvolumes:\n  huggingface_cache",
            ),
        ),
        "prod-config",
    ),
    Mutation(
        "engine-publishes-port",
        BASE,
        (edit("    ipc: host\n", '    ipc: host\n    ports:\n      - "30000:8000"\n'),),
        "prod-config",
        offset=1,
    ),
    Mutation(
        "long-context-loses-discovery-port",
        LONG,
        (edit('      - "8001:8001"\n', ""),),
        "prod-config",
        at=("    ports:", 1),
    ),
    Mutation(
        "canary-service-without-profile",
        CANARY,
        (
            edit(
                "    container_name: nginx\n    profiles:\n      - w4afp8-canary\n",
                "    container_name: nginx\n",
            ),
        ),
        "prod-config",
        at=("  nginx:", 1),
    ),
    Mutation(
        "canary-r2-without-hicache",
        CANARY,
        (edit(_item("--enable-hierarchical-cache"), "", 1),),
        "prod-config",
        offset=-1,
    ),
    # -- engine-flags ------------------------------------------------------------------
    Mutation(
        "unknown-flag",
        BASE,
        (
            edit(
                _item("--enable-cache-report"), _item("--enable-cache-report") + _item("--enable-turbo-mode")
            ),
        ),
        "engine-flags",
        offset=1,
    ),
    Mutation(
        "value-on-store-true",
        BASE,
        (edit(_item("--enable-metrics"), _item("--enable-metrics") + _item('"true"')),),
        "engine-flags",
        offset=1,
    ),
    Mutation("bad-choice", LONG, (edit(_item("page_first_direct"), _item("page_sideways")),), "engine-flags"),
    Mutation(
        "int-value-does-not-parse",
        BASE,
        (edit(_pair("--max-running-requests", '"32"'), _pair("--max-running-requests", "lots")),),
        "engine-flags",
        offset=1,
    ),
    Mutation(
        "undeclared-patch-flag",
        BASE,
        (
            edit(
                _item("--enable-cache-report"),
                _item("--enable-cache-report") + _pair("--decode-prefill-interval", '"2"'),
            ),
        ),
        "engine-flags",
        offset=1,
    ),
    Mutation(
        "conflicting-tokenizer-flags",
        LONG,
        (
            edit(
                _item("--enable-dynamic-batch-tokenizer"),
                _item("--enable-dynamic-batch-tokenizer") + _item("--enable-tokenizer-batch-encode"),
            ),
        ),
        "engine-flags",
        offset=1,
    ),
    # -- otel-labels -------------------------------------------------------------------
    Mutation(
        "engine-image-label-wrong",
        BASE,
        (edit("tierops.otel.engine_image: 47aff7910900", "tierops.otel.engine_image: 47aff7910901"),),
        "otel-labels",
    ),
    Mutation(
        "scrape-target-without-service",
        BASE,
        (
            edit(
                "      processors:\n",
                "              - job_name: ghost\n                scrape_interval: 15s\n                scrape_timeout: 10s\n                metrics_path: /metrics\n                static_configs:\n                  - targets:\n                      - ghost:9000\n      processors:\n",
            ),
        ),
        "otel-labels",
    ),
    Mutation(
        "scraped-service-without-target",
        BASE,
        (edit("              - job_name: proxy-glm53\n", "              - job_name: proxy-glm53-old\n"),),
        "otel-labels",
        at=("            scrape_configs:", 1),
    ),
    Mutation(
        "label-name-starts-with-underscores",
        BASE,
        (
            edit(
                "                      container_name: proxy-glm53\n",
                "                      container_name: proxy-glm53\n                      __meta_owner: ops\n",
            ),
        ),
        "otel-labels",
        offset=1,
    ),
    Mutation("num-consumers-2", BASE, (edit("num_consumers: 1", "num_consumers: 2"),), "otel-labels"),
    Mutation(
        "collector-env-without-soft-default",
        BASE,
        (edit("CVM_NAME: ${CVM_NAME:-unknown}", "CVM_NAME: ${CVM_NAME}"),),
        "otel-labels",
    ),
    Mutation(
        "label-block-lacks-path",
        BASE,
        (
            edit(
                "      tierops.otel.path: /metrics\n      tierops.otel.container_name: proxy-glm53\n",
                "      tierops.otel.container_name: proxy-glm53\n",
            ),
        ),
        "otel-labels",
        at=("    labels:", 3),
    ),
    # -- dcgm-metrics ------------------------------------------------------------------
    Mutation(
        "dcgm-field-duplicated",
        BASE,
        (
            edit(
                "      DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).\n",
                "      DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).\n" * 2,
            ),
        ),
        "dcgm-metrics",
        offset=1,
    ),
    Mutation(
        "dcgm-field-missing",
        BASE,
        (edit("      DCGM_FI_DEV_XID_ERRORS, gauge, Value of the last XID error encountered.\n", ""),),
        "dcgm-metrics",
        at=("    content: |", 3),
    ),
    Mutation(
        "dcgm-csv-mode-writable",
        BASE,
        (edit('        mode: "0444"\n', '        mode: "0644"\n'),),
        "dcgm-metrics",
    ),
    Mutation(
        "dcgm-csv-without-mode",
        BASE,
        (
            edit(
                '        target: /etc/dcgm-exporter/glm53-counters.csv\n        mode: "0444"\n',
                "        target: /etc/dcgm-exporter/glm53-counters.csv\n",
            ),
        ),
        "dcgm-metrics",
        offset=-1,
    ),
    Mutation(
        "dcgm-without-sys-admin",
        BASE,
        (edit("    cap_add:\n      - SYS_ADMIN\n", ""),),
        "dcgm-metrics",
        at=("  dcgm-glm53:", 1),
    ),
    # -- compose-hygiene -----------------------------------------------------------------
    Mutation(
        "unpinned-image",
        BASE,
        (
            edit(
                "image: docker.io/library/nginx:1.27-alpine@sha256:65645c7bb6a0661892a8b03b89d0743208a18dd2f3f17a54ef4b76fb8e2f2a10",
                "image: docker.io/library/nginx:1.27-alpine",
            ),
        ),
        "compose-hygiene",
    ),
    Mutation(
        "malformed-digest",
        BASE,
        (edit("vllm-proxy-rs@sha256:d61357da", "vllm-proxy-rs@sha256:D61357DA"),),
        "compose-hygiene",
    ),
    Mutation(
        "literal-token-in-env",
        BASE,
        (
            edit(
                "      HF_TOKEN: ${HUGGING_FACE_HUB_TOKEN}\n",
                "      HF_TOKEN: hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789\n",  # split for the token hook
                2,
            ),
        ),
        "compose-hygiene",
    ),
    Mutation(
        "container-name-differs",
        BASE,
        (edit("    container_name: nginx\n", "    container_name: nginx-front\n"),),
        "compose-hygiene",
    ),
    Mutation(
        "build-instead-of-image",
        BASE,
        (edit("    container_name: nginx\n", "    container_name: nginx\n    build: ./nginx\n"),),
        "compose-hygiene",
        offset=1,
    ),
    Mutation(
        "anchor-and-alias-in-generated-file",
        BASE,
        (
            edit(
                "    ulimits:\n      memlock: -1\n      stack: 67108864\n",
                "    ulimits: &ulimits\n      memlock: -1\n      stack: 67108864\n",
                1,
            ),
            edit("    ulimits:\n      memlock: -1\n      stack: 67108864\n", "    ulimits: *ulimits\n", 1),
        ),
        "compose-hygiene",
    ),
    # -- collector-config ------------------------------------------------------------------
    Mutation(
        "pipeline-names-undefined-exporter",
        BASE,
        (edit("exporters: [otlphttp/gateway]", "exporters: [otlphttp/backup]"),),
        "collector-config",
    ),
    Mutation(
        "collector-reads-unset-env", BASE, (edit("$${env:ENV}", "$${env:DEPLOY_ENV}"),), "collector-config"
    ),
]


# Where each mutation's finding points (column) and how its message starts (its subject
# and what is wrong): the mutation tests pin rule, line:col and subject,
# not only (rule, line).
EXPECTED: dict[str, tuple[int, str]] = {
    "drop-dyntok-r1": (
        9,
        "model-sg-glm53-w4afp8-tp4-r1 argv lacks --enable-dynamic-batch-tokenizer, which model-sg-glm53-w4afp",
    ),
    "drop-dyntok-r2": (
        9,
        "model-sg-glm53-w4afp8-tp4-r2 argv lacks --enable-dynamic-batch-tokenizer, which model-sg-glm53-w4afp",
    ),
    "duplicate-flag": (9, "model-sg-glm53-w4afp8-tp4-r1 argv repeats --enable-metrics"),
    "reorder-two-flags": (9, "model-sg-glm53-w4afp8-tp4-r1 argv has --kv-cache-dtype out of contract order"),
    "change-chunk": (9, "model-sg-glm53-w4afp8-tp4-r1 --chunked-prefill-size is 2048"),
    "change-queue": (9, "model-sg-glm53-w4afp8-tp4-r2 --max-queued-requests is 16"),
    "change-hicache-option": (9, "model-sg-glm53-w4afp8-tp4-r2 --hicache-write-policy is write_back"),
    "swap-pdi-between-replicas": (9, "model-sg-glm53-w4afp8-tp4-r1 --prefill-decode-interval is 2"),
    "collide-dist-init-addr": (
        9,
        "model-sg-glm53-w4afp8-tp4-r2 --dist-init-addr 127.0.0.1:29510 collides with model-sg-glm53-w4afp8-tp",
    ),
    "chunk-16384-without-split": (
        9,
        "model-sg-glm53-w4afp8-tp4-r1 --chunked-prefill-size 16384 needs the DSA indexer split (SGLANG_DSA_IN",
    ),
    "split-on-unlisted-image": (
        5,
        "model-sg-glm53-w4afp8-tp4-r2 image is not the tier's engine build docker.io/nearaidev/sglang@sha256:",
    ),
    "qsplit-env-on-base": (
        7,
        "model-sg-glm53-w4afp8-tp4-r1 env has SGLANG_DSA_INDEXER_QSPLIT (feature qsplit), which the contract ",
    ),
    "literal-env-value-changed": (
        7,
        "model-sg-glm53-w4afp8-tp4-r2 env SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION is '1'",
    ),
    "variant-changed-in-label-only": (
        7,
        "model-sg-glm53-w4afp8-tp4-r1 label tierops.otel.config_variant is fc91d24-base-w4afp8-c8192-pdi1-h20",
    ),
    "variant-changed-in-scrape-job-only": (
        23,
        "scrape job model-sg-glm53-w4afp8-tp4-r2 label config_variant is fc91d24-base-w4afp8-c4096-pdi2-h200-",
    ),
    "variant-copied-from-other-replica": (
        7,
        "model-sg-glm53-w4afp8-tp4-r2 label tierops.otel.config_variant is fc91d24-long-context-w4afp8-c8192-",
    ),
    "variant-missing-dyntok": (
        7,
        "model-sg-glm53-w4afp8-tp4-r1 label tierops.otel.config_variant is fc91d24-long-context-w4afp8-c8192-",
    ),
    "gpu-overlap": (
        19,
        "model-sg-glm53-w4afp8-tp4-r2 GPU 3 is also reserved by model-sg-glm53-w4afp8-tp4-r1",
    ),
    "gpu-outside-island": (
        19,
        "model-sg-glm53-w4afp8-tp4-r1 GPU 5 is outside the NVLink island of its other GPUs",
    ),
    "gpu-list-reordered": (19, "model-sg-glm53-w4afp8-tp4-r1 GPU list ['1', '0', '2', '3'] is reordered"),
    "parity-restart-on-one-replica": (5, "model-sg-glm53-w4afp8-tp4-r2 restart is always"),
    "parity-healthcheck-on-one-replica": (
        7,
        "replica parity: model-sg-glm53-w4afp8-tp4-r2 healthcheck.start_period is 20m, model-sg-glm53-w4afp8-",
    ),
    "proxy-pool-missing-replica": (
        7,
        "proxy-glm53 VLLM_BACKEND_URLS lacks http://model-sg-glm53-w4afp8-tp4-r2:8000",
    ),
    "proxy-pool-out-of-order": (7, "proxy-glm53 VLLM_BACKEND_URLS lists the engines out of replica order"),
    "proxy-depends-on-engine": (9, "proxy-glm53 depends_on model-sg-glm53-w4afp8-tp4-r1"),
    "proxy-probe-timeout-changed": (7, "proxy-glm53 env HEALTH_CHECK_TIMEOUT_SECS must be '3', not '10'"),
    "missing-service": (1, "service model-proxy-registrar is missing (the contract's service set)"),
    "extra-service": (3, "unexpected service debug-shell"),
    "engine-publishes-port": (
        5,
        "model-sg-glm53-w4afp8-tp4-r1 must not have `ports` (engines listen on :8000 inside the project netwo",
    ),
    "long-context-loses-discovery-port": (5, "nginx publishes ['8000:8000', '8444:443']"),
    "canary-service-without-profile": (
        3,
        "nginx must be behind exactly the profile w4afp8-canary (so an unscoped `up` starts nothing), not non",
    ),
    "canary-r2-without-hicache": (9, "model-sg-glm53-w4afp8-tp4-r2 argv lacks --enable-hierarchical-cache"),
    "unknown-flag": (
        9,
        "model-sg-glm53-w4afp8-tp4-r1 flag --enable-turbo-mode does not exist in sglang 0.5.16 (build fc91d24",
    ),
    "value-on-store-true": (
        9,
        "model-sg-glm53-w4afp8-tp4-r1 flag --enable-metrics is a switch (store_true) and takes no value, got ",
    ),
    "bad-choice": (
        9,
        "model-sg-glm53-w4afp8-tp4-r1 flag --hicache-mem-layout value 'page_sideways' is not one of: layer_fi",
    ),
    "int-value-does-not-parse": (
        9,
        "model-sg-glm53-w4afp8-tp4-r1 flag --max-running-requests value 'lots' is not an integer",
    ),
    "undeclared-patch-flag": (
        9,
        "model-sg-glm53-w4afp8-tp4-r1 flag --decode-prefill-interval does not exist in sglang 0.5.16 (build f",
    ),
    "conflicting-tokenizer-flags": (
        9,
        "model-sg-glm53-w4afp8-tp4-r1 sets --enable-dynamic-batch-tokenizer and --enable-tokenizer-batch-enco",
    ),
    "engine-image-label-wrong": (
        7,
        "model-sg-glm53-w4afp8-tp4-r1 label tierops.otel.engine_image is '47aff7910901'",
    ),
    "scrape-target-without-service": (
        17,
        "scrape job ghost scrapes no labelled service of this file (no service with tierops.otel.job=ghost)",
    ),
    "scraped-service-without-target": (
        13,
        "scraped service proxy-glm53 has no scrape job 'proxy-glm53' in the collector config",
    ),
    "label-name-starts-with-underscores": (
        23,
        "scrape job proxy-glm53 label '__meta_owner' starts with __ (reserved for Prometheus internals)",
    ),
    "num-consumers-2": (13, "exporter otlphttp/gateway sending_queue.num_consumers is 2"),
    "collector-env-without-soft-default": (
        7,
        "otelcol-contrib env CVM_NAME must be a soft default ${CVM_NAME:-default}, not '${CVM_NAME}'",
    ),
    "label-block-lacks-path": (5, "proxy-glm53 lacks the label tierops.otel.path=/metrics"),
    "dcgm-field-duplicated": (7, "DCGM field DCGM_FI_DEV_GPU_UTIL is listed twice (first on line 436)"),
    "dcgm-field-missing": (5, "DCGM counters lack the required field DCGM_FI_DEV_XID_ERRORS"),
    "dcgm-csv-mode-writable": (9, "dcgm-glm53 counters CSV mode is 0644"),
    "dcgm-csv-without-mode": (9, "dcgm-glm53 mounts the counters CSV without a mode"),
    "dcgm-without-sys-admin": (
        3,
        "dcgm-glm53 lacks cap_add SYS_ADMIN, which the active DCGM_FI_PROF_* fields need (they would read as ",
    ),
    "unpinned-image": (
        5,
        "nginx image 'docker.io/library/nginx:1.27-alpine' is not pinned by digest (@sha256:<64 hex>)",
    ),
    "malformed-digest": (5, "proxy-glm53 image digest is malformed"),
    "literal-token-in-env": (
        7,
        "model-sg-glm53-w4afp8-tp4-r1 env HF_TOKEN names a secret and holds a literal value",
    ),
    "container-name-differs": (5, "container_name 'nginx-front' differs from the service key 'nginx'"),
    "build-instead-of-image": (5, "nginx has `build:`"),
    "anchor-and-alias-in-generated-file": (14, "YAML anchor in a generated file"),
    "pipeline-names-undefined-exporter": (
        25,
        "pipeline metrics uses exporter otlphttp/backup, which is not defined under exporters",
    ),
    "collector-reads-unset-env": (
        22,
        "collector config reads ${env:DEPLOY_ENV}, but otelcol-contrib has no DEPLOY_ENV in its environment",
    ),
}


def test_the_suite_has_at_least_forty_distinct_mutations() -> None:
    ids = [mutation.id for mutation in MUTATIONS]
    assert len(ids) == len(set(ids))
    assert len(ids) >= 40


def apply(mutation: Mutation) -> tuple[str, int]:
    text = prod_text(mutation.file)
    first_line = 0
    for index, (old, new, nth) in enumerate(mutation.edits):
        text, line = replace_nth(text, old, new, nth)
        if index == 0:
            first_line = line
    assert text != prod_text(mutation.file)
    if mutation.at is not None:
        return text, line_of(text, *mutation.at)
    return text, first_line + mutation.offset


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: m.id)
def test_single_mutation_is_caught_by_the_named_rule_at_the_offending_line(
    mutation: Mutation, write_prod: Any, tmp_path: Path
) -> None:
    text, line = apply(mutation)
    path = write_prod(mutation.file, text)
    result = run_cli("--format", "json", path)
    assert result.code == 1, result.err
    assert "Traceback" not in result.out + result.err
    col, says = EXPECTED[mutation.id]
    found = [
        (row["rule"], row["line"], row["col"], row["message"])
        for row in result.findings()
        if row["level"] == mutation.level and row["path"] == str(path)
    ]
    assert any(
        (rule, at, column) == (mutation.rule, line, col) and message.startswith(says)
        for rule, at, column, message in found
    ), found


def test_every_mutation_has_its_expected_column_and_subject() -> None:
    assert sorted(EXPECTED) == sorted(mutation.id for mutation in MUTATIONS)
