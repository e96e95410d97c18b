"""Spelling variants of each service field, for the equivalence tests.

Each family lists service bodies (YAML text of the keys below `image:`) that spell the
same field in different ways: most mean the same to Compose, some deliberately do not
(a changed value, a default that only applies when a variable is unset). Which pairs
are equal is *not* written here: the real binary decides, and the tests check that
tierops.canonical agrees with it on every pair.
"""

from __future__ import annotations

FAMILIES: dict[str, list[str]] = {
    "command": [
        "command: [sglang, serve, --port, '8000']",
        "command: sglang serve --port 8000",
        "command: \"sglang serve --port 8000\"",
        "command: 'sglang  serve\t--port 8000'",
        "command: [\"sglang\", \"serve\", \"--port\", \"8000\"]",
        "command: sglang serve --port=8000",
        "command: sglang serve --port 8001",
        "command: sglang 'serve' \"--port\" 8000",
        "command: sglang serve --port 8000; echo done",
        "command: [sh, -c, 'sglang serve --port 8000']",
        "command: >-\n  sglang serve\n  --port 8000",
        "command: a\\ b c",
        "command: ['a b', c]",
        "command: \"a \\\"b c\\\"\"",
        "command: ['a', '\"b c\"']",
        "command: [a, 'b c']",
        "command: echo $$HOME",
        "command: [echo, $$HOME]",
        "command: [echo, '$HOME']",
        "command: ''",
        "command: []",
    ],
    "entrypoint": [
        "entrypoint: /bin/sh -c",
        "entrypoint: [/bin/sh, -c]",
        "entrypoint: [/bin/sh]",
        "entrypoint: ''",
        "entrypoint: []",
    ],
    "environment": [
        "environment:\n  A: '1'\n  B: two",
        "environment: [A=1, B=two]",
        "environment:\n  - A=1\n  - B=two",
        "environment:\n  A: 1\n  B: two",
        "environment: {B: two, A: '1'}",
        "environment:\n  A: 1.0\n  B: two",
        "environment:\n  A: '1.0'\n  B: two",
        "environment:\n  A: 2\n  B: two",
        "environment: [A=1, B=two, A=1]",
        "environment: [A=0, B=two, A=1]",
    ],
    "environment-values": [
        "environment: {F: 1.50}",
        "environment: {F: '1.5'}",
        "environment: {F: '1.50'}",
        "environment: {F: 1.5e0}",
        "environment: {F: 0x10}",
        "environment: {F: '16'}",
        "environment: {F: 1_6}",
        "environment: {F: 020}",
        "environment: {F: true}",
        "environment: {F: 'true'}",
        "environment: {F: True}",
        "environment: {F: yes}",
        "environment: {F: null}",
        "environment: [F]",
        "environment: {F: ''}",
        "environment: [F=]",
        "environment: {F: 1000000.0}",
        "environment: {F: '1e+06'}",
    ],
    "environment-variables": [
        "environment: {T: $TOKEN}",
        "environment: {T: '${TOKEN}'}",
        "environment: [T=$TOKEN]",
        "environment: ['T=${TOKEN}']",
        "environment: {T: '${TOKEN:-}'}",
        "environment: {T: '${TOKEN-}'}",
        "environment: {T: '${TOKEN:-changeme}'}",
        "environment: {T: '${TOKEN-changeme}'}",
        "environment: {T: changeme}",
        "environment: {T: '${TOKEN:+set}'}",
        "environment: {T: '${OTHER}'}",
        "environment: {T: 'a$$b'}",
        "environment: {T: 'a$b'}",
        "environment: {T: 'a$${TOKEN}'}",
        "environment: {T: '${TOKEN:-${OTHER}}'}",
        "environment: {T: '${TOKEN:-$OTHER}'}",
    ],
    "labels": [
        "labels:\n  tierops.otel.scrape: 'true'\n  tierops.otel.port: '8000'",
        "labels: [tierops.otel.scrape=true, tierops.otel.port=8000]",
        "labels:\n  tierops.otel.scrape: true\n  tierops.otel.port: 8000",
        "labels: {tierops.otel.port: 8000, tierops.otel.scrape: 'true'}",
        "labels:\n  tierops.otel.scrape: 'True'\n  tierops.otel.port: '8000'",
        "labels: [tierops.otel.scrape, tierops.otel.port=8000]",
        "labels:\n  tierops.otel.scrape: ''\n  tierops.otel.port: 8000",
        "labels:\n  tierops.otel.scrape:\n  tierops.otel.port: 8000",
    ],
    "ports": [
        "ports: ['8000:8000']",
        "ports: ['8000:8000/tcp']",
        "ports: [8000:8000]",
        "ports: [{target: 8000, published: 8000}]",
        "ports: [{target: 8000, published: '8000', protocol: tcp, mode: ingress}]",
        "ports: [{target: '8000', published: 8000}]",
        "ports: ['0.0.0.0:8000:8000']",
        "ports: [{target: 8000, published: 8000, host_ip: 0.0.0.0}]",
        "ports: ['8000:8000/udp']",
        "ports: ['8001:8000']",
        "ports: ['8000:8000', '8000:8000']",
        "ports: ['8000-8001:8000-8001']",
        "ports: ['8000:8000', '8001:8001']",
        "ports: ['127.0.0.1:8000:8000']",
        "ports: [{target: 8000, published: 8000, host_ip: 127.0.0.1}]",
    ],
    "ports-target-only": [
        "ports: ['8000']",
        "ports: [8000]",
        "ports: [{target: 8000}]",
        "ports: ['8000/tcp']",
        "expose: [8000]",
        "expose: ['8000']",
    ],
    "durations": [
        "stop_grace_period: 300s",
        "stop_grace_period: 5m",
        "stop_grace_period: 5m0s",
        "stop_grace_period: 300000ms",
        "stop_grace_period: 0.0833333333333333333h",
        "stop_grace_period: 301s",
        "stop_grace_period: 4m60s",
    ],
    "healthcheck": [
        "healthcheck:\n  test: curl -fsS http://localhost:8000/health\n  interval: 90s",
        "healthcheck:\n  test: [CMD-SHELL, curl -fsS http://localhost:8000/health]\n  interval: 1m30s",
        "healthcheck:\n  test: ['CMD-SHELL', 'curl -fsS http://localhost:8000/health']\n  interval: 1.5m",
        "healthcheck:\n  test: [CMD, curl, -fsS, http://localhost:8000/health]\n  interval: 90s",
        "healthcheck:\n  test: curl -fsS http://localhost:8000/health\n  interval: 90s\n  retries: 3",
        "healthcheck:\n  test: curl -fsS http://localhost:8000/health\n  interval: 90s\n  retries: '3'",
        "healthcheck:\n  test: curl -fsS http://localhost:8000/health\n  interval: 90s\n  disable: false",
        "healthcheck:\n  test: curl -fsS http://localhost:8001/health\n  interval: 90s",
    ],
    "sizes": [
        "shm_size: '64'",
        "shm_size: 64",
        "shm_size: 64b",
        "shm_size: 1gb",
        "shm_size: 1g",
        "shm_size: 1024m",
        "shm_size: '1073741824'",
        "shm_size: 1GiB",
        "shm_size: 1000m",
        "shm_size: 32g",
        "shm_size: 32gb",
        "shm_size: 34359738368",
    ],
    "scalars": [
        "init: true\nrestart: unless-stopped\nipc: host",
        "init: 'true'\nrestart: 'unless-stopped'\nipc: \"host\"",
        "init: yes\nrestart: unless-stopped\nipc: host",
        "init: True\nrestart: unless-stopped\nipc: host",
        "init: false\nrestart: unless-stopped\nipc: host",
        "restart: unless-stopped\nipc: host",
        "init: true\nrestart: always\nipc: host",
        "init: true\nrestart: unless-stopped\nipc: host\nprivileged: false",
        "init: true\nrestart: unless-stopped\nipc: host\nprivileged: 'false'",
        "init: true\nrestart: unless-stopped\nipc: host\nprivileged: true",
    ],
    "depends_on": [
        "depends_on: [dep-target]",
        "depends_on: {dep-target: {condition: service_started}}",
        "depends_on:\n  dep-target:\n    condition: service_started\n    required: true",
        "depends_on: {dep-target: {condition: service_started, restart: false}}",
        "depends_on: {dep-target: {condition: service_healthy}}",
        "depends_on: {dep-target: {condition: service_started, required: false}}",
        "depends_on: {dep-target: {condition: service_started, restart: true}}",
    ],
    "volumes": [
        "volumes: ['app-data:/data']",
        "volumes: ['app-data:/data:rw']",
        "volumes: [{type: volume, source: app-data, target: /data}]",
        "volumes: [{type: volume, source: app-data, target: /data, volume: {}}]",
        "volumes: ['app-data:/data:ro']",
        "volumes: [{type: volume, source: app-data, target: /data, read_only: true}]",
        "volumes: ['/etc/tls:/tls:ro']",
        "volumes: [{type: bind, source: /etc/tls, target: /tls, read_only: true}]",
        "volumes: [{type: bind, source: /etc/tls, target: /tls, read_only: true, bind: {create_host_path: true}}]",
        "volumes: ['./conf:/conf']",
        "volumes: ['./conf/:/conf']",
        "volumes: [{type: bind, source: ./conf, target: /conf, bind: {create_host_path: true}}]",
    ],
    "networks": [
        "networks: [backend]",
        "networks: {backend: }",
        "networks: {backend: {}}",
        "networks: {backend: null}",
        "networks: [backend, default]",
        "network_mode: host",
    ],
    "configs": [
        "configs: [app-config]",
        "configs: [{source: app-config}]",
        "configs: [{source: app-config, target: /app-config}]",
        "configs: [{source: app-config, target: /etc/app.conf, mode: 0444}]",
        "configs: [{source: app-config, target: /etc/app.conf, mode: '0444'}]",
        "configs: [{source: app-config, target: /etc/app.conf, mode: 292}]",
        "configs: [{source: app-config, target: /etc/app.conf, mode: 0o444}]",
        "configs: [{source: app-config, target: /etc/app.conf, mode: 0555}]",
    ],
    "ulimits": [
        "ulimits: {memlock: -1, stack: 67108864}",
        "ulimits: {memlock: {soft: -1, hard: -1}, stack: 67108864}",
        "ulimits: {memlock: '-1', stack: '67108864'}",
        "ulimits: {memlock: {soft: '-1', hard: -1}, stack: 67108864}",
        "ulimits: {memlock: 1024, stack: 67108864}",
    ],
    "deploy": [
        "deploy:\n  resources:\n    reservations:\n      devices:\n        - {driver: nvidia, capabilities: [gpu], device_ids: ['0', '1']}",
        "deploy:\n  resources:\n    reservations:\n      devices:\n        - {capabilities: [gpu], driver: nvidia, device_ids: ['1', '0']}",
        "deploy:\n  resources:\n    reservations:\n      devices:\n        - {driver: nvidia, capabilities: [gpu], count: all}",
        "deploy:\n  resources:\n    reservations:\n      devices:\n        - {driver: nvidia, capabilities: [gpu], count: -1}",
        "deploy:\n  resources:\n    limits: {cpus: '2', memory: 512M}",
        "deploy:\n  resources:\n    limits: {cpus: 2.0, memory: '512m'}",
        "deploy:\n  resources:\n    limits: {cpus: '2.5', memory: 512M}",
    ],
    "images": [
        "image: nearaidev/sglang@sha256:47aff791090003a37f893e998c44794c410d3f7bdfc7fdd2dfab5eb5592b30bb",
        "image: docker.io/nearaidev/sglang@sha256:47aff791090003a37f893e998c44794c410d3f7bdfc7fdd2dfab5eb5592b30bb",
        "image: 'nearaidev/sglang@sha256:47aff791090003a37f893e998c44794c410d3f7bdfc7fdd2dfab5eb5592b30bb'",
        "image: ${REGISTRY}/sglang:latest",
        "image: $REGISTRY/sglang:latest",
        "image: ${REGISTRY:-docker.io}/sglang:latest",
        "image: docker.io/sglang:latest",
    ],
    "capabilities": [
        "cap_add: [SYS_ADMIN]",
        "cap_add: [CAP_SYS_ADMIN]",
        "cap_add: ['SYS_ADMIN']",
        "cap_add: [SYS_ADMIN, NET_ADMIN]",
        "cap_add: [NET_ADMIN, SYS_ADMIN]",
        "cap_add: [SYS_ADMIN, SYS_ADMIN]",
    ],
    "strings-or-lists": [
        "dns: 8.8.8.8\ntmpfs: /run",
        "dns: [8.8.8.8]\ntmpfs: [/run]",
        "dns: ['8.8.8.8']\ntmpfs: ['/run']",
        "dns: [8.8.4.4]\ntmpfs: [/run]",
        "extra_hosts: ['gw:192.0.2.1']",
        "extra_hosts: ['gw=192.0.2.1']",
        "extra_hosts: {gw: 192.0.2.1}",
        "sysctls: [net.core.somaxconn=1024]",
        "sysctls: {net.core.somaxconn: 1024}",
        "sysctls: {net.core.somaxconn: '1024'}",
    ],
}

