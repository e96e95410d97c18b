"""A compose file no stack claims: its true problems, and nothing from our house style.

Snippet in, findings out, the way another team's file reaches `python -m validators`.
"""

from __future__ import annotations

from pathlib import Path

from tests.validators.conftest import BASE, prod_text, run_cli

DIGEST = "@sha256:" + "a" * 64


def _findings(tmp_path: Path, text: str) -> list[tuple[int, str, str, str]]:
    path = tmp_path / "other-team.yaml"
    path.write_text(text, encoding="utf-8")
    result = run_cli("--format", "json", path)
    assert "Traceback" not in result.err
    return [(row["line"], row["level"], row["rule"], row["message"]) for row in result.findings()]


def test_a_vllm_stack_in_another_teams_spelling_gets_only_its_true_problems(tmp_path: Path) -> None:
    text = f"""\
services:
  front:
    image: docker.io/library/nginx{DIGEST}
    restart: unless-stopped
    ports: ["8000:8000", "80:80"]
    configs: [{{source: nginx_conf, target: /etc/nginx/conf.d/default.conf}}]
    healthcheck: {{test: [CMD, wget, -q, -O, /dev/null, "http://127.0.0.1:8000/"]}}
  proxy-x:
    image: docker.io/example/proxy{DIGEST}
    restart: unless-stopped
    extra_hosts: ["compose-manager:host-gateway"]
    environment:
      BACKENDS: http://model-x:8000
      COMPOSE_MANAGER_URL: http://compose-manager:8080
    healthcheck: {{test: [CMD, curl, -f, "http://localhost:9000/health"]}}
  model-x:
    image: docker.io/vllm/vllm-openai{DIGEST}
    restart: unless-stopped
    command: [--model, org/model, --tensor-parallel-size, "8"]
    healthcheck: {{test: [CMD, curl, -f, "http://localhost:8000/health"]}}
  exporter:
    image: nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-distroless{DIGEST}
    restart: unless-stopped
configs:
  nginx_conf:
    content: |
      server {{ listen 8000; location / {{ proxy_pass http://proxy-x:9000; }} }}
"""
    found = _findings(tmp_path, text)
    errors = [(line, rule, message.split(";")[0]) for line, level, rule, message in found if level == "error"]
    # The true one: port 80 is published, and the front door's own config listens on 8000 only.
    assert errors == [(5, "wiring", "front publishes 80 to container port 80, but front listens on 8000")]
    warnings = [(line, rule) for line, level, rule, _ in found if level == "warning"]
    # The vLLM engine is named as not flag-checked, once; nothing else is said: the
    # extra_hosts name resolves, a hub repo id is no path, vLLM listens on 8000 by
    # default, the distroless exporter needs no healthcheck, and no house name applies.
    assert warnings == [(17, "engine-flags")]


def test_a_missing_healthcheck_is_advice_in_a_file_no_stack_claims(tmp_path: Path) -> None:
    text = f"services:\n  web:\n    image: docker.io/library/nginx{DIGEST}\n    restart: always\n"
    assert [(line, level) for line, level, _, _ in _findings(tmp_path, text)] == [(2, "warning")]


def test_a_build_is_an_error_until_the_service_declares_why(tmp_path: Path) -> None:
    built = """\
services:
  tools:
    image: local/tools:dev
    build: ./docker/tools
    restart: "no"
"""
    hygiene = [
        (line, message)
        for line, level, rule, message in _findings(tmp_path, built)
        if rule == "compose-hygiene"
    ]
    assert (
        4,
        "tools has `build:`; production runs pinned images only, or declare the exception with `x-build-reason: <why it is built on the host>`",
    ) in hygiene
    assert any(line == 3 and "not pinned by digest" in message for line, message in hygiene)
    declared = built + "    x-build-reason: the patched tokenizer is not published to a registry\n"
    assert [f for f in _findings(tmp_path, declared) if f[2] == "compose-hygiene"] == []
    # An empty reason is no reason.
    empty = built + '    x-build-reason: " "\n'
    assert any("has `build:`" in f[3] for f in _findings(tmp_path, empty))


SGLANG = "docker.io/nearaidev/sglang@sha256:47aff791090003a37f893e998c44794c410d3f7bdfc7fdd2dfab5eb5592b30bb"


