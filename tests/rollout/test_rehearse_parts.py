"""The rehearsal's parts that need no daemon: the override, the stand-in's argv reading,
durations, and the exit codes of usage errors and of a machine without Docker."""

from __future__ import annotations

import os
import pty
import select
import sys
from pathlib import Path
from typing import Any

import pytest

from rollout.rehearse import cli as rehearse_cli
from rollout.rehearse.cli import main
from rollout.rehearse.override import read_stack, render
from rollout.rehearse.run import _flags, duration
from rollout.rehearse.standin import engine_args, parse_server_args

TAGS = {role: f"local/{role}:1" for role in ("engine", "nginx", "curl", "proxy", "gateway", "idle")}
GPU = {"resources": {"reservations": {"devices": [{"driver": "nvidia", "capabilities": ["gpu"]}]}}}


def model() -> dict[str, Any]:
    engine = {
        "image": "registry.invalid/engine:1",
        "command": ["sglang", "serve", "--port", "8000", "--tp-size", "2"],
        "deploy": GPU,
        "healthcheck": {"test": ["CMD", "curl", "-f", "http://localhost:8000/health"]},
        "networks": {"inner": None},
    }
    return {
        "services": {
            "e1": engine,
            "fetch": {
                "image": "registry.invalid/engine:1",
                "entrypoint": ["hf"],
                "command": ["download", "x"],
            },
            "lb": {"image": "registry.invalid/lb:1", "environment": {"URLS": "http://e1:8000"}},
            "web": {"image": "registry.invalid/nginx:1", "ports": [{"target": 8000, "published": "80"}]},
            "ping": {
                "image": "registry.invalid/curl:1",
                "environment": {"GATEWAY": "https://gw.invalid"},
                "networks": {"inner": None},
            },
            "stats": {"image": "registry.invalid/exporter:1"},
        }
    }


def test_services_are_recognised_by_what_they_are() -> None:
    stack = read_stack(model())
    assert stack.engines == {"e1": "sglang"}
    assert stack.proxies == ["lb"]
    assert stack.front_doors == ["web"]


def test_the_override_changes_only_what_cannot_exist_here(tmp_path: Path) -> None:
    override = render(read_stack(model()), "p", TAGS, tmp_path)
    text = override.text
    assert '"e1":\n    image: "local/engine:1"\n    pull_policy: "never"\n' in text
    assert 'deploy: {"resources": {"reservations": {"devices": !reset []}}}' in text
    assert '"fetch":\n    image: "local/engine:1"' in text
    assert '"lb":\n    image: "local/proxy:1"' in text
    assert (
        '"web":\n    image: "local/nginx:1"\n    pull_policy: "never"\n    ports: !override ["127.0.0.1::8000"]'
        in text
    )
    assert '"stats":\n    image: "local/idle:1"' in text
    assert 'environment: {"GATEWAY": "http://tierops-rehearse-gateway:8000"}' in text
    assert "tierops-rehearse-gateway:\n" in text and 'networks: ["inner"]' in text
    # Commands, healthchecks and environments the file sets stay as they are.
    assert "command" not in text and "healthcheck" not in text and "URLS" not in text
    whats = {(change.service, change.what.split(" ", 1)[0]) for change in override.changes}
    assert ("e1", "GPU") in whats and ("web", "ports") in whats and ("ping", "GATEWAY") in whats
    assert all(change.why for change in override.changes)


def test_the_stand_in_reads_the_argv_the_probe_compares_with() -> None:
    argv = ["python3", "-m", "sglang.launch_server", "--port", "8000", "--enable-metrics", "--tp-size=4"]
    kind, rest = engine_args(argv)
    assert kind == "sglang"
    info = parse_server_args(rest)
    assert info == {"port": "8000", "enable_metrics": True, "tp_size": "4"}
    assert _flags(rest) == [("--port", "8000"), ("--enable-metrics", True), ("--tp-size", "4")]
    assert engine_args(["vllm", "serve", "/m", "--port", "9"]) == ("vllm", ["/m", "--port", "9"])
    assert parse_server_args(["/m", "--port", "9"])["model"] == "/m"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1m30s", 90.0), ("500ms", 0.5), ("5m0s", 300.0), (None, 10.0), ("", 10.0), (3, 3.0)],
)
def test_durations_read_as_compose_writes_them(text: Any, seconds: float) -> None:
    assert duration(text, 10.0) == seconds


def test_a_missing_file_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "nope.yaml")]) == 2
    assert capsys.readouterr().err.strip() == f"{tmp_path / 'nope.yaml'}: no such file"


def test_no_docker_and_not_root_exits_3_with_the_reason_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "stack.yaml"
    file.write_text("services: {}\n", encoding="utf-8")
    monkeypatch.setenv("PATH", str(tmp_path))  # no docker client here
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert main([str(file)]) == 3
    err = capsys.readouterr().err
    assert err == "no Docker daemon answers (no docker client on PATH) and only root may start one here\n"


