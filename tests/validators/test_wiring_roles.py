"""Rule `wiring` finds services by role (tierops/roles.py), never by name.

The shared wiring contract names no service: a file whose services carry other names
gets the same findings, naming its own services; a stack's per-service exception is
data in its own contract; a role key the code does not know is refused at its line.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FLEET
from tests.validators.conftest import BASE, prod_text, run_cli
from tests.validators.test_wiring import R1, SNAPSHOT, pos_of, wiring_findings
from tierops.errors import InputError
from tierops.roles import Role
from validators.rules.wiring import load_wiring

OTHER_SHA = "0123456789abcdef0123456789abcdef01234567"


def _renamed(text: str) -> str:
    """BASE with the proxy, the front door and the downloader under other names."""
    text = text.replace("proxy-glm53", "edge-gateway").replace("model-downloader", "fetch-weights")
    text = text.replace("  nginx:\n", "  front:\n").replace(
        "container_name: nginx\n", "container_name: front\n"
    )
    assert "proxy-glm53" not in text and "  nginx:" not in text
    return text


def _messages(rows: list[dict[str, Any]]) -> list[tuple[int, int, str]]:
    return sorted((row["line"], row["col"], row["message"].split(";")[0]) for row in rows)


def test_renamed_services_are_clean(write_prod: Any) -> None:
    assert wiring_findings(write_prod(BASE, _renamed(prod_text(BASE)))) == []


def test_the_front_door_edge_holds_whatever_the_proxy_is_called(write_prod: Any) -> None:
    text = _renamed(prod_text(BASE)).replace("server edge-gateway:8000;", f"server {R1}:8000;")
    rows = wiring_findings(write_prod(BASE, text))
    assert [(row["line"], row["col"]) for row in rows] == [pos_of(text, f"{R1}:8000;")]
    assert rows[0]["message"].startswith(
        f"front upstream glm53_proxy server {R1}:8000 names {R1}; front may only reach edge-gateway; "
    )


def test_a_moved_proxy_listener_breaks_its_consumers_by_their_own_names(write_prod: Any) -> None:
    text = _renamed(prod_text(BASE)).replace('LISTEN_ADDR: "0.0.0.0:8000"', 'LISTEN_ADDR: "0.0.0.0:8080"')
    messages = [message for _, _, message in _messages(wiring_findings(write_prod(BASE, text)))]
    assert (
        "front upstream glm53_proxy server edge-gateway:8000: edge-gateway listens on 8080, not 8000"
        in messages
    )
    assert (
        "otelcol-contrib scrape job edge-gateway target edge-gateway:8000: edge-gateway listens on 8080, not 8000"
        in messages
    )


def test_the_downloader_is_the_one_shot_job_the_engines_wait_for(write_prod: Any) -> None:
    text = _renamed(prod_text(BASE)).replace(f"      - {SNAPSHOT}\n", f"      - {OTHER_SHA}\n", 1)
    rows = wiring_findings(write_prod(BASE, text))
    line, col = pos_of(text, OTHER_SHA)
    assert [(row["line"], row["col"]) for row in rows] == [(line, col)]
    assert rows[0]["message"].startswith(f"fetch-weights downloads revision {OTHER_SHA}")


def test_a_one_shot_job_no_engine_waits_for_is_not_the_downloader(write_prod: Any) -> None:
    # Without the engines' wait, the job's revision is nobody's snapshot: not judged.
    text = prod_text(BASE).replace(f"      - {SNAPSHOT}\n", f"      - {OTHER_SHA}\n", 1)
    text = text.replace("condition: service_completed_successfully", "condition: service_started")
    assert wiring_findings(write_prod(BASE, text)) == []


def test_the_wiring_contract_names_no_service() -> None:
    for path in (FLEET / "validators" / "contracts" / "wiring.yaml",):
        wiring = load_wiring(path)
        keys = {*wiring.listeners, *wiring.edges, *wiring.healthcheck_exempt, wiring.downloader}
        assert keys <= set(Role)
        assert "glm" not in path.read_text(encoding="utf-8").split("\nhost_vars:")[1]


def test_an_unknown_role_in_the_wiring_contract_is_refused_at_its_line(tmp_path: Path) -> None:
    text = (FLEET / "validators" / "contracts" / "wiring.yaml").read_text(encoding="utf-8")
    path = tmp_path / "wiring.yaml"
    path.write_text(text.replace("  front_door: [proxy]\n", "  front-door: [proxy]\n"), encoding="utf-8")
    with pytest.raises(InputError) as raised:
        load_wiring(path)
    line = path.read_text(encoding="utf-8").splitlines().index("  front-door: [proxy]") + 1
    assert str(raised.value).startswith(
        f"{path}:{line}:3: 'front-door' is no role; name one of engine, one_shot"
    )


def _own_fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: str) -> Path:
    """A copy of the fixture fleet whose stack contract ends with `block`; its BASE file."""
    root = tmp_path / "own-fleet"
    shutil.copytree(FLEET, root)
    contract = root / "validators" / "contracts" / "glm53.yaml"
    contract.write_text(contract.read_text(encoding="utf-8") + block, encoding="utf-8")
    monkeypatch.setenv("TIEROPS_FLEET", str(root))
    return root / "prod" / BASE


def _without_proxy_healthcheck(text: str) -> str:
    start = text.index("  proxy-glm53:\n")
    health = text[text.index("    healthcheck:\n", start) : text.index("    labels:\n", start)]
    return text.replace(health, "", 1)


def test_a_stack_exempts_one_of_its_services_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, write_prod: Any
) -> None:
    text = _without_proxy_healthcheck(prod_text(BASE))
    rows = wiring_findings(write_prod(BASE, text))
    assert [row["message"].split(":")[0] for row in rows] == ["proxy-glm53 runs without a healthcheck"]
    path = _own_fleet(
        tmp_path, monkeypatch, "\nwiring:\n  healthcheck_exempt:\n    proxy-glm53: probed by the front door\n"
    )
    path.write_text(text, encoding="utf-8")
    assert wiring_findings(path) == []


def test_a_stack_pins_the_role_of_one_of_its_services(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pinned as `other`, the proxy is no proxy: the front door's upstream on it breaks
    # the front door -> proxy edge (and the file has no proxy to point it at), and the
    # collector's scrape of it reaches a role with no listener.
    path = _own_fleet(tmp_path, monkeypatch, "\nwiring:\n  roles:\n    proxy-glm53: other\n")
    messages = sorted(row["message"] for row in wiring_findings(path))
    assert len(messages) == 2
    assert messages[0].startswith(
        "nginx upstream glm53_proxy server proxy-glm53:8000 names proxy-glm53; nginx may only reach a proxy service;"
    )
    assert messages[1].startswith(
        "otelcol-contrib scrape job proxy-glm53 target proxy-glm53:8000: proxy-glm53 serves nothing the wiring "
        "contract knows; reference a service that listens (or declare the listener of its role, other, in "
    )


def test_a_stack_contract_naming_an_unknown_role_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _own_fleet(tmp_path, monkeypatch, "\nwiring:\n  roles:\n    proxy-glm53: gateway\n")
    result = run_cli("--rule", "wiring", "--format", "json", path)
    assert result.code != 0 and "Traceback" not in result.err
    assert "wiring.roles.proxy-glm53: 'gateway' is no role" in result.err


DIGEST = "@sha256:" + "b" * 64
UNCLAIMED = f"""\
services:
  gateway:
    image: docker.io/example/router{DIGEST}
    restart: unless-stopped
    environment:
      UPSTREAMS: http://llm:8000
    healthcheck: {{test: [CMD, /probe]}}
  llm:
    image: docker.io/vllm/vllm-openai{DIGEST}
    restart: unless-stopped
    command: [--model, org/model, --port, "8000"]
    healthcheck: {{test: [CMD, curl, -f, "http://localhost:8000/health"]}}
  edge:
    image: docker.io/library/nginx{DIGEST}
    restart: unless-stopped
    ports: ["443:8443"]
    configs: [{{source: edge_conf, target: /etc/nginx/conf.d/default.conf}}]
    healthcheck: {{test: [CMD, wget, -q, "http://127.0.0.1:8443/"]}}
  telemetry:
    image: docker.io/otel/opentelemetry-collector-contrib{DIGEST}
    restart: unless-stopped
    configs: [{{source: otel_conf, target: /etc/otelcol/config.yaml}}]
