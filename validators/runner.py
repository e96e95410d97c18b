"""Run rule families over files: parse each file once, collect every finding.

Library code: returns a Report, never prints or exits. A file that cannot be read at
all is recorded in `unreadable` and the run goes on with the next one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from tierops import layout
from tierops.errors import InputError
from validators import provenance
from validators.context import Context
from validators.findings import START, Finding, Level, error
from validators.loader import load_file, parse
from validators.model import build
from validators.registry import RULES

# Findings shown per file (20k unknown flags printed 40k lines). A file with
# more gets its first CAP, then one finding that counts the rest by rule.
CAP = 100


@dataclass
class Report:
    files: int = 0
    findings: list[Finding] = field(default_factory=list)
    unreadable: list[InputError] = field(default_factory=list)
    omitted: int = 0  # findings past the per-file cap, counted in the cap's own finding

    def count(self, level: Level) -> int:
        return sum(1 for finding in self.findings if finding.level is level)


def check_bytes(raw: bytes, display: str, ctx: Context, rules: Sequence[str] = tuple(RULES)) -> list[Finding]:
    """Every finding of the selected rule families for one file's bytes."""
    document = parse(raw, display)
    if isinstance(document, Finding):
        return [document]
    return _rules(build(document), ctx, rules)


def check_path(
    path: Path, display: str, ctx: Context, rules: Sequence[str] = tuple(RULES), *, claimable: bool = True
) -> list[Finding]:
    """`claimable`: the file may be claimed by a stack's contract (it is one of the fleet's
    own prod files); False judges it as any compose file, whatever its name."""
    document = load_file(path, display)
    if isinstance(document, Finding):
        return [document]
    return _rules(build(document), ctx, rules, claimable=claimable)


def _rules(compose: object, ctx: Context, rules: Sequence[str], *, claimable: bool = True) -> list[Finding]:
    from validators.model import ComposeFile

    assert isinstance(compose, ComposeFile)
    ctx = ctx.for_file(compose.stem) if claimable else ctx.for_file("")
    found: list[Finding] = []
    for rule in rules:
        module = RULES[rule]
        if ctx.contract is None and getattr(module, "NEEDS_CONTRACT", False):
            # A stack's own policy: only for the files its contract claims, and for its
            # own engines in a pack's file where the family judges members.
            if getattr(module, "JUDGES_PACK_MEMBERS", False):
                for member in ctx.members:
                    found.extend(module.check(compose, replace(ctx, contract=member)))
            continue
        found.extend(module.check(compose, ctx))
    # One mutation can be seen twice by one family (e.g. a value and its position);
    # identical findings are printed once.
    return one_per_cause(sorted(set(found), key=Finding.sort_key))


# Which family speaks for a cause that several see: a flag the build does not know is said
# best by engine-flags (with its "did you mean"); the contract's view of it is then noise.
_SPEAKS_FIRST = ("engine-flags", "prod-config")


def one_per_cause(findings: list[Finding]) -> list[Finding]:
    """Of the findings with one cause (Finding.cause), the one the first family in
    _SPEAKS_FIRST gives, else the first; findings without a cause all stay."""
    rank = {rule: index for index, rule in enumerate(_SPEAKS_FIRST)}
    speaker: dict[str, Finding] = {}
    for finding in findings:
        if not finding.cause:
            continue
        held = speaker.get(finding.cause)
        if held is None or rank.get(finding.rule, len(rank)) < rank.get(held.rule, len(rank)):
            speaker[finding.cause] = finding
    return [finding for finding in findings if not finding.cause or speaker[finding.cause] is finding]


def one_per_source(per_file: list[list[Finding]]) -> list[list[Finding]]:
    """Per file, its findings, where one stack data line caused the same finding on
    several services or files (the same family and message but for the service that
    starts it) only the first, saying where else; each with the data line to fix."""

    def key(finding: Finding) -> tuple[str, str, str]:
        return (finding.rule, finding.source, finding.message.partition(" ")[2])

    groups: dict[tuple[str, str, str], list[Finding]] = {}
    for finding in (finding for found in per_file for finding in found if finding.source):
        groups.setdefault(key(finding), []).append(finding)
    result: list[list[Finding]] = []
    for found in per_file:
        kept: list[Finding] = []
        for finding in found:
            group = groups.get(key(finding), []) if finding.source else []
            if group and group[0] is not finding:
                continue  # said once, at the first place
            kept.append(provenance.where_to_fix(_also_at(finding, group[1:])))
        result.append(kept)
    return result


