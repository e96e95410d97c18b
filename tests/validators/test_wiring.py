"""Rule `wiring`: one realistic fault per check, planted in a copy of a prod file.

Each case edits a committed prod file as text (every other byte kept), runs the CLI
in-process on that one rule, and asserts the exact set of wiring findings: the rule
id, the service or subject the message names, and the line:col of the faulty value.
So each check is the only wiring check that fires on its fault, and deleting a check
fails its case.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FLEET
from tests.validators.conftest import BASE, CANARY, LONG, PROD, prod_text, run_cli
from tierops.yamlload import load_path
from validators.rules import wiring
from validators.rules.wiring import CHECKS, checks, load_wiring, parse_nginx

R1 = "model-sg-glm53-w4afp8-tp4-r1"
R2 = "model-sg-glm53-w4afp8-tp4-r2"
SNAPSHOT = "99f1fa70408c52b007d4fd69e02e5a522422e755"
OTHER_SHA = "0123456789abcdef0123456789abcdef01234567"


def pos_of(text: str, needle: str, nth: int = 1) -> tuple[int, int]:
    """1-based line and column of the nth occurrence of `needle`."""
    start = -1
    for _ in range(nth):
        start = text.find(needle, start + 1)
        if start < 0:
            raise AssertionError(f"not found (occurrence {nth}): {needle!r}")
    line = text.count("\n", 0, start) + 1
    return line, start - (text.rfind("\n", 0, start) + 1) + 1


def mutate(name: str, edits: tuple[tuple[str, str, int], ...]) -> str:
    text = prod_text(name)
    for old, new, nth in edits:
        start = -1
        for _ in range(nth):
            start = text.find(old, start + 1)
            if start < 0:
                raise AssertionError(f"mutation anchor not found (occurrence {nth}): {old!r}")
        text = text[:start] + new + text[start + len(old) :]
    return text


def wiring_findings(path: Path) -> list[dict[str, Any]]:
    result = run_cli("--rule", "wiring", "--format", "json", path)
    assert "Traceback" not in result.err
    rows = result.findings()
    assert all(row["rule"] == "wiring" for row in rows)
    assert result.code == (1 if rows else 0), result.err
    return rows


@dataclass(frozen=True)
class Fault:
    id: str
    check: str  # the CHECKS entry this fault exercises
    file: str
    edits: tuple[tuple[str, str, int], ...]  # (old, new, occurrence)
    # Each expected finding: (subject named first in the message, needle in the mutated
    # file whose start is the finding's line:col, occurrence of the needle).
    expect: tuple[tuple[str, str, int], ...]
    words: str = ""  # a phrase every expected message carries (which check fired)


def edit(old: str, new: str, nth: int = 1) -> tuple[str, str, int]:
    return (old, new, nth)


NGINX_HEALTH = """    healthcheck:
      test: [CMD, wget, -q, -O, /dev/null, "http://127.0.0.1:8000/nginx-health"]
      interval: 10s
      timeout: 5s
      retries: 3
      start_period: 10s
"""

PROXY_HEALTH = """    healthcheck:
      test: [CMD, curl, -fsS, --max-time, "3", "http://localhost:8000/health"]
      interval: 10s
      timeout: 5s
      retries: 3
      start_period: 30s
