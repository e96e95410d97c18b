"""Rule `wiring`: the service graph of a prod file resolves, so the stack can run.

Compose accepts every fault below; each one breaks or weakens the host. The rule
builds the graph from the canonical model (and the inline nginx and collector
configs) and resolves every edge, per validators/contracts/wiring.yaml, which finds
services by role (tierops/roles.py), never by name:

- listen (listeners.py): who listens where (an engine's `--host/--port`, the proxy's
  `LISTEN_ADDR`, the front door's nginx `listen`, the DCGM exporter's `-a` or :9400,
  the collector's receiver and extension endpoints);
- published-port, host-port (ports.py): a published port reaches a port its service
  listens on, and a host port is published once per file, and once per host across
  the files that run there together (the `hosts:` of the wiring contract);
- reference (references.py): nginx `proxy_pass`/`upstream`, URLs in env (the proxy's
  backend list, the registrar's endpoint), scrape targets, collector exporters and
  healthcheck URLs name a service that shares a network with the consumer, listens on
  that port, and is one the consumer's role may reach (a `localhost` URL: the
  service's own port; a `${CVM_HOST}` URL: a published port);
- storage (storage.py): `--model-path` lies under a named volume that the downloader
  (the one-shot job the engines wait for) writes the same snapshot into; the
  downloader's repo and revision are the path's; it keeps its token env; every config,
  secret and named volume a service mounts is defined;
- runtime (runtime.py): engines keep the image's entrypoint; no `network_mode:
  host|none`, no `privileged`; no `env_file` on engines; every long-running service
  has a healthcheck (or a declared reason, by role), an engine's `start_period` at
  least the contract's.

The checks and their fixes are `CHECKS` (checks.py); nginx.py reads inline nginx configs.

Passing example (the proxy listens where the front door sends)::

    proxy:
      environment:
        LISTEN_ADDR: "0.0.0.0:8000"
    configs: {nginx_conf: {content: "upstream pool { server proxy:8000; } ..."}}

Failing example (the proxy moved to 8080, the front door still sends to 8000)::

    proxy:
      environment:
        LISTEN_ADDR: "0.0.0.0:8080"
    # -> nginx upstream pool server proxy:8000: proxy listens on 8080, not 8000;
    #    point the reference at a port it listens on, or move its listener (wiring)
"""

from __future__ import annotations

from collections.abc import Iterator

from tierops import layout
from validators.context import Context, engine_services
from validators.findings import Finding
from validators.model import ComposeFile
from validators.rules.wiring.checks import CHECKS, Check
from validators.rules.wiring.contract import WIRING, load_wiring
from validators.rules.wiring.graph import Graph, dns_names, service_roles
from validators.rules.wiring.listeners import read_listeners
from validators.rules.wiring.nginx import parse_nginx
from validators.rules.wiring.ports import check_published, co_hosted, published_ports
from validators.rules.wiring.references import references, resolve
from validators.rules.wiring.runtime import check_runtime, exempt_services
from validators.rules.wiring.storage import check_storage, mount_sources

ID = "wiring"
SUMMARY = "the service graph resolves: listeners, published ports, references, model storage, runtime"


def check(compose: ComposeFile, ctx: Context) -> Iterator[Finding]:
    wiring = load_wiring(layout.contracts_dir() / WIRING.name)
    engines = engine_services(compose, ctx)
    exceptions = ctx.contract.wiring if ctx.contract is not None else {}
    prefix = str(ctx.contract.telemetry["label_prefix"]) if ctx.contract is not None else None
    graph = Graph(compose, wiring, engines, prefix, claimed=ctx.contract is not None)
    graph.roles = service_roles(compose, engines, exceptions)
    for service in compose:
        graph.names[service.name] = service.name
        for alias in dns_names(service):
            graph.names.setdefault(alias, service.name)
    read_listeners(graph)
    yield from graph.findings
    yield from check_published(graph)
    yield from co_hosted(compose, wiring)
    for ref in references(graph):
        yield from resolve(graph, ref)
    yield from check_storage(graph)
    yield from mount_sources(compose)
    yield from check_runtime(
        compose, wiring, engines, exempt_services(graph, exceptions), claimed=graph.claimed
    )


__all__ = ["CHECKS", "ID", "SUMMARY", "Check", "check", "load_wiring", "parse_nginx", "published_ports"]