_NAMED = 5  # places named when one data line caused a finding in many


def _also_at(finding: Finding, others: Sequence[Finding]) -> Finding:
    if not others:
        return finding
    places = [f"{Path(other.path).name}:{other.line}" for other in others]
    named = ", ".join(places[:_NAMED])
    more = f" and {len(places) - _NAMED} more" if len(places) > _NAMED else ""
    return finding._replace(message=f"{finding.message}; the same at {named}{more}")


def _unclaimed(path: Path, display: str, ctx: Context) -> list[Finding]:
    """A file of the fleet's own prod/ must be claimed by a stack's contract: without one it
    would silently get only the generic checks."""
    stem = path.stem
    claimed = ctx.for_file(stem)
    if claimed.pack is not None:
        judged = {contract.path.stem for contract in claimed.members}
        return [
            error(
                display,
                START,
                "prod-config",
                f"pack member {member} has no contract that lists '{stem}' under files: "
                f"(validators/contracts/{member}.yaml); its engines would get no stack checks",
            )
            for member in claimed.pack.members
            if member not in judged
        ]
    if claimed.contract is not None:
        return []
    contracts = ", ".join(layout.shown(contract.path) for contract in ctx.contracts) or "none"
    return [
        error(
            display,
            START,
            "prod-config",
            f"no stack contract claims '{stem}' (contracts: {contracts}); add it under files: of its stack's contract, "
            "or, for a file of several stacks, under its pack in contracts/packs.yaml",
        )
    ]


def capped(findings: list[Finding], cap: int) -> tuple[list[Finding], int]:
    """The first `cap` findings (sorted), then one that counts the rest; and how many were cut.

    The count keeps the worst level of what it stands for, so the exit code is the same.
    `cap` 0 keeps everything.
    """
    if cap <= 0 or len(findings) <= cap:
        return findings, 0
    shown, rest = findings[:cap], findings[cap:]
    by_rule = Counter(finding.rule for finding in rest)
    level = Level.ERROR if any(finding.level is Level.ERROR for finding in rest) else Level.WARNING
    first = rest[0]
    rules = ", ".join(f"{rule} {count}" for rule, count in sorted(by_rule.items()))
    summary = Finding(
        first.path,
        first.line,
        first.col,
        by_rule.most_common(1)[0][0],
        level,
        f"{len(rest)} more findings in this file not shown ({rules}); fix the first {cap} and rerun, "
        "or pass --max-findings 0 to see them all",
    )
    return [*shown, summary], len(rest)


def run(
    files: Sequence[tuple[Path, str]],
    ctx: Context,
    rules: Sequence[str] = tuple(RULES),
    *,
    cap: int = CAP,
) -> Report:
    report = Report()
    # A stack's contract claims the fleet's own prod/<name>, never a file elsewhere that
    # happens to share the name (another team's copy of a fleet file), nor a file of a
    # repository judged with the contracts shipped with the code (a pre-commit hook's).
    fleet_prod = layout.prod_dir().resolve() if layout.has_own_contracts() else None
    per_file: list[list[Finding]] = []
    for path, display in files:
        ours = fleet_prod is not None and path.resolve().parent == fleet_prod
        try:
            found = check_path(path, display, ctx, rules, claimable=ours)
        except InputError as exc:
            report.unreadable.append(exc)
            continue
        if ours:
            if "prod-config" in rules:
                found = [*_unclaimed(path, display, ctx), *found]
            # Only the fleet's own files were rendered from the fleet's data.
            found = provenance.trace(provenance.read_lines(path), found)
        per_file.append(found)
        report.files += 1
    for found in one_per_source(per_file):
        shown, cut = capped(found, cap)
        report.findings.extend(shown)
        report.omitted += cut
    return report