def test_the_flags_behind_a_switch_are_judged_and_a_list_switch_is_an_empty_word(tmp_path: Path) -> None:
    engine = f"""\
    image: {SGLANG}
    restart: unless-stopped
    healthcheck: {{test: [CMD, curl, -f, "http://localhost:30000/health"]}}
"""
    text = (
        "services:\n  model-a:\n"
        + engine
        + "    command: sglang serve --model-path org/m ${DP:+--enable-dp-atention} ${DP:+--dp-size ${DP}}\n"
        + "  model-b:\n"
        + engine
        + '    command: [sglang, serve, --model-path, org/m, "${DP:+--dp-size 2}"]\n'
    )
    found = [
        (line, rule, message) for line, level, rule, message in _findings(tmp_path, text) if level == "error"
    ]
    # In a string the switch is the flags it stands for when DP is set: each is checked.
    assert (
        6,
        "engine-flags",
        "model-a flag --enable-dp-atention does not exist in sglang 0.5.16 (build fc91d24) and is not a declared patch flag (validators/contracts/engine-build.yaml); did you mean --enable-dp-attention?",
    ) in found
    # A value the host's environment gives is not judged here.
    assert not any("--dp-size" in message for line, _, message in found if line == 6)
    # In a list an unset DP leaves an empty word, which no parser accepts.
    assert [(rule, message) for line, rule, message in found if line == 11] == [
        (
            "compose-hygiene",
            "model-b command item '${DP:+--dp-size 2}' is an empty argument when DP is unset (a list keeps it, and the program refuses ''); write the command as one string, where Compose drops an empty word",
        )
    ]


def test_a_file_outside_the_fleet_that_shares_a_fleet_files_name_is_not_the_stacks(tmp_path: Path) -> None:
    # Another team's repository holds a file under the very name of one of ours: it is
    # judged as any compose file, never by our stack's contract.
    path = tmp_path / BASE
    path.write_text(prod_text(BASE).replace("num_consumers: 1", "num_consumers: 2"), encoding="utf-8")
    result = run_cli("--format", "json", path)
    assert (result.code, result.findings()) == (0, [])


def test_a_placeholder_default_is_no_secret_in_a_file_no_stack_claims(tmp_path: Path) -> None:
    service = f"  collector:\n    image: docker.io/example/collector{DIGEST}\n    restart: unless-stopped\n"
    empty = _findings(
        tmp_path, f"services:\n{service}    environment:\n      INGEST_TOKEN: ${{INGEST_TOKEN:-unset}}\n"
    )
    assert [rule for _, level, rule, _ in empty if level == "error"] == []
    real = _findings(
        tmp_path, f"services:\n{service}    environment:\n      INGEST_TOKEN: ${{INGEST_TOKEN:-changeme}}\n"
    )
    assert [(rule, message.split(" names")[0]) for _, level, rule, message in real if level == "error"] == [
        ("compose-hygiene", "collector env INGEST_TOKEN")
    ]


def test_a_one_shot_job_off_every_network_is_isolation_a_server_off_it_is_not(tmp_path: Path) -> None:
    job = f"  preflight:\n    image: docker.io/example/check{DIGEST}\n    network_mode: none\n"
    assert [rule for _, _, rule, _ in _findings(tmp_path, f"services:\n{job}")] == []
    server = job.replace("preflight:", "server:") + "    restart: unless-stopped\n"
    server += "    healthcheck: {test: [CMD, 'true']}\n"
    assert [message for _, _, _, message in _findings(tmp_path, f"services:\n{server}")] == [
        "server has network_mode: none: no peer can reach it; drop network_mode and join the project network"
    ]


def test_engines_over_one_gpus_memory_are_advice_where_they_may_be_alternatives(tmp_path: Path) -> None:
    def engine(name: str, share: str) -> str:
        return (
            f"  {name}:\n    image: docker.io/vllm/vllm-openai{DIGEST}\n    restart: unless-stopped\n"
            f"    command: [--model, m, --gpu-memory-utilization, '{share}']\n"
            "    x-gpu-share: a TP4 replica and the pair that replaces it\n"
            "    healthcheck: {test: [CMD, 'true']}\n"
            "    deploy: {resources: {reservations: {devices: [{driver: nvidia, device_ids: ['0'], "
            "capabilities: [gpu]}]}}}\n"
        )

    found = _findings(tmp_path, "services:\n" + engine("tp4", "0.80") + engine("tp2", "0.86"))
    sharing = [(level, message) for _, level, rule, message in found if rule == "gpu-sharing"]
    assert sharing == [
        (
            "warning",
            "the engines on GPU 0 ask for 1.66 of its memory (tp4 0.80, tp2 0.86); lower their shares to 1.0 "
            "in all (unless these services never run together)",
        )
    ]
