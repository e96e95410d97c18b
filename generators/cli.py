"""`python -m generators`: render, write and check the production files.

The only module of the package that parses arguments, prints, and picks exit codes.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from generators.check import Status, compare, report_text, reports_json
from generators.pack import PACK_SUFFIX, Pack, load_packs
from generators.render import REGENERATE, render_all, render_pack
from generators.source import GenerationRefused, Source, Target, load_source
from generators.targets import Stack, discover, load_targets, orphan_sources
from tierops import layout
from tierops.atomic import check_target, write_bytes_atomic
from tierops.cli import guarded, parse, prog
from tierops.errors import UsageError
from tierops.exitcodes import ExitCode, epilog
from tierops.yamlio import PINNED_RUAMEL_VERSION, ruamel_version

DESCRIPTION = """\
Render the production compose files under prod/ from the stacks in generators/. A
stack is a pair of files: <stack>.source.yaml (what every file of the stack shares)
and <stack>.targets.yaml (its files, and which features each engine replica gets).
Adding a stack is adding such a pair. A pack (<pack>.pack.yaml) puts several stacks
in one file on one host: its members' engines and proxies, and the host's services
once; a stack that lives only in packs needs no targets file. Exactly one mode:

  --check            render in memory and compare byte for byte with prod/: report
                     stale files (with a unified diff), missing and orphaned ones
  --write            write the rendered files (atomically; unchanged files untouched)
  --list             list the targets, their files and their replicas' features
  --stdout TARGET    print one rendered file

TARGET is a file stem (a key of a targets or pack file), a file name, or a path under
prod/; without TARGETs, --check and --write cover every target of every stack and pack.

