"""One guard case per registered check (validators/registry.py CHECKS): a single fault in a
committed prod file, and the exact finding that check, and only it, reports for it.

tests/validators/test_guards.py asserts each finding (rule id, line:col, the message
with its subject) and that silencing the check makes it disappear. The expected
findings were taken from a run and then read line by line against the fault.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import ROOT
from tests.validators.conftest import BASE, CANARY, LONG, PROD, replace_nth

PACK_DIR = ROOT / "tests" / "fixtures" / "stacks" / "pack"
PACK = "Pack-Fixture.yaml"
R1 = "model-sg-glm53-w4afp8-tp4-r1"
R2 = "model-sg-glm53-w4afp8-tp4-r2"
PASSWORD = "Tr0ub4dor-" + "horse-staple"  # split: the token-shape hook reads this file too


@dataclass(frozen=True)
class Guard:
    check: str  # registry id, `family/check`
    file: str
    fault: Callable[[str], str]
    line: int
    col: int
    message: str
    # Where `file` is: the fixture fleet's prod/, or the generators tests' pack.
    directory: Path = PROD

    @property
    def rule(self) -> str:
        return self.check.split("/", 1)[0]

    def text(self) -> str:
        original = (self.directory / self.file).read_text(encoding="utf-8")
        mutated = self.fault(original)
        assert mutated != original, self.check
        return mutated


def edit(old: str, new: str, nth: int = 1) -> Callable[[str], str]:
    return lambda text: replace_nth(text, old, new, nth)[0]


def edits(*changes: Callable[[str], str]) -> Callable[[str], str]:
    def apply(text: str) -> str:
        for change in changes:
            text = change(text)
        return text

    return apply


def _command_as_string(text: str) -> str:
    """r1's command list written as one string (style: compose reads both the same)."""
    start = text.index("    command:\n      - sglang\n")
    end = text.index("    environment:\n", start)
    words = re.findall(r"^      - (.*)$", text[start:end], flags=re.MULTILINE)
    return text[:start] + "    command: " + " ".join(w.strip('"') for w in words) + "\n" + text[end:]


def _second_dcgm(text: str) -> str:
    start = text.index("  dcgm-glm53:\n")
    end = text.index("  otelcol-contrib:\n", start)
    block = text[start:end].replace("dcgm-glm53", "dcgm-glm53-b")
    return text[:end] + block + text[end:]


def _item(word: str) -> str:
    return f"      - {word}\n"