# Spellings compose refuses: each must fail to render, and the model must report it.
REFUSED: list[str] = [
    "depends_on: {dep-target: {condition: service_started, required: 'true'}}",
    "deploy:\n  resources:\n    reservations:\n      devices:\n        - {capabilities: [gpu], device_ids: [0, 1]}",
    "command: [sglang, serve, --port, 8000]",
    "deploy:\n  resources:\n    limits: {cpus: 2, memory: 536870912}",
    "command: echo 'unclosed",
    "command: echo (a)",
    "security_opt: [no-new-privileges, no-new-privileges]",
    "networks: [backend, backend]",
    "init: maybe",
    "stop_grace_period: five minutes",
    "shm_size: lots",
    "ports: ['80:eighty']",
    "environment: {T: '${TOKEN'}",
    "environment: {T: '${TOKEN:x}'}",
    "healthcheck: {test: [CMD, curl], retries: three}",
    "mem_limit: 1g\ndeploy: {resources: {limits: {memory: 2g}}}",
]

# The helper definitions every variant file carries (a dependency, a network, ...).
PRELUDE_SERVICES = "  dep-target:\n    image: busybox\n"
EPILOGUE = (
    "networks:\n  backend: {}\n"
    "volumes:\n  app-data: {}\n"
    "configs:\n  app-config:\n    content: hello\n"
)


def family_file(bodies: list[str]) -> tuple[str, list[str]]:
    """One compose file with a service per variant (`v0`, `v1`, ...), and their names."""
    lines = ["services:", PRELUDE_SERVICES.rstrip("\n")]
    names = []
    for index, body in enumerate(bodies):
        name = f"v{index}"
        names.append(name)
        lines.append(f"  {name}:")
        if not body.startswith("image:"):
            lines.append("    image: busybox")
        lines.extend("    " + line for line in body.split("\n"))
    return "\n".join(lines) + "\n" + EPILOGUE, names
