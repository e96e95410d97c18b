"""prod-config on an engine's argv and env: every flag and variable the contract gives, in order."""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Sequence

from tierops.argv import split_argv, switched_words
from validators.contract import Contract, FileContract, Replica
from validators.findings import Finding, Pos, error, flag_cause
from validators.model import Flag, Service
from validators.rules.prod_config.common import RULE as ID


def _unswitched(items: list[tuple[str, ...]]) -> tuple[list[tuple[str, ...]], dict[str, str]]:
    """The contract's flags with each `${VAR:+--flag value}` item as its flags, and which
    variable each switched flag waits for."""
    flags: list[tuple[str, ...]] = []
    switched: dict[str, str] = {}
    for item in items:
        found = switched_words(item[0]) if len(item) == 1 else None
        if found is None:
            flags.append(item)  # a text Compose cannot split is compared as written
            continue
        for option in split_argv(found[1]).options:
            flags.append((option.flag,) if option.value is None else (option.flag, option.value))
            switched[option.flag] = found[0]
    return flags, switched


def _when(switch: str | None) -> str:
    return f"only when {switch} is set" if switch else "always"


def _argv(  # noqa: PLR0912 (one branch per kind of argv drift)
    path: str,
    service: Service,
    replica: Replica,
    file: FileContract,
    contract: Contract,
    engines: Sequence[tuple[Replica, Service]],
) -> Iterator[Finding]:
    name = service.name
    if service.tokens is None:
        yield error(
            path,
            service.at("command"),
            ID,
            f"{name} has no command; the contract argv starts `{' '.join(contract.program)}`",
        )
        return
    program = service.program()
    if tuple(program) != contract.program:
        pos = service.tokens[0].pos if service.tokens else service.at("command")
        yield error(
            path,
            pos,
            ID,
            f"{name} program is '{' '.join(program)}'; the contract says '{' '.join(contract.program)}'",
        )
    for token in service.positionals():
        yield error(
            path, token.pos, ID, f"{name} argv has a stray token '{token.text}' that belongs to no flag"
        )
    expected, switched = _unswitched(contract.expected_flags(file, replica))
    want: dict[str, str | None] = {item[0]: (item[1] if len(item) > 1 else None) for item in expected}
    order = [item[0] for item in expected]
    actual = service.flags()
    first: dict[str, Flag] = {}
    for flag in actual:
        if flag.flag in first:
            yield error(path, flag.pos, ID, f"{name} argv repeats {flag.flag}; the contract has it once")
            continue
        first[flag.flag] = flag
    feature_of = {item[0]: feature.name for feature in contract.features.values() for item in feature.argv}
    typo_of = _typos(
        [flag_name for flag_name in order if flag_name not in first],
        [flag.flag for flag in first.values() if flag.flag not in want and flag.flag not in feature_of],
    )
    meant = {written: flag_name for flag_name, written in typo_of.items()}
    for flag in first.values():
        if flag.flag not in want:
            if flag.flag in feature_of:
                yield error(
                    path,
                    flag.pos,
                    ID,
                    f"{name} argv has {flag.flag} (feature {feature_of[flag.flag]}), which the contract does not give {replica.name} of {file.stem}",
                )
            else:
                hint = f"; did you mean {meant[flag.flag]}, which it lacks?" if flag.flag in meant else ""
                yield error(
                    path, flag.pos, ID, f"{name} argv has {flag.flag}, which is not in the contract{hint}"
                )._replace(cause=flag_cause(name, flag.flag))
    others = [other for r, other in engines if r.name != replica.name]
    for index, flag_name in enumerate(order):
        if flag_name in first:
            continue
        carriers = [other.name for other in others if any(f.flag == flag_name for f in other.flags())]
        carried = f", which {' and '.join(carriers)} carries" if carriers else ""
        if flag_name in typo_of:
            continue  # said with the near miss: "did you mean FLAG, which it lacks?"
        pos = _insertion_pos(service, first, order[:index])
        yield error(path, pos, ID, f"{name} argv lacks {flag_name}{carried}")
    for flag in first.values():
        if flag.flag in want and flag.switch != switched.get(flag.flag):
            yield error(
                path,
                flag.pos,
                ID,
                f"{name} argv has {flag.flag} {_when(flag.switch)}; the contract has it {_when(switched.get(flag.flag))}",
            )
    for flag_name, value in want.items():
        present = first.get(flag_name)
        if present is None or present.value == value:
            continue
        flag = present
        if value is None:
            yield error(
                path, flag.value_pos, ID, f"{name} {flag_name} takes no value here, got '{flag.value}'"
            )
        elif flag.value is None:
            yield error(path, flag.pos, ID, f"{name} {flag_name} has no value; the contract says {value}")
        else:
            yield error(
                path, flag.value_pos, ID, f"{name} {flag_name} is {flag.value}; the contract says {value}"
            )
    yield from _order(path, name, [f for f in first.values() if f.flag in want], order)