GUARDS: list[Guard] = [
    # -- prod-config ---------------------------------------------------------------------
    Guard(
        "prod-config/service-set",
        LONG,
        edit("  model-proxy-registrar:\n", "  model-proxy-registrar-x:\n"),
        6,
        1,
        "service model-proxy-registrar is missing (the contract's service set) (validators/contracts/glm53.yaml: services)",
    ),
    Guard(
        "prod-config/profiles",
        CANARY,
        edit("    profiles:\n      - w4afp8-canary\n", "", 4),
        240,
        3,
        "proxy-glm53 must be behind exactly the profile w4afp8-canary (so an unscoped `up` starts nothing), not none",
    ),
    Guard(
        "prod-config/engine-settings",
        LONG,
        edit("    stop_grace_period: 5m\n", "    stop_grace_period: 1m\n"),
        31,
        5,
        "model-sg-glm53-w4afp8-tp4-r1 stop_grace_period is 1m; the contract says 5m (validators/contracts/glm53.yaml)",
    ),
    Guard(
        "prod-config/argv",
        LONG,
        edit(_item("--enable-dynamic-batch-tokenizer"), "", 2),
        200,
        9,
        "model-sg-glm53-w4afp8-tp4-r2 argv lacks --enable-dynamic-batch-tokenizer, which model-sg-glm53-w4afp8-tp4-r1 carries",
    ),
    Guard(
        "prod-config/env",
        LONG,
        edit('      SGLANG_HICACHE_CUDA_HOST_MEMORY: "1"\n', "", 1),
        90,
        5,
        "model-sg-glm53-w4afp8-tp4-r1 env lacks SGLANG_HICACHE_CUDA_HOST_MEMORY=1",
    ),
    Guard(
        "prod-config/variant",
        LONG,
        edit(
            "tierops.otel.config_variant: fc91d24-long-context-w4afp8-c8192-qsplit-hicache-pdi2",
            "tierops.otel.config_variant: fc91d24-long-context-w4afp8-c8192-qsplit-hicache-pdi3",
        ),
        244,
        7,
        "model-sg-glm53-w4afp8-tp4-r2 label tierops.otel.config_variant is fc91d24-long-context-w4afp8-c8192-qsplit-hicache-pdi3-h200-tp4-ep4-dyntok; its own argv and env say fc91d24-long-context-w4afp8-c8192-qsplit-hicache-pdi2-h200-tp4-ep4-dyntok",
    ),
    Guard(
        "prod-config/gpus",
        LONG,
        edit(
            '                - "2"\n                - "3"\n',
            '                - "3"\n                - "2"\n',
            1,
        ),
        107,
        19,
        "model-sg-glm53-w4afp8-tp4-r1 GPU list ['0', '1', '3', '2'] is reordered; the contract order is ['0', '1', '2', '3'] (validators/contracts/glm53.yaml: engines.replicas)",
    ),
    Guard(
        "prod-config/gpu-devices",
        LONG,
        edit("            - driver: nvidia\n", "            - driver: amd\n", 1),
        103,
        15,
        "model-sg-glm53-w4afp8-tp4-r1 GPU reservation driver must be nvidia",
    ),
    Guard(
        "prod-config/gpu-devices",
        LONG,
        edit(
            "              capabilities:\n                - gpu\n",
            "              capabilities:\n                - compute\n",
            1,
        ),
        109,
        15,
        "model-sg-glm53-w4afp8-tp4-r1 GPU reservation capabilities must be [gpu]",
    ),
    Guard(
        "prod-config/gpu-island",
        LONG,
        edit('                - "3"\n', '                - "4"\n', 1),
        108,
        19,
        "model-sg-glm53-w4afp8-tp4-r1 GPU 4 is outside the NVLink island of its other GPUs",
    ),
    Guard(
        "prod-config/gpu-tp",
        LONG,
        edit('      - --tp-size\n      - "4"\n', '      - --tp-size\n      - "2"\n', 1),
        104,
        15,
        "model-sg-glm53-w4afp8-tp4-r1 reserves 4 GPUs but runs --tp-size 2",
    ),
    Guard(
        "prod-config/gpu-overlap",
        LONG,
        edit('                - "4"\n', '                - "3"\n', 1),
        217,
        19,
        "model-sg-glm53-w4afp8-tp4-r2 GPU 3 is also reserved by model-sg-glm53-w4afp8-tp4-r1",
    ),
    Guard(
        "prod-config/rendezvous",
        LONG,
        edit('      - "127.0.0.1:29511"\n', '      - "127.0.0.1:29510"\n'),
        185,
        9,
        "model-sg-glm53-w4afp8-tp4-r2 --dist-init-addr 127.0.0.1:29510 collides with model-sg-glm53-w4afp8-tp4-r1",
    ),
    Guard(
        "prod-config/pairing-chunk",
        LONG,
        edits(
            edit('      - "8192"\n', '      - "16384"\n', 1),
            edit('      SGLANG_DSA_INDEXER_QSPLIT: "1"\n', "", 1),
        ),
        57,
        9,
        "model-sg-glm53-w4afp8-tp4-r1 --chunked-prefill-size 16384 needs the DSA indexer split (SGLANG_DSA_INDEXER_QSPLIT=1): without it a long burst leaves no free GPU memory",
    ),
    Guard(
        "prod-config/pairing-image",
        LONG,
        edit(
            "docker.io/nearaidev/sglang@sha256:47aff791090003a37f893e998c44794c410d3f7bdfc7fdd2dfab5eb5592b30bb\n    container_name: model-sg-glm53-w4afp8-tp4-r2",
            "docker.io/nearaidev/sglang@sha256:"
            + "0" * 63
            + "1\n    container_name: model-sg-glm53-w4afp8-tp4-r2",
        ),
        138,
        5,
        "model-sg-glm53-w4afp8-tp4-r2 sets SGLANG_DSA_INDEXER_QSPLIT=1 on an image not known to carry the split patch; allowed: docker.io/nearaidev/sglang@sha256:47aff791090003a37f893e998c44794c410d3f7bdfc7fdd2dfab5eb5592b30bb",
    ),
    Guard(
        "prod-config/parity",
        LONG,
        edit("    shm_size: 32gb\n", "    shm_size: 16gb\n", 2),
        147,
        5,
        (
            "replica parity: model-sg-glm53-w4afp8-tp4-r2 shm_size is 16gb, model-sg-glm53-w4afp8-tp4-r1 has 32gb;"
            " replicas differ only in container_name, deploy.resources.reservations.devices.*.device_ids,"
            " label tierops.otel.job, label tierops.otel.container_name, label tierops.otel.config_variant,"
            " label tierops.otel.instance and declared argv/env"
        ),
    ),
    Guard(
        "prod-config/proxy",
        LONG,
        edit(",http://model-sg-glm53-w4afp8-tp4-r2:8000", ""),
        253,
        7,
        "proxy-glm53 VLLM_BACKEND_URLS lacks http://model-sg-glm53-w4afp8-tp4-r2:8000; expected http://model-sg-glm53-w4afp8-tp4-r1:8000,http://model-sg-glm53-w4afp8-tp4-r2:8000",
    ),
    Guard(
        "prod-config/downloader",
        LONG,
        edit(
            "      - --revision\n      - 99f1fa70408c52b007d4fd69e02e5a522422e755\n",
            "      - --revision\n      - main\n",
        ),
        12,
        5,
        "model-downloader runs 'hf download graphistry/GLM-5.3-Flash-W4AFP8 --revision main'; the contract says 'hf download graphistry/GLM-5.3-Flash-W4AFP8 --revision 99f1fa70408c52b007d4fd69e02e5a522422e755' (the pinned snapshot) (validators/contracts/glm53.yaml: downloader.argv)",
    ),
    Guard(
        "prod-config/nginx",
        BASE,
        edit('      - "8444:443"\n', '      - "8445:443"\n'),
        267,
        5,
        "nginx publishes ['8000:8000', '8445:443']; the contract for GLM-5.3-Flash-SGL-TP4-W4AFP8 says ['8000:8000', '8444:443'] (validators/contracts/glm53.yaml: files.GLM-5.3-Flash-SGL-TP4-W4AFP8)",
    ),
    Guard(
        "prod-config/registrar",
        LONG,
        edit("${LONG_TIER_ONLY:-true}", "${LONG_TIER_ONLY:-false}"),
        319,
        7,
        "model-proxy-registrar env LONG_TIER_ONLY must be '${LONG_TIER_ONLY:-true}' in GLM-5.3-Flash-SGL-TP4-W4AFP8-LongContext",
    ),
    # -- engine-flags --------------------------------------------------------------------
    Guard(
        "engine-flags/flags",
        LONG,
        edit(_item("--enable-metrics"), _item("--enable-turbo-mode") + _item("--enable-metrics"), 1),
        80,
        9,
        "model-sg-glm53-w4afp8-tp4-r1 flag --enable-turbo-mode does not exist in sglang 0.5.16 (build fc91d24) and is not a declared patch flag (validators/contracts/engine-build.yaml)",
    ),
    # A float flag's value that is no float ("float flag values").
    Guard(
        "engine-flags/values",
        LONG,
        edit(
            _item("--enable-dynamic-batch-tokenizer"),
            _item("--enable-dynamic-batch-tokenizer")
            + _item("--dynamic-batch-tokenizer-batch-timeout")
            + _item("fast"),
            1,
        ),
        91,
        9,
        "model-sg-glm53-w4afp8-tp4-r1 flag --dynamic-batch-tokenizer-batch-timeout value 'fast' is not a number",
    ),
    Guard(
        "engine-flags/choices",
        LONG,
        edit(_item("page_first_direct"), _item("page_sideways"), 1),
        88,
        9,
        "model-sg-glm53-w4afp8-tp4-r1 flag --hicache-mem-layout value 'page_sideways' is not one of: layer_first, page_first, page_first_direct, page_first_kv_split, page_head",
    ),
    Guard(
        "engine-flags/conflicts",
        LONG,
        edit(
            _item("--enable-dynamic-batch-tokenizer"),
            _item("--enable-dynamic-batch-tokenizer") + _item("--enable-tokenizer-batch-encode"),
            1,
        ),
        90,
        9,
        "model-sg-glm53-w4afp8-tp4-r1 sets --enable-dynamic-batch-tokenizer and --enable-tokenizer-batch-encode: the engine raises ValueError at startup when both are set; drop --enable-tokenizer-batch-encode",
    ),
    # -- otel-labels ---------------------------------------------------------------------
    Guard(
        "otel-labels/label-block",
        LONG,
        edit("      tierops.otel.path: /metrics\n", "      tierops.otel.path: /stats\n", 1),
        125,
        7,
        "model-sg-glm53-w4afp8-tp4-r1 label tierops.otel.path is '/stats'; expected '/metrics'",
    ),
    Guard(
        "otel-labels/jobs",
        LONG,
        edit("                scrape_interval: 15s\n", "                scrape_interval: 30s\n", 1),
        497,
        17,
        "scrape job model-sg-glm53-w4afp8-tp4-r1 scrape_interval is 30s; expected 15s",
    ),
    Guard(
        "otel-labels/extra-label",
        LONG,
        edit(
            "                      container_name: model-sg-glm53-w4afp8-tp4-r1\n",
            "                      container_name: model-sg-glm53-w4afp8-tp4-r1\n                      rack: b7\n",
        ),
        505,
        23,
        "scrape job model-sg-glm53-w4afp8-tp4-r1 label 'rack' has no model-sg-glm53-w4afp8-tp4-r1 label behind it",
    ),
    Guard(
        "otel-labels/collector-env",
        LONG,
        edit("      CVM_NAME: ${CVM_NAME:-", "      CVM_NAME: ${CVM_NAME:?"),
        382,
        7,
        "otelcol-contrib env CVM_NAME must be a soft default ${CVM_NAME:-default}, not '${CVM_NAME:?unknown}'; the collector must start without it",
    ),
    Guard(
        "otel-labels/exporter",
        LONG,
        edit("num_consumers: 1", "num_consumers: 2"),
        582,
        13,
        "exporter otlphttp/gateway sending_queue.num_consumers is 2; it must be 1 (cumulative metrics must arrive in order)",
    ),
    # -- dcgm-metrics --------------------------------------------------------------------
    Guard(
        "dcgm-metrics/second-exporter",
        LONG,
        _second_dcgm,
        372,
        3,
        "dcgm-glm53-b is a second DCGM exporter; exactly one per host (it sees all GPUs)",
    ),
    Guard(
        "dcgm-metrics/digest",
        LONG,
        edit(
            "dcgm-exporter:4.5.3-4.8.2-distroless@sha256:e9030b4fca0c8f110032f3b151b030e7e9db56604b407cf79631e1a3218b35e0",
            "dcgm-exporter:4.5.3-4.8.2-distroless",
        ),
        333,
        5,
        "dcgm-glm53 image is not pinned by digest",
    ),
    Guard(
        "dcgm-metrics/gpus",
        LONG,
        edit(
            '                - "6"\n                - "7"\n              capabilities:',
            '                - "6"\n              capabilities:',
            2,
        ),
        348,
        15,
        "dcgm-glm53 does not see GPUs ['7'] that model-sg-glm53-w4afp8-tp4-r2 uses",
    ),
    Guard(
        "dcgm-metrics/csv",
        LONG,
        edit("DCGM_FI_DEV_GPU_UTIL, gauge", "DCGM_FI_DEV_GPU_UTILISATION, gauge"),
        470,
        5,
        "DCGM counters lack the required field DCGM_FI_DEV_GPU_UTIL",
    ),
    # `_csv` holds several checks; each branch gets its fault (a mutmut run on
    # dcgm_metrics.py showed the others could be deleted with only one guarded).
    Guard(
        "dcgm-metrics/csv",
        LONG,
        edit("DCGM_FI_DEV_GPU_TEMP, gauge", "DCGM_FI_DEV_GPU_TEMP, histogram"),
        479,
        7,
        "DCGM field DCGM_FI_DEV_GPU_TEMP type 'histogram' is not one of gauge, counter, label",
    ),
    Guard(
        "dcgm-metrics/csv",
        LONG,
        edit("      DCGM_FI_DEV_FB_FREE, gauge", "      dcgm_fi_dev_fb_free, gauge"),
        476,
        7,
        "DCGM field 'dcgm_fi_dev_fb_free' does not match ^DCGM_(FI|EXP)_[A-Z0-9_]+$",
    ),
    Guard(
        "dcgm-metrics/csv",
        LONG,
        edit(
            "command: [-f, /etc/dcgm-exporter/glm53-counters.csv]",
            "command: [-f, /etc/dcgm-exporter/other.csv]",
        ),
        339,
        5,
        "dcgm-glm53 reads /etc/dcgm-exporter/other.csv but no config is mounted there",
    ),
    Guard(
        "dcgm-metrics/csv",
        LONG,
        edit(
            "command: [-f, /etc/dcgm-exporter/glm53-counters.csv]",
            "command: [--collectors, /etc/dcgm-exporter/glm53-counters.csv]",
        ),
        338,
        5,
        "dcgm-glm53 command must be [-f, <counters csv path>], not ['--collectors', '/etc/dcgm-exporter/glm53-counters.csv']",
    ),
    Guard(
        "dcgm-metrics/csv",
        LONG,
        edit(
            "  dcgm_counters:\n    content: |\n",
            "  dcgm_counters:\n    file: ./glm53-counters.csv\n    x-content: |\n",
        ),
        340,
        9,
        "dcgm-glm53 mounts config dcgm_counters, which has no inline content",
    ),
    Guard(
        "dcgm-metrics/sys-admin",
        LONG,
        edit("    cap_add:\n      - SYS_ADMIN\n", "    cap_add:\n      - NET_ADMIN\n"),
        336,
        5,
        "dcgm-glm53 lacks cap_add SYS_ADMIN, which the active DCGM_FI_PROF_* fields need (they would read as zero)",
    ),
    Guard(
        "dcgm-metrics/sys-admin",
        LONG,
        edit("    cap_add:\n      - SYS_ADMIN\n", ""),
        332,
        3,
        "dcgm-glm53 lacks cap_add SYS_ADMIN, which the active DCGM_FI_PROF_* fields need (they would read as zero)",
    ),
    Guard(
        "dcgm-metrics/scrape",
        LONG,
        edit(
            "              - job_name: dcgm-glm53\n                scrape_interval: 15s\n",
            "              - job_name: dcgm-glm53\n                scrape_interval: 20s\n",
        ),
        545,
        17,
        "DCGM scrape job scrape_interval is 20s; expected 15s",
    ),
    # -- compose-hygiene -------------------------------------------------------------------
    Guard(
        "compose-hygiene/services-mapping",
        LONG,
        lambda text: text.replace("\nservices:\n", "\nservices: []\nold_services:\n", 1),
        6,
        1,
        "no `services:` mapping; a compose file needs one",
    ),
    # `devices: [5, ...]`: the wrong type is a finding of its own.
    Guard(
        "compose-hygiene/shape",
        LONG,
        edit(
            "          devices:\n            - driver: nvidia\n",
            "          devices:\n            - 5\n            - driver: nvidia\n",
            1,
        ),
        103,
        15,
        "model-sg-glm53-w4afp8-tp4-r1 deploy.resources.reservations.devices[0] must be a mapping",
    ),
    # Compose refuses these; the model keeps them as written (found by the mutation sweep).
    Guard(
        "compose-hygiene/compose-types",
        LONG,
        edit("      interval: 30s\n", "      interval: 30\n", 1),
        328,
        7,
        "model-proxy-registrar healthcheck.interval must be a duration string such as 30s",
    ),
    Guard(
        "compose-hygiene/container-name",
        LONG,
        edit("    container_name: nginx\n", "    container_name: nginx-front\n"),
        285,
        5,
        "container_name 'nginx-front' differs from the service key 'nginx'; other services reach it by the key",
    ),
    Guard(
        "compose-hygiene/image-digest",
        LONG,
        edit("docker.io/library/nginx:1.27-alpine@sha256:", "docker.io/library/nginx:1.27-alpine@sha256:X"),
        284,
        5,
        "nginx image digest is malformed; expected @sha256: and 64 lowercase hex",
    ),
    Guard(
        "compose-hygiene/no-build",
        LONG,
        edit("    container_name: nginx\n", "    container_name: nginx\n    build: .\n"),
        286,
        5,
        "nginx has `build:`; production runs pinned images only, or declare the exception with `x-build-reason: <why it is built on the host>`",
    ),
    Guard(
        "compose-hygiene/secrets-env",
        LONG,
        edit(
            "${PROXY_API_TOKEN:?PROXY_API_TOKEN is required (the proxy refuses unauthenticated calls)}",
            "${PROXY_API_TOKEN:-changeme}",
        ),
        258,
        7,
        "proxy-glm53 env PROXY_API_TOKEN names a secret and has a soft default for ${PROXY_API_TOKEN}, a literal secret whenever the host lacks it; write ${PROXY_API_TOKEN:?PROXY_API_TOKEN is required}",
    ),
    Guard(
        "compose-hygiene/secrets-labels",
        LONG,
        edit(
            '      tierops.otel.scrape: "true"\n',
            f'      tierops.auth_token: {PASSWORD}\n      tierops.otel.scrape: "true"\n',
            1,
        ),
        122,
        7,
        "model-sg-glm53-w4afp8-tp4-r1 label tierops.auth_token names a secret and holds a literal value; pass it from the host: ${VAR:?VAR is required}",
    ),
    Guard(
        "compose-hygiene/secrets-argv",
        LONG,
        edit(
            'test: [CMD, curl, -fsS, --max-time, "3", "http://localhost:8000/health"]',
            f'test: [CMD, curl, -fsS, -H, "Authorization: Bearer {PASSWORD}", "http://localhost:8000/health"]',
            3,
        ),
        267,
        35,
        "proxy-glm53 healthcheck test word 5 carries an Authorization credential; pass it from the host env",
    ),
    Guard(
        "compose-hygiene/empty-word",
        LONG,
        edit("      - --revision\n", "      - ${DL_VERBOSE:+--verbose}\n      - --revision\n"),
        15,
        9,
        "model-downloader command item '${DL_VERBOSE:+--verbose}' is an empty argument when DL_VERBOSE is unset (a list keeps it, and the program refuses ''); write the command as one string, where Compose drops an empty word",
    ),
    Guard(
        "compose-hygiene/secrets-configs",
        LONG,
        edit("Bearer $${env:MONITORING_INGEST_TOKEN}", f"Bearer {PASSWORD}"),
        579,
        13,
        "configs.otelcol_app_config.content exporters.otlphttp/gateway.headers.Authorization names a secret and holds a literal value; write $${env:VAR} and set VAR in the collector's environment",
    ),
    Guard(
        "compose-hygiene/yaml-tricks",
        LONG,
        edits(
            edit(
                "    ulimits:\n      memlock: -1\n      stack: 67108864\n",
                "    ulimits: &ulimits\n      memlock: -1\n      stack: 67108864\n",
                1,
            ),
            edit("    ulimits:\n      memlock: -1\n      stack: 67108864\n", "    ulimits: *ulimits\n", 1),
        ),
        32,
        14,
        "YAML anchor in a generated file; the generator must write every value out",
    ),
    # -- collector-config ------------------------------------------------------------------
    # `static_configs: 5` (exit 3 with a TypeError).
    Guard(
        "collector-config/scrape-shape",
        LONG,
        edit(
            "                static_configs:\n                  - targets:\n                      - dcgm-glm53:9400\n",
            "                static_configs: 5\n                old_static_configs:\n                  - targets:\n                      - dcgm-glm53:9400\n",
        ),
        548,
        17,
        "scrape job dcgm-glm53 static_configs must be a list of {targets, labels} mappings",
    ),
    Guard(
        "collector-config/component-shape",
        LONG,
        edit("        batch:\n          timeout: 10s\n", "        batch: 5\n"),
        573,
        9,
        "processor batch must be a mapping (or empty for its defaults)",
    ),
    Guard(
        "collector-config/pipelines",
        LONG,
        edit("exporters: [otlphttp/gateway]", "exporters: [otlphttp/backup]"),
        591,
        25,
        "pipeline metrics uses exporter otlphttp/backup, which is not defined under exporters",
    ),
    Guard(
        "collector-config/unescaped",
        LONG,
        edit("value: $${env:ENV}", "value: ${env:ENV}"),
        571,
        22,
        "collector config writes ${env:...} with one $; compose would interpolate it: write $${env:...}",
    ),
    Guard(
        "collector-config/env-refs",
        LONG,
        edit("$${env:ENV}", "$${env:DEPLOY_ENV}"),
        571,
        22,
        "collector config reads ${env:DEPLOY_ENV}, but otelcol-contrib has no DEPLOY_ENV in its environment",
    ),
    # -- style ----------------------------------------------------------------------------
    Guard(
        "style/labels-form",
        LONG,
        edit("    container_name: nginx\n", "    container_name: nginx\n    labels:\n      - team=edge\n"),
        286,
        5,
        "style only: nginx labels are a list; write them as a mapping, as the telemetry contract does. Compose reads both the same",
    ),
    Guard(
        "style/command-form",
        LONG,
        _command_as_string,
        39,
        5,
        "style only: model-sg-glm53-w4afp8-tp4-r1 command is a string; write it as a list, one word per item, so a diff shows each flag",
    ),
    Guard(
        "gpu-sharing/undeclared",
        PACK,
        edit("    x-gpu-share: two 0.6B", "    x-gpu-shares: two 0.6B"),
        269,
        19,
        "model-vllm-qwen3-embedding-0.6b GPU 0 is also reserved by model-vllm-qwen3-reranker-0.6b; give each its own GPU, or declare the sharing on every service of GPU 0 (`x-gpu-share: <why>`)",
        PACK_DIR,
    ),
    Guard(
        "gpu-sharing/memory",
        PACK,
        edit(
            '      - --gpu-memory-utilization\n      - "0.15"\n',
            '      - --gpu-memory-utilization\n      - "0.95"\n',
        ),
        395,
        19,
        "the engines on GPU 0 ask for 1.10 of its memory (model-vllm-qwen3-embedding-0.6b 0.95, model-vllm-qwen3-reranker-0.6b 0.15); lower their shares to 1.0 in all",
        PACK_DIR,
    ),
    Guard(
        "engine-flags/requires",
        PACK,
        edit("      - --tool-call-parser\n      - qwen3_coder\n", ""),
        54,
        9,
        'model-vllm-qwen36-35b-a3b-fp8-tp1-r1 sets --enable-auto-tool-choice without --tool-call-parser: vLLM exits at startup ("--enable-auto-tool-choice requires --tool-call-parser"); name the model\'s parser',
        PACK_DIR,
    ),
]