"""

FAULTS = [
    # -- listen: who listens where ------------------------------------------------------
    Fault(
        "proxy-declares-no-listen-address",
        "listen",
        BASE,
        (edit('      LISTEN_ADDR: "0.0.0.0:8000"\n', ""),),
        (("proxy-glm53", "environment:\n      MODEL_NAME", 1),),
        "declares no listen address",
    ),
    Fault(
        "engine-listens-on-loopback",
        "reference",
        LONG,
        (edit('      - --host\n      - "0.0.0.0"', '      - --host\n      - "127.0.0.1"', 2),),
        (
            ("proxy-glm53", f"http://{R2}:8000", 1),
            ("otelcol-contrib", f"{R2}:8000", 2),
        ),
        "which only model-sg-glm53-w4afp8-tp4-r2 itself can reach",
    ),
    Fault(
        "engine-drops-host-flag",
        "reference",
        BASE,
        (edit('      - --host\n      - "0.0.0.0"\n', "", 1),),
        (
            ("proxy-glm53", f"http://{R1}:8000", 1),
            ("otelcol-contrib", f"{R1}:8000", 2),
        ),
        # without --host SGLang listens on 127.0.0.1 only
        "itself can reach",
    ),
    Fault(
        "proxy-listens-elsewhere-than-nginx-sends",
        "reference",
        BASE,
        (edit('LISTEN_ADDR: "0.0.0.0:8000"', 'LISTEN_ADDR: "0.0.0.0:8080"'),),
        (
            ("nginx", "proxy-glm53:8000;", 1),
            ("otelcol-contrib", "proxy-glm53:8000\n", 1),
            ("proxy-glm53", "http://localhost:8000/health", 3),
            (
                "proxy-glm53",
                '"8000"\n      tierops.otel.path: /metrics\n      tierops.otel.container_name: proxy-glm53',
                1,
            ),
        ),
        "8080",
    ),
    Fault(
        "proxy-listen-address-without-a-port",
        "listen",
        BASE,
        (edit('LISTEN_ADDR: "0.0.0.0:8000"', 'LISTEN_ADDR: "0.0.0.0"'),),
        (("proxy-glm53", '"0.0.0.0"\n    volumes', 1),),
        "LISTEN_ADDR '0.0.0.0' is not [host]:port",
    ),
    Fault(
        "telemetry-port-label-names-another-port",
        "reference",
        BASE,
        (edit('tierops.otel.port: "9400"', 'tierops.otel.port: "9401"'),),
        (("dcgm-glm53", '"9401"', 1),),
        "label tierops.otel.port=9401 points at its own port 9401, but dcgm-glm53 listens on 9400",
    ),
    Fault(
        "dcgm-moved-off-9400",
        "reference",
        BASE,
        (
            edit(
                "command: [-f, /etc/dcgm-exporter/glm53-counters.csv]",
                'command: [-a, ":9500", -f, /etc/dcgm-exporter/glm53-counters.csv]',
            ),
        ),
        (
            ("otelcol-contrib", "dcgm-glm53:9400", 1),
            ("dcgm-glm53", '"9400"\n      tierops.otel.path', 1),
        ),
        "dcgm-glm53 listens on 9500",
    ),
    # -- published ports -------------------------------------------------------------------
    Fault(
        "nginx-listen-no-longer-serves-a-published-port",
        "published-port",
        LONG,
        (edit("listen 443 ssl;", "listen 4443 ssl;"),),
        (("nginx", '"8444:443"', 1),),
        "to container port 443, but nginx listens on 4443, 8000, 8001",
    ),
    Fault(
        "host-port-published-twice-in-one-file",
        "published-port",
        BASE,
        (edit("    cap_add:\n", '    ports:\n      - "8000:9400"\n    cap_add:\n'),),
        (("dcgm-glm53", '"8000:9400"', 1),),
        "which nginx already publishes",
    ),
    # -- references ---------------------------------------------------------------------------
    Fault(
        "nginx-upstream-names-no-service",
        "reference",
        BASE,
        (edit("server proxy-glm53:8000;", "server proxy-glm35:8000;"),),
        (("nginx", "proxy-glm35:8000", 1),),
        "names proxy-glm35, which is no service of this file",
    ),
    Fault(
        "nginx-upstream-wrong-port",
        "reference",
        BASE,
        (edit("server proxy-glm53:8000;", "server proxy-glm53:8080;"),),
        (("nginx", "proxy-glm53:8080", 1),),
        "proxy-glm53 listens on 8000, not 8080",
    ),
    Fault(
        "nginx-upstream-bypasses-the-proxy",
        "reference",
        BASE,
        (edit("server proxy-glm53:8000;", f"server {R1}:8000;"),),
        (("nginx", f"{R1}:8000;", 1),),
        "nginx may only reach proxy-glm53",
    ),
    Fault(
        "nginx-proxy-pass-wrong-port",
        "reference",
        BASE,
        (edit("proxy_pass http://glm53_proxy;", "proxy_pass http://proxy-glm53:9000;"),),
        (("nginx", "http://proxy-glm53:9000", 1),),
        "proxy-glm53 listens on 8000, not 9000",
    ),
    Fault(
        "proxy-backend-url-wrong-port",
        "reference",
        LONG,
        (edit(f"http://{R2}:8000", f"http://{R2}:8001"),),
        (("proxy-glm53", f"http://{R2}:8001", 1),),
        f"{R2} listens on 8000, not 8001",
    ),
    Fault(
        "scrape-target-wrong-port",
        "reference",
        BASE,
        (edit("- dcgm-glm53:9400", "- dcgm-glm53:9401"),),
        (("otelcol-contrib", "dcgm-glm53:9401", 1),),
        "dcgm-glm53 listens on 9400, not 9401",
    ),
    Fault(
        "registrar-endpoint-on-an-unpublished-port",
        "reference",
        BASE,
        (edit("https://${CVM_HOST}:8444/v1", "https://${CVM_HOST}:8443/v1"),),
        (("model-proxy-registrar", "https://${CVM_HOST}:8443", 1),),
        "no service of this file publishes host port 8443",
    ),
    Fault(
        "registrar-endpoint-https-on-the-plain-port",
        "reference",
        BASE,
        (edit("https://${CVM_HOST}:8444/v1", "https://${CVM_HOST}:8000/v1"),),
        (("model-proxy-registrar", "https://${CVM_HOST}:8000", 1),),
        "does not speak TLS",
    ),
    Fault(
        "engine-healthcheck-probes-another-port",
        "reference",
        BASE,
        (edit("http://localhost:8000/health", "http://localhost:30000/health", 1),),
        (("model-sg-glm53-w4afp8-tp4-r1", "http://localhost:30000/health", 1),),
        "points at its own port 30000",
    ),
    Fault(
        "engine-off-the-project-network",
        "reference",
        LONG,
        (edit("    networks:\n      - glm53\n", "    networks:\n      - default\n", 3),),
        (
            ("proxy-glm53", f"http://{R2}:8000", 1),
            ("otelcol-contrib", f"{R2}:8000", 2),
        ),
        "shares no network",
    ),
    # -- storage ------------------------------------------------------------------------------
    Fault(
        "engine-mounts-the-cache-elsewhere",
        "model-volume",
        BASE,
        (edit("- huggingface_cache:/root/.cache/huggingface", "- huggingface_cache:/models", 2),),
        (
            (
                "model-sg-glm53-w4afp8-tp4-r1",
                f"/root/.cache/huggingface/hub/models--graphistry--GLM-5.3-Flash-W4AFP8/snapshots/{SNAPSHOT}",
                1,
            ),
        ),
        "lies under no mount of a named volume",
    ),
    Fault(
        "downloader-writes-outside-the-volume",
        "model-volume",
        BASE,
        (edit("- huggingface_cache:/root/.cache/huggingface", "- huggingface_cache:/data", 1),),
        (("model-downloader", "huggingface_cache:/data", 1),),
        "which lies under no named volume",
    ),
    Fault(
        "downloader-writes-into-another-volume",
        "model-volume",
        BASE,
        (
            edit(
                "- huggingface_cache:/root/.cache/huggingface", "- hf_downloads:/root/.cache/huggingface", 1
            ),
            edit(
                "volumes:\n  huggingface_cache: {}\n",
                "volumes:\n  huggingface_cache: {}\n  hf_downloads: {}\n",
            ),
        ),
        (("model-downloader", "hf_downloads:/root/.cache/huggingface", 1),),
        "writes into volume hf_downloads; the engines read the model from huggingface_cache",
    ),
    Fault(
        "downloader-hf-home-moves-the-cache",
        "model-volume",
        BASE,
        (
            edit(
                "      HF_TOKEN: ${HUGGING_FACE_HUB_TOKEN}\n    volumes:",
                "      HF_TOKEN: ${HUGGING_FACE_HUB_TOKEN}\n      HF_HOME: /tmp/hf\n    volumes:",
            ),
        ),
        (("model-downloader", "/tmp/hf", 1),),
        "writes the snapshot to /tmp/hf/hub/",
    ),
    Fault(
        "downloader-mounts-the-volume-at-another-path",
        "model-volume",
        BASE,
        (
            edit(
                "- huggingface_cache:/root/.cache/huggingface",
                "- huggingface_cache:/root/.cache/huggingface/hub",
                1,
            ),
        ),
        (("model-downloader", "huggingface_cache:/root/.cache/huggingface/hub", 1),),
        "writes the snapshot to huggingface_cache:/models--",
    ),
    Fault(
        "downloader-fetches-another-revision",
        "snapshot",
        BASE,
        (edit(f"      - {SNAPSHOT}\n", f"      - {OTHER_SHA}\n", 1),),
        (("model-downloader", OTHER_SHA, 1),),
        f"downloads revision {OTHER_SHA}",
    ),
    Fault(
        "downloader-fetches-another-repo",
        "snapshot",
        BASE,
        (edit("      - graphistry/GLM-5.3-Flash-W4AFP8\n", "      - graphistry/GLM-5.3-Flash-FP8\n", 1),),
        (("model-downloader", "graphistry/GLM-5.3-Flash-FP8", 1),),
        "downloads graphistry/GLM-5.3-Flash-FP8",
    ),
    Fault(
        "downloader-loses-its-token",
        "download-token",
        BASE,
        (
            edit(
                "    environment:\n      HF_TOKEN: ${HUGGING_FACE_HUB_TOKEN}\n    volumes:", "    volumes:", 1
            ),
        ),
        (("model-downloader", "model-downloader:", 1),),
        "lost its token env HF_TOKEN",
    ),
    Fault(
        "config-mount-names-no-config",
        "mount-source",
        BASE,
        (edit("- source: nginx_conf", "- source: nginx_config"),),
        (("nginx", "source: nginx_config", 1),),
        "mounts config nginx_config, which is not defined",
    ),
    # -- runtime ------------------------------------------------------------------------------
    Fault(
        "engine-entrypoint-override",
        "entrypoint",
        BASE,
        (edit("    init: true\n", "    init: true\n    entrypoint: [/bin/sh, -c]\n", 2),),
        (("model-sg-glm53-w4afp8-tp4-r2", "[/bin/sh, -c]", 1),),
        "overrides the image's entrypoint with [/bin/sh, -c]",
    ),
    Fault(
        "engine-on-the-host-network",
        "network-mode",
        BASE,
        (edit("    networks:\n      - glm53\n", "    network_mode: host\n", 2),),
        (("model-sg-glm53-w4afp8-tp4-r1", "host\n    healthcheck", 1),),
        "network_mode: host",
    ),
    Fault(
        "exporter-privileged",
        "privileged",
        BASE,
        (edit("    cap_add:\n", "    privileged: true\n    cap_add:\n"),),
        (("dcgm-glm53", "true\n    cap_add", 1),),
        "is privileged",
    ),
    Fault(
        "engine-env-file",
        "env-file",
        BASE,
        (edit("    init: true\n", "    init: true\n    env_file: engine.env\n", 1),),
        (("model-sg-glm53-w4afp8-tp4-r1", "engine.env", 1),),
        "bypasses the engine env contract",
    ),
    Fault(
        "proxy-healthcheck-removed",
        "healthcheck",
        BASE,
        (edit(PROXY_HEALTH, "", 1),),
        (("proxy-glm53", "proxy-glm53:\n", 1),),
        "runs without a healthcheck",
    ),
    Fault(
        "nginx-healthcheck-removed",
        "healthcheck",
        LONG,
        (edit(NGINX_HEALTH, "", 1),),
        (("nginx", "nginx:\n    image:", 1),),
        "runs without a healthcheck",
    ),
    Fault(
        "nginx-healthcheck-probes-another-port",
        "reference",
        CANARY,
        (edit("http://127.0.0.1:8000/nginx-health", "http://127.0.0.1:8009/nginx-health", 1),),
        (("nginx", "http://127.0.0.1:8009", 1),),
        "points at its own port 8009",
    ),
    Fault(
        "engine-start-period-too-short",
        "start-period",
        LONG,
        (edit("start_period: 40m", "start_period: 10m", 2),),
        (("model-sg-glm53-w4afp8-tp4-r2", "10m", 1),),
        "start_period is 10m; the contract says at least 40m",
    ),
]


@pytest.mark.parametrize("fault", FAULTS, ids=[fault.id for fault in FAULTS])
def test_each_planted_fault_fires_its_wiring_check_alone(fault: Fault, write_prod: Any) -> None:
    text = mutate(fault.file, fault.edits)
    rows = wiring_findings(write_prod(fault.file, text))
    got = sorted((row["line"], row["col"], row["message"].split(" ", 1)[0]) for row in rows)
    want = sorted((*pos_of(text, needle, nth), subject) for subject, needle, nth in fault.expect)
    assert got == want, "\n".join(row["message"] for row in rows)
    for row in rows:
        assert fault.words in row["message"]
        assert "; " in row["message"]  # every message ends with its fix


@pytest.mark.parametrize("fault", FAULTS, ids=[fault.id for fault in FAULTS])
def test_each_planted_fault_is_found_by_its_declared_check_only(
    fault: Fault, write_prod: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Which CHECKS entry produced each finding: so disabling that one check would leave
    # its fault unreported (the other checks do not cover it).
    fired: list[str] = []
    real = checks.finding

    def spy(compose: Any, pos: Any, check_name: str, message: str, fix: str | None = None) -> Any:
        fired.append(check_name)
        return real(compose, pos, check_name, message, fix)

    monkeypatch.setattr(checks, "finding", spy)
    wiring_findings(write_prod(fault.file, mutate(fault.file, fault.edits)))
    assert fired and set(fired) == {fault.check}


def test_the_findings_carry_the_id_the_registry_knows() -> None:
    # The package's parts make findings under checks.RULE; the registry reads wiring.ID.
    assert checks.RULE == wiring.ID == "wiring"


def test_every_check_has_a_planted_fault() -> None:
    # host-port: test_co_hosted_files_with_two_projects_collide_on_host_ports (two files).
    assert {fault.check for fault in FAULTS} | {"host-port"} == set(CHECKS)


# -- clean files and spellings ----------------------------------------------------------------


@pytest.mark.parametrize("name", [BASE, CANARY, LONG])
def test_clean_prod_files_give_no_wiring_findings(name: str) -> None:
    assert wiring_findings(PROD / name) == []


SPELLINGS = [
    (
        "long-syntax-ports",
        LONG,
        edit(
            '      - "8000:8000"\n      - "8444:443"\n      - "8001:8001"\n',
            '      - target: 8000\n        published: "8000"\n'
            "      - {target: 443, published: 8444, protocol: tcp}\n"
            "      - 8001:8001/tcp\n",
        ),
    ),
    (
        "networks-as-mapping",
        BASE,
        edit("    networks:\n      - glm53\n", "    networks:\n      glm53: {}\n", 2),
    ),
    (
        "long-syntax-cache-volume",
        BASE,
        edit(
            "      - huggingface_cache:/root/.cache/huggingface\n",
            "      - type: volume\n        source: huggingface_cache\n        target: /root/.cache/huggingface/\n",
            2,
        ),
    ),
    (
        "healthcheck-as-a-shell-string",
        BASE,
        edit(
            'test: [CMD, curl, -fsS, --max-time, "3", "http://localhost:8000/health"]',
            "test: curl -fsS --max-time 3 http://localhost:8000/health",
            1,
        ),
    ),
    ("listen-addr-as-a-list-item", BASE, edit('LISTEN_ADDR: "0.0.0.0:8000"', "LISTEN_ADDR: 0.0.0.0:8000")),
    (
        "dcgm-command-as-a-string",
        BASE,
        edit(
            "command: [-f, /etc/dcgm-exporter/glm53-counters.csv]",
            "command: -f /etc/dcgm-exporter/glm53-counters.csv",
        ),
    ),
    ("start-period-in-seconds", BASE, edit("start_period: 40m", "start_period: 2400s", 1)),
    ("quoted-boolean", BASE, edit("    init: true\n", '    init: "true"\n', 1)),
    (
        "engine-argv-with-equals",
        BASE,
        edit('      - --port\n      - "8000"\n', "      - --port=8000\n", 1),
    ),
]


@pytest.mark.parametrize(("case", "name", "change"), SPELLINGS, ids=[case for case, _, _ in SPELLINGS])
def test_spellings_compose_renders_identically_give_no_findings(
    case: str, name: str, change: tuple[str, str, int], write_prod: Any
) -> None:
    assert wiring_findings(write_prod(name, mutate(name, (change,)))) == []


# -- across files on one host ------------------------------------------------------------------


def test_co_hosted_files_with_two_projects_collide_on_host_ports(write_prod: Any) -> None:
    write_prod(BASE, prod_text(BASE))
    text = mutate(CANARY, (edit("name: glm53\n", "name: glm53-canary\n"),))
    rows = wiring_findings(write_prod(CANARY, text))
    got = sorted((row["line"], row["col"]) for row in rows)
    assert got == [pos_of(text, '"8000:8000"'), pos_of(text, '"8444:443"')]
    assert all(f"of {BASE[:-5]} also publishes on gpu03, gpu04, gpu23" in row["message"] for row in rows)


def test_co_hosted_files_of_one_project_replace_each_other(write_prod: Any) -> None:
    write_prod(BASE, prod_text(BASE))
    assert wiring_findings(write_prod(CANARY, prod_text(CANARY))) == []


def test_files_on_different_hosts_may_publish_the_same_ports(write_prod: Any) -> None:
    write_prod(BASE, prod_text(BASE))
    text = mutate(LONG, (edit("name: glm53\n", "name: glm53-long\n"),))
    assert wiring_findings(write_prod(LONG, text)) == []


def test_the_host_grouping_agrees_with_the_generator_targets() -> None:
    targets = load_path(FLEET / "generators" / "glm53.targets.yaml").documents[0]
    hosts = load_wiring().hosts
    assert set(hosts) == set(targets)
    base_hosts: tuple[str, ...] = ()
    for target in targets.values():
        if target["tier"] == "base":
            base_hosts = tuple(target["hosts"])
    for stem, target in targets.items():
        written = tuple(target["hosts"])
        # "any base host": the canary runs on one of the base tier's hosts.
        assert hosts[stem] == (base_hosts if written == ("any base host",) else written), stem


# -- the collector's endpoints and the nginx reader --------------------------------------------

HEALTH_EXTENSION = "      service:\n        extensions: [health_check]\n        pipelines:"
EXTENSIONS = "      extensions:\n        health_check:\n          endpoint: 0.0.0.0:{port}\n      service:\n"
OTELCOL_HEALTH = (
    "    networks:\n      - glm53\n"
    "    healthcheck:\n"
    '      test: [CMD, /healthcheck, "http://localhost:13133/"]\n'
    "volumes:"
)


def _collector_with_health(port: int) -> str:
    return mutate(
        BASE,
        (
            edit(
                "      service:\n        pipelines:",
                EXTENSIONS.format(port=port) + "        extensions: [health_check]\n        pipelines:",
            ),
            edit("    networks:\n      - glm53\nvolumes:", OTELCOL_HEALTH),
        ),
    )


def test_a_collector_health_probe_on_its_extension_endpoint_resolves(write_prod: Any) -> None:
    assert wiring_findings(write_prod(BASE, _collector_with_health(13133))) == []


def test_a_collector_health_probe_off_its_extension_endpoint_is_a_reference_fault(write_prod: Any) -> None:
    text = _collector_with_health(13134)
    rows = wiring_findings(write_prod(BASE, text))
    assert [(row["line"], row["col"]) for row in rows] == [pos_of(text, "http://localhost:13133/")]
    assert "otelcol-contrib listens on 13134" in rows[0]["message"]


def test_nginx_reader_positions_words_and_nests_blocks() -> None:
    text = "upstream u {\n    server a:1; # comment\n}\nserver { listen 443 ssl; location / { proxy_pass 'http://u'; } }\n"
    tree = parse_nginx(text)
    upstream, server = tree
    assert (upstream.name, upstream.args[0][0]) == ("upstream", "u")
    assert upstream.block is not None and upstream.block[0].args[0] == ("a:1", (2, 12))
    assert server.block is not None
    listen, location = server.block
    assert [arg for arg, _ in listen.args] == ["443", "ssl"]
    assert location.block is not None and location.block[0].args[0][0] == "http://u"


def test_the_snapshot_default_path_is_the_contracts() -> None:
    storage = load_wiring().storage
    contract = load_path(FLEET / "validators" / "contracts" / "glm53.yaml").documents[0]
    assert contract["model"]["snapshot_dir"].startswith(str(storage["default_hf_home"]) + "/hub/")


# -- replica parity (prod-config): every key but the declared per-replica deltas ------------

R2_LABELS = '      tierops.otel.instance: "2"\n'
R2_DEVICES = '                - "7"\n              capabilities:\n                - gpu\n'

PARITY = [
    (
        "deploy-limit-on-one-replica",
        BASE,
        edit(R2_DEVICES, R2_DEVICES + "        limits:\n          memory: 900g\n"),
        "limits:\n          memory",
        "deploy.resources.limits",
    ),
    (
        "label-on-one-replica",
        BASE,
        edit(R2_LABELS, R2_LABELS + "      com.example.owner: ml-serving\n"),
        "com.example.owner",
        "labels.com.example.owner",
    ),
    (
        "shared-label-value-differs",
        LONG,
        edit(
            "tierops.otel.precision: int4-weights-fp8-activations-bf16-kv", "tierops.otel.precision: fp8", 2
        ),
        "tierops.otel.precision: fp8",
        "labels.tierops.otel.precision",
    ),
    (
        "gpu-capabilities-differ",
        BASE,
        edit(
            '                - "7"\n              capabilities:\n                - gpu\n',
            '                - "7"\n              capabilities:\n                - gpu\n                - utility\n',
        ),
        "capabilities:\n                - gpu\n                - utility",
        "deploy.resources.reservations.devices.0.capabilities",
    ),
    (
        "extra-volume-on-one-replica",
        BASE,
        edit(
            "      - huggingface_cache:/root/.cache/huggingface\n",
            "      - huggingface_cache:/root/.cache/huggingface\n      - /dev/shm:/dev/shm\n",
            3,
        ),
        "volumes:\n      - huggingface_cache:/root/.cache/huggingface\n      - /dev/shm",
        "volumes",
    ),
    (
        "ulimit-on-one-replica",
        BASE,
        edit("      stack: 67108864\n", "      stack: 33554432\n", 2),
        "stack: 33554432",
        "ulimits.stack",
    ),
]


@pytest.mark.parametrize(
    ("case", "name", "change", "needle", "where"), PARITY, ids=[case for case, *_ in PARITY]
)
def test_replica_parity_covers_every_key(
    case: str, name: str, change: tuple[str, str, int], needle: str, where: str, write_prod: Any
) -> None:
    text = mutate(name, (change,))
    result = run_cli("--rule", "prod-config", "--format", "json", write_prod(name, text))
    parity = [row for row in result.findings() if row["message"].startswith("replica parity:")]
    assert len(parity) == 1, result.out
    assert parity[0]["message"].startswith(f"replica parity: {R2} {where} is ")
    line, col = pos_of(text, needle)
    assert (parity[0]["line"], parity[0]["col"]) == (line, col)


def test_declared_per_replica_deltas_are_not_parity_findings(write_prod: Any) -> None:
    # The clean long-context file differs between r1 and r2 in GPU ids, rendezvous,
    # pdi, the RAM budget env and the replica's own labels: all declared.
    result = run_cli("--rule", "prod-config", "--format", "json", PROD / LONG)
    assert result.code == 0 and result.findings() == []


@pytest.mark.parametrize(
    "change",
    [
        edit(
            "      - --revision\n      - " + SNAPSHOT + "\n",
            "      - --revision\n      - "
            + SNAPSHOT
            + "\n      - --cache-dir\n      - /root/.cache/huggingface/hub\n",
            1,
        ),
        edit(
            "      HF_TOKEN: ${HUGGING_FACE_HUB_TOKEN}\n    volumes:",
            "      HF_TOKEN: ${HUGGING_FACE_HUB_TOKEN}\n      HF_HOME: /root/.cache/huggingface\n    volumes:",
        ),
        edit(
            "      - --revision\n      - " + SNAPSHOT + "\n",
            "      - --revision=" + SNAPSHOT + "\n      - --quiet\n",
            1,
        ),
    ],
    ids=["cache-dir", "hf-home", "revision-equals-and-a-switch"],
)
def test_downloads_that_land_where_the_engines_read_give_no_findings(
    change: tuple[str, str, int], write_prod: Any
) -> None:
    assert wiring_findings(write_prod(BASE, mutate(BASE, (change,)))) == []


@pytest.mark.parametrize(
    "edits",
    [
        # str.isdigit() takes "²", int() refuses it: a finding elsewhere, never a crash here
        (edit('tierops.otel.port: "8000"', 'tierops.otel.port: "²"', 1),),
        (edit('LISTEN_ADDR: "0.0.0.0:8000"', 'LISTEN_ADDR: "0.0.0.0:\uff18000"', 1),),
        # aliases of the wrong type are compose-hygiene's; the graph skips them
        (edit("    networks:\n      - glm53\n", "    networks:\n      glm53: {aliases: 5}\n", 1),),
        (edit("    networks:\n      - glm53\n", "    networks:\n      glm53: {aliases: proxy}\n", 1),),
    ],
    ids=["superscript-label-port", "fullwidth-listen-port", "aliases-a-number", "aliases-a-string"],
)
def test_values_of_the_wrong_shape_never_crash_the_rule(edits: Any, write_prod: Any) -> None:
    wiring_findings(write_prod(BASE, mutate(BASE, edits)))  # asserts no traceback, exit 0 or 1


def test_a_published_port_of_a_service_whose_listener_is_a_variable_is_not_judged(write_prod: Any) -> None:
    text = mutate(
        BASE,
        (
            edit('LISTEN_ADDR: "0.0.0.0:8000"', "LISTEN_ADDR: ${PROXY_LISTEN}", 1),
            edit(
                "    volumes:\n      - /var/run/tappd.sock",
                '    ports: ["9000:8000"]\n    volumes:\n      - /var/run/tappd.sock',
                1,
            ),
        ),
    )
    assert 'ports: ["9000:8000"]' in text
    rows = wiring_findings(write_prod(BASE, text))
    assert not [
        row for row in rows if "listens on" in row["message"] and "proxy-glm53 publishes" in row["message"]
    ]