def test_an_engine_started_by_its_images_entrypoint_is_an_engine_and_told_to_start(tmp_path: Path) -> None:
    compose = model()
    compose["services"]["e2"] = {
        "image": "docker.io/vllm/vllm-openai@sha256:" + "a" * 64,
        "command": ["--model", "/m", "--port", "8000"],
    }
    stack = read_stack(compose)
    assert stack.engines == {"e1": "sglang", "e2": "vllm"}
    text = render(stack, "p", TAGS, tmp_path).text
    assert (
        '"e2":\n    image: "local/engine:1"\n    pull_policy: "never"\n    entrypoint: ["vllm", "serve"]'
        in text
    )
    # An engine whose command names its program keeps the file's own entrypoint.
    assert text.count("entrypoint") == 1


def test_no_rehearsed_container_resolves_an_outside_name(tmp_path: Path) -> None:
    override = render(read_stack(model()), "p", TAGS, tmp_path)
    services = [
        line for line in override.text.splitlines() if line.startswith("  ") and not line.startswith("   ")
    ]
    # Every service, the stand-in gateway included, forwards outside names to a resolver
    # that is not there; Docker's own DNS still answers the project's names.
    assert override.text.count('dns: ["127.0.0.1"]') == len(services) == 7
    assert any(
        change.service == "every service" and change.what.startswith("dns") for change in override.changes
    )


def test_a_cold_start_is_given_to_the_engines_only(tmp_path: Path) -> None:
    text = render(read_stack(model()), "p", TAGS, tmp_path, cold_start=5).text
    assert text.count('"REHEARSE_COLD_START_S": "5"') == 1
    block = text.split('  "e1":\n', 1)[1].split('\n  "', 1)[0]
    assert '"REHEARSE_COLD_START_S": "5"' in block
    assert "REHEARSE_COLD_START_S" not in render(read_stack(model()), "p", TAGS, tmp_path).text


def test_a_cold_start_out_of_range_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "x.yaml"
    path.write_text("services: {}\n", encoding="utf-8")
    assert main(["--cold-start", "-1", str(path)]) == 2
    assert "is not a number of seconds from 0 to 3600" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["nan", "-5", "0", "inf"])
def test_a_health_timeout_that_is_no_positive_number_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    """`nan` never compares past a deadline: the rehearsal waited forever."""
    path = tmp_path / "x.yaml"
    path.write_text("services: {}\n", encoding="utf-8")
    assert main(["--timeout", value, str(path)]) == 2
    assert "is not a number of seconds from 0" in capsys.readouterr().err