The fleet's tree (generators/, prod/) is this repository unless TIEROPS_FLEET names
another one with the same layout.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog("python -m generators"),
        description=DESCRIPTION,
        epilog=epilog("stale, missing or orphaned files (--check)"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument(
        "--check", action="store_true", help="compare rendered bytes with prod/ (writes nothing)"
    )
    mode.add_argument("--write", action="store_true", help="write the rendered files to prod/")
    mode.add_argument("--list", action="store_true", help="list the targets")
    mode.add_argument("--stdout", metavar="TARGET", help="print one rendered file to standard output")
    parser.add_argument("targets", nargs="*", metavar="TARGET", help="limit --check/--write to these targets")
    parser.add_argument(
        "--stacks-dir",
        type=Path,
        default=None,
        help="where the stacks' *.source.yaml and *.targets.yaml are (default: the fleet's generators/)",
    )
    parser.add_argument(
        "--stack", action="append", metavar="NAME", help="only this stack (repeatable; default: every stack)"
    )
    parser.add_argument(
        "--source", type=Path, help="one stack's source file, instead of discovering (needs --targets-file)"
    )
    parser.add_argument("--targets-file", type=Path, help="that stack's targets file (needs --source)")
    parser.add_argument(
        "--prod-dir", type=Path, default=None, help="where the files live (default: the fleet's prod/)"
    )
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="--check's report: text (a status word per file, diffs of stale ones) or json "
        '({"format": 1, "files": [{"path", "status", "diff"}]}, status clean|stale|missing|orphaned)',
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(build_parser(), argv)
    if isinstance(args, int):
        return args
    return guarded(lambda: _run(args), tool="the generators")


def _run(args: argparse.Namespace) -> int:
    version = ruamel_version()
    if version != PINNED_RUAMEL_VERSION:
        note = (
            f"ruamel.yaml {version} is imported but prod/ is emitted with the pinned "
            f"{PINNED_RUAMEL_VERSION}; its bytes may differ. Use the nox sessions (`nox -s generated`, `{REGENERATE}`)"
        )
        if args.write:
            raise UsageError(f"refusing to write: {note}")
        print(f"warning: {note}", file=sys.stderr)

    stacks = _stacks(args)
    loaded, sources = _load(stacks)
    packs = _packs(args, stacks, sources)
    for pack in packs:
        _claim(
            {t.name for _, stack_targets in loaded for t in stack_targets},
            pack.name,
            f"by a stack and by {pack.display}",
        )
    targets = [target for _, stack_targets in loaded for target in stack_targets]
    source_of = {target.name: source for source, stack_targets in loaded for target in stack_targets}
    prod_dir: Path = args.prod_dir or layout.prod_dir()
    shown_dir = layout.shown(prod_dir)

    if args.list:
        _list(targets, packs, shown_dir)
        return ExitCode.OK

    pack_of = {pack.name: pack for pack in packs}
    if args.stdout:
        (name,) = _select([*(t.name for t in targets), *pack_of], [args.stdout])
        if name in pack_of:
            data = render_pack(pack_of[name])
        else:
            target = next(target for target in targets if target.name == name)
            data = render_all(source_of[name], [target])[target.filename]
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return ExitCode.OK

    names = _select([*(t.name for t in targets), *pack_of], args.targets) if args.targets else None
    rendered = _render(loaded, packs, names)
    if args.write:
        return _write(rendered, prod_dir, shown_dir, check_orphans=not args.targets)
    return _check(rendered, prod_dir, shown_dir, check_orphans=not args.targets, fmt=args.format)


def _render(
    loaded: list[tuple[Source, list[Target]]], packs: list[Pack], names: list[str] | None
) -> dict[str, bytes]:
    """Every chosen file's bytes (all of them when `names` is None). Everything is
    rendered before anything is written: a refusal leaves prod/ untouched."""
    rendered: dict[str, bytes] = {}
    problems: list[str] = []
    for source, stack_targets in loaded:
        mine = [target for target in stack_targets if names is None or target.name in names]
        if not mine:
            continue
        try:
            rendered.update(render_all(source, mine))
        except GenerationRefused as refused:
            problems.extend(refused.lines)
    for pack in packs:
        if names is not None and pack.name not in names:
            continue
        try:
            rendered[pack.filename] = render_pack(pack)
        except GenerationRefused as refused:
            problems.extend(refused.lines)
    if problems:
        raise GenerationRefused(problems)
    return rendered


def _list(targets: list[Target], packs: list[Pack], shown_dir: str) -> None:
    for target in targets:
        print(
            f"{target.name}  {shown_dir}/{target.filename}  tier={target.tier}  hosts={','.join(target.hosts) or '-'}"
        )
        for replica, uses in target.replicas.items():
            features = ", ".join(use.text for use in uses)
            print(f"    {replica}: {features}")
    for pack in packs:
        print(
            f"{pack.name}  {shown_dir}/{pack.filename}  tier={pack.tier}  hosts={','.join(pack.hosts) or '-'}  pack"
        )
        for member in pack.members:
            for replica, uses in member.target.replicas.items():
                gpus = ",".join(member.source.replicas[replica].gpus)
                features = ", ".join(use.text for use in uses)
                print(f"    {member.stack} {replica} (GPUs {gpus}): {features}")


def _write(rendered: dict[str, bytes], prod_dir: Path, shown_dir: str, *, check_orphans: bool) -> int:
    # Every target first: a refusal after some files were written would leave prod/ half
    # regenerated. A symbolic link is refused wherever it leads (a write replaces it).
    for filename in rendered:
        hint = "replace it with the file itself (`git rm` it, then `nox -s generate`)"
        check_target(prod_dir / filename, f"{shown_dir}/{filename}", parents=True, hint=hint)
    for filename, data in rendered.items():
        path = prod_dir / filename
        if path.is_file() and path.read_bytes() == data:
            print(f"unchanged {shown_dir}/{filename}")
            continue
        write_bytes_atomic(path, data, parents=True, shown=f"{shown_dir}/{filename}")
        print(f"wrote {shown_dir}/{filename}")
    if check_orphans:
        for report in compare(rendered, prod_dir, shown_dir):
            if report.status is Status.ORPHANED:
                print(
                    f"note: {report.path} is claimed by no target; `git rm` it if it is obsolete, or declare a target for it",
                    file=sys.stderr,
                )
    return ExitCode.OK


def _check(
    rendered: dict[str, bytes], prod_dir: Path, shown_dir: str, *, check_orphans: bool, fmt: str
) -> int:
    reports = compare(rendered, prod_dir, shown_dir, orphans=check_orphans)
    if fmt == "json":
        sys.stdout.write(reports_json(reports))
    else:
        sys.stdout.write(report_text(reports))
    return ExitCode.OK if all(report.ok for report in reports) else ExitCode.FINDINGS


def _load(stacks: list[Stack]) -> tuple[list[tuple[Source, list[Target]]], dict[str, Source]]:
    """Each stack's source and targets, and every source by stack name; a file name
    claimed by two stacks is refused."""
    loaded: list[tuple[Source, list[Target]]] = []
    sources: dict[str, Source] = {}
    owner: dict[str, str] = {}
    for stack in stacks:
        source = load_source(stack.source)
        sources[stack.name] = source
        if stack.targets is None:
            continue
        stack_targets = load_targets(source, stack.targets)
        for target in stack_targets:
            _claim(set(owner), target.name, f"stacks '{owner.get(target.name)}' and '{stack.name}'")
            owner[target.name] = stack.name
        loaded.append((source, stack_targets))
    return loaded, sources


def _claim(taken: set[str], name: str, by: str) -> None:
    if name in taken:
        raise UsageError(
            f"target '{name}' is declared twice ({by}); a file belongs to one stack or pack: rename one of them"
        )


def _packs(args: argparse.Namespace, stacks: list[Stack], sources: dict[str, Source]) -> list[Pack]:
    """The packs beside the stacks (none with --source, or with --stack naming no pack's
    members); a stack with no targets must be a pack's member."""
    if args.source is not None:
        return []
    directory = args.stacks_dir or layout.stacks_dir()
    packs = [pack for path in sorted(directory.glob(f"*{PACK_SUFFIX}")) for pack in load_packs(path, sources)]
    if args.stack:
        packs = [pack for pack in packs if all(member.stack in args.stack for member in pack.members)]
    else:
        orphan_sources(stacks, {member.stack for pack in packs for member in pack.members})
    seen: set[str] = set()
    for pack in packs:
        _claim(seen, pack.name, f"by two packs, in {pack.display}")
        seen.add(pack.name)
    return packs


def _stacks(args: argparse.Namespace) -> list[Stack]:
    if (args.source is None) != (args.targets_file is None):
        raise UsageError("--source and --targets-file go together: they name one stack's two files")
    if args.source is not None:
        if args.stack or args.stacks_dir:
            raise UsageError("--source/--targets-file name one stack; drop --stack and --stacks-dir")
        return [Stack(args.source.name.removesuffix(".source.yaml"), args.source, args.targets_file)]
    stacks = discover(args.stacks_dir or layout.stacks_dir())
    if args.stack:
        known = {stack.name: stack for stack in stacks}
        unknown = [name for name in args.stack if name not in known]
        if unknown:
            raise UsageError(f"unknown stack(s) {', '.join(unknown)}; stacks: {', '.join(known)}")
        stacks = [known[name] for name in dict.fromkeys(args.stack)]
    return stacks


def _select(known: list[str], names: Sequence[str]) -> list[str]:
    """The targets `names` mean (a stem, a file name or a path), each once, in order."""
    chosen: list[str] = []
    for raw in names:
        stem = Path(raw).name.removesuffix(".yaml")
        if stem not in known:
            raise UsageError(f"unknown target '{raw}'; targets: {', '.join(known)} (see --list)")
        if stem not in chosen:
            chosen.append(stem)
    return chosen