def _typos(missing: Sequence[str], unexpected: Sequence[str]) -> dict[str, str]:
    """Each contract flag `missing` here whose near miss is written instead (one typo,
    said once): the missing flag -> what was written."""
    typos: dict[str, str] = {}
    for flag_name in missing:
        near = difflib.get_close_matches(flag_name, unexpected, n=1, cutoff=0.85)
        if near:
            typos[flag_name] = near[0]
    return typos


def _insertion_pos(service: Service, present: dict[str, Flag], before: Sequence[str]) -> Pos:
    """Where a missing flag belongs: after the last contract flag before it that is present."""
    for flag_name in reversed(before):
        flag = present.get(flag_name)
        if flag is not None:
            return flag.value_pos
    return service.at("command")


def _order(path: str, name: str, flags: Sequence[Flag], order: Sequence[str]) -> Iterator[Finding]:
    rank = {flag: index for index, flag in enumerate(order)}
    ranks = [rank[flag.flag] for flag in flags]
    keep = _longest_increasing(ranks)
    for index, flag in enumerate(flags):
        if index in keep:
            continue
        previous = order[rank[flag.flag] - 1] if rank[flag.flag] > 0 else "the program"
        yield error(
            path,
            flag.pos,
            ID,
            f"{name} argv has {flag.flag} out of contract order; it belongs right after {previous}",
        )


def _longest_increasing(values: Sequence[int]) -> set[int]:
    """Indices of one longest strictly increasing subsequence (the flags in order)."""
    best: list[int] = [1] * len(values)
    back: list[int] = [-1] * len(values)
    for i in range(len(values)):
        for j in range(i):
            if values[j] < values[i] and best[j] + 1 > best[i]:
                best[i], back[i] = best[j] + 1, j
    if not values:
        return set()
    index = max(range(len(values)), key=lambda k: (best[k], -k))
    keep: set[int] = set()
    while index != -1:
        keep.add(index)
        index = back[index]
    return keep


def _env(
    path: str, service: Service, replica: Replica, file: FileContract, contract: Contract
) -> Iterator[Finding]:
    expected = contract.expected_env(file, replica)
    env_key = service.at("environment")
    for key, value in expected.items():
        if key not in service.env:
            yield error(path, env_key, ID, f"{service.name} env lacks {key}={value}")
        elif service.env[key] != value:
            yield error(
                path,
                service.env_pos.get(key, env_key),
                ID,
                f"{service.name} env {key} is '{service.env[key]}'; the contract says '{value}'",
            )
    feature_of = {key: feature.name for feature in contract.features.values() for key in feature.env}
    for key in service.env:
        if key in expected:
            continue
        pos = service.env_pos.get(key, env_key)
        if key in feature_of:
            yield error(
                path,
                pos,
                ID,
                f"{service.name} env has {key} (feature {feature_of[key]}), which the contract does not give {replica.name} of {file.stem}",
            )
        else:
            yield error(path, pos, ID, f"{service.name} env has {key}, which is not in the contract")