configs:
  edge_conf:
    content: |
      server {{ listen 8443; location / {{ proxy_pass http://gateway:9000; }} }}
  otel_conf:
    content: |
      receivers:
        prometheus/self:
          config:
            scrape_configs:
              - job_name: self
                static_configs: [{{targets: ["localhost:8888"]}}]
              - job_name: gateway
                static_configs: [{{targets: ["gateway:9090"]}}]
      exporters:
        debug: {{}}
      service:
        pipelines:
          metrics: {{receivers: [prometheus/self], exporters: [debug]}}
"""


def test_a_file_no_stack_claims_is_not_held_to_our_stacks_listeners(tmp_path: Path) -> None:
    # By role the gateway is a proxy and `telemetry` a collector; where they listen is
    # their program's business in another team's file (no LISTEN_ADDR here, a self-scrape
    # on the collector's own metrics port), so nothing is said about their references.
    path = tmp_path / "other-team.yaml"
    path.write_text(UNCLAIMED, encoding="utf-8")
    assert wiring_findings(path) == []
    # What the program itself decides is still judged: nginx listens where its config says.
    path.write_text(UNCLAIMED.replace('ports: ["443:8443"]', 'ports: ["443:443"]'), encoding="utf-8")
    assert [row["message"].split(";")[0] for row in wiring_findings(path)] == [
        "edge publishes 443 to container port 443, but edge listens on 8443"
    ]