def test_the_probe_under_way_is_a_live_line_on_a_terminal_and_nothing_in_a_pipe(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    main_fd, terminal_fd = pty.openpty()
    with os.fdopen(terminal_fd, "w", encoding="utf-8") as terminal:
        monkeypatch.setattr(sys, "stderr", terminal)
        rehearse_cli.progress("f.yaml: probe up (1 of 6)")
        rehearse_cli.say("  ok   up (0.1 s)")
        # A pty may hand over each write separately: read until nothing more comes.
        chunks = []
        while select.select([main_fd], [], [], 0.5)[0]:
            chunks.append(os.read(main_fd, 4096))
        shown = b"".join(chunks).decode()
    os.close(main_fd)
    # written in place, then cleared before the result line
    assert shown == "\r\x1b[K  ...  f.yaml: probe up (1 of 6)\r\x1b[K"
    assert capsys.readouterr().out == "  ok   up (0.1 s)\n"
    monkeypatch.undo()
    rehearse_cli.progress("f.yaml: probe up (1 of 6)")
    assert capsys.readouterr() == ("", "")  # not a terminal: the results alone


def test_each_proxy_has_its_own_pool_and_an_engine_no_proxy_names_pools_with_all() -> None:
    model: dict[str, Any] = {
        "services": {
            "chat-r1": {"command": ["vllm", "serve", "m"]},
            "chat-r2": {"command": ["vllm", "serve", "m"]},
            "embed": {"command": ["vllm", "serve", "e"], "container_name": "embed-c"},
            "lonely": {"command": ["vllm", "serve", "l"]},
            "proxy-chat": {"environment": {"VLLM_BACKEND_URLS": "http://chat-r1:8000,http://chat-r2:8000"}},
            "proxy-embed": {"environment": {"VLLM_BACKEND_URLS": "http://embed-c:8000"}},
            "nginx": {"ports": [{"target": 8002, "published": "8002"}]},
        }
    }
    stack = read_stack(model)
    assert stack.pools == {"proxy-chat": ["chat-r1", "chat-r2"], "proxy-embed": ["embed"]}
    assert stack.pool_of("chat-r2") == ["chat-r1", "chat-r2"]
    assert stack.pool_of("embed") == ["embed"]
    assert stack.pool_of("lonely") == ["chat-r1", "chat-r2", "embed", "lonely"]


@pytest.mark.parametrize(
    ("argv", "serves", "refuses"),
    [
        (
            ["vllm", "serve", "m", "--runner", "pooling", "--convert", "embed"],
            "/v1/embeddings",
            "/v1/chat/completions",
        ),
        (
            ["vllm", "serve", "m", "--runner", "pooling", "--convert", "classify"],
            "/v1/score",
            "/v1/embeddings",
        ),
        (
            ["sglang", "serve", "--model-path", "m", "--is-embedding"],
            "/v1/embeddings",
            "/v1/chat/completions",
        ),
        (["vllm", "serve", "m"], "/v1/chat/completions", "/v1/embeddings"),
    ],
)
def test_the_stand_in_engine_serves_what_the_real_one_serves(
    argv: list[str], serves: str, refuses: str
) -> None:
    """A pooling model answers embeddings (or scores) and refuses chat, as vLLM does."""
    import http.client
    import json
    import threading
    from http.server import ThreadingHTTPServer

    from rollout.rehearse import standin

    kind, rest = engine_args(argv)
    handler = type(
        "Handler", (standin.EngineHandler,), {"server_args": parse_server_args(rest), "kind": kind}
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:

        def post(path: str) -> int:
            connection = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)
            body = {
                "model": "m",
                "input": "x",
                "text_1": "a",
                "text_2": ["b"],
                "messages": [{"role": "user", "content": "x"}],
            }
            connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
            response = connection.getresponse()
            response.read()
            connection.close()
            return response.status

        assert post(serves) == 200
        assert post(refuses) == 400
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"A=caf\xe9\n", "cannot read the dummy environment: 'utf-8' codec can't decode"),
        (b"export A=dummy\n", ":1:1: expected NAME=value"),
        (b'A=dummy\nB="quoted"\n', ":2:3: the dummy value of B"),
        (b"A=dummy\nA=again\n", ":2:1: A is set twice (first on line 1)"),
    ],
)
def test_an_env_file_is_read_as_the_validators_and_compose_read_it_or_refused_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, said: str
) -> None:
    compose = tmp_path / "x.yaml"
    compose.write_text("services: {}\n", encoding="utf-8")
    env = tmp_path / "bad.env"
    env.write_bytes(content)
    assert main(["--env-file", str(env), str(compose)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(str(env)) and said in err and err.count("\n") == 1, err


def test_a_lone_carriage_return_stays_inside_its_line_as_compose_reads_it(tmp_path: Path) -> None:
    env = tmp_path / "ok.env"
    env.write_bytes(b"A=dummy-a\nB=dummy-b\n# note\rC=not-a-line\n")
    assert rehearse_cli.read_env(env) == {"A": "dummy-a", "B": "dummy-b"}


def test_nothing_of_the_host_reaches_a_rehearsed_container(tmp_path: Path) -> None:
    """Its processes, network, devices and privileges, a volume bound to a host path or
    naming an existing one, and a secret or config read from a host file: each is reset
    or replaced, and said. (Checked on a real daemon: the host directory stayed
    untouched, pid 1 was the stand-in, only eth0 and lo were seen.)"""
    hostile = model()
    box = next(iter(hostile["services"].values()))
    box.update(privileged=True, cap_add=["ALL"], devices=["/dev/x:/dev/x"], pid="host", network_mode="host")
    box["ipc"] = "container:other"
    hostile["volumes"] = {"hv": {"driver_opts": {"type": "none", "o": "bind", "device": "/srv"}}, "ok": {}}
    hostile["secrets"] = {"s": {"file": "/etc/host-secret"}}
    hostile["configs"] = {"c": {"file": "/etc/host-config"}, "inline": {"content": "x"}}
    override = render(read_stack(hostile), "p", TAGS, tmp_path)
    for key in ("privileged", "cap_add", "devices", "pid", "network_mode", "ipc"):
        assert f"    {key}: !reset null" in override.text, key
    assert (
        '  "hv": {"driver": !reset null, "driver_opts": !reset null, "external": !reset null, "name": !reset null}'
        in override.text
    )
    assert '"ok"' not in override.text and "/etc/host" not in override.text
    assert f'  "s": {{"file": "{tmp_path / "secrets" / "s"}"}}' in override.text
    assert (tmp_path / "configs" / "c").read_bytes() == b"" and '"inline"' not in override.text
    said = [change.line() for change in override.changes]
    assert any("network_mode host removed" in line for line in said)
    assert any("secret s: /etc/host-secret -> an empty file" in line for line in said)
