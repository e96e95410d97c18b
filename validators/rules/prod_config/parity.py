"""prod-config replica parity: replicas of one file differ only where the contract says."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from validators.contract import Contract, FileContract, Replica
from validators.findings import Finding, error
from validators.model import Service
from validators.rules.prod_config.common import RULE as ID


def _parity(
    path: str,
    engines: Sequence[tuple[Replica, Service]],
    file: FileContract,
    contract: Contract,
    contract_findings: dict[str, int],
) -> Iterator[Finding]:
    if len(engines) < 2:
        return
    (first_replica, first), *rest = engines
    exempt = {*contract.parity_keys, "command", "environment"}
    if _own_builds(contract):
        exempt.add("image")  # each replica's image is held to its own build above
    first_form = _without_deltas(first.runtime(), contract)
    for replica, other in rest:
        other_form = _without_deltas(other.runtime(), contract)
        for key in [*first_form, *(k for k in other_form if k not in first_form)]:
            if key in exempt:
                continue
            difference = _first_difference(first_form.get(key), other_form.get(key), (key,))
            if difference is not None:
                where, a, b = difference
                holder = other if other.canon.written(*where[:1]) else first
                yield error(
                    path,
                    holder.at(*where),
                    ID,
                    f"replica parity: {other.name} {_dotted(where)} is {_written(other, where, b)}, {first.name} has {_written(first, where, a)}; replicas differ only in {_deltas(contract)} and declared argv/env",
                )
        if contract_findings.get(first_replica.name) or contract_findings.get(replica.name):
            continue  # the argv/env contract findings already name the difference
        delta = set(file.replicas[replica.name].features) ^ set(file.replicas[first_replica.name].features)
        if not delta <= set(file.delta) and delta:
            yield error(
                path,
                other.pos,
                ID,
                f"replica parity: the contract gives {first.name} and {other.name} different features {sorted(delta)} but declares no such delta",
            )


def _own_builds(contract: Contract) -> bool:
    """A replica of the contract runs its own build: image and engine_image differ by design."""
    return any(replica.image for replica in contract.replicas.values())


# Stands in for a declared per-replica value, so both replicas compare equal there.
_DELTA = "<per-replica>"


def _without_deltas(form: dict[str, Any], contract: Contract) -> dict[str, Any]:
    """The runtime form with the declared per-replica deltas blanked out.

    Every other key is compared whole: `deploy` and `labels` too (parity used
    to skip both, so a limit or a label on one replica passed).
    """
    result = dict(form)
    for path in contract.parity_paths:
        if path and path[0] in result:
            result[path[0]] = _blank(result[path[0]], path[1:])
    labels = result.get("labels")
    if isinstance(labels, dict):
        prefix = str(contract.telemetry["label_prefix"])
        suffixes = [*contract.parity_labels, *(["engine_image"] if _own_builds(contract) else [])]
        own = {prefix + suffix for suffix in suffixes}
        result["labels"] = {key: (_DELTA if key in own else value) for key, value in labels.items()}
    return result


def _blank(node: Any, path: Sequence[str]) -> Any:
    """A copy of `node` with the value at `path` (`*`: every list item) replaced by _DELTA."""
    if not path:
        return _DELTA
    head, rest = path[0], path[1:]
    if head == "*" and isinstance(node, list):
        return [_blank(item, rest) for item in node]
    if isinstance(node, dict) and head in node:
        return {**node, head: _blank(node[head], rest)}
    return node


def _deltas(contract: Contract) -> str:
    prefix = str(contract.telemetry["label_prefix"])
    return ", ".join(
        [
            *contract.parity_keys,
            *(".".join(path) for path in contract.parity_paths),
            *(f"label {prefix}{suffix}" for suffix in contract.parity_labels),
        ]
    )


def _first_difference(
    a: Any, b: Any, where: tuple[str | int, ...]
) -> tuple[tuple[str | int, ...], Any, Any] | None:
    """The deepest path under `where` at which two canonical values differ, and the values."""
    if a == b:
        return None
    while True:
        if isinstance(a, dict) and isinstance(b, dict):
            child: str | int | None = next(
                (k for k in [*b, *(k for k in a if k not in b)] if a.get(k) != b.get(k)), None
            )
            if child is None:
                return None
            where, a, b = (*where, child), a.get(child), b.get(child)
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            # Same length: the item that differs (a GPU reservation's capabilities, one
            # healthcheck word), not the whole list.
            index = next(i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y)
            where, a, b = (*where, index), a[index], b[index]
        else:
            return where, a, b


def _written(service: Service, where: tuple[str | int, ...], value: Any) -> str:
    """What the author wrote there (absent when only a default fills it)."""
    return _short(service.canon.quote(*where)) if service.canon.written(*where) else _short(value)


def _dotted(path: tuple[str | int, ...]) -> str:
    return ".".join(str(part) for part in path)


def _short(value: Any) -> str:
    if value is None:
        return "absent"
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."
