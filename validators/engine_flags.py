"""Rule `engine-flags`: every engine flag exists in the pinned build, with a value it accepts.

The pinned build is SGLang 0.5.16 (validators/manifest/sglang-0.5.16.json, extracted
from the released wheel by `python -m validators.manifest extract`) plus the patch
flags validators/contracts/engine-build.yaml declares, each with its reason. For
every engine (a service whose command is `sglang serve ...`): each flag is in the
manifest or declared; store_true flags take no value and the others exactly one (or
one or more for nargs "+"/"*", as the manifest records nargs); int and float values
parse; choices are respected (a flag whose choices the manifest could not resolve
warns on every use instead of accepting anything, and a choice the build accepts only
under a condition, such as an environment variable, warns);
deprecated spellings and argparse prefix abbreviations are warned about (an
ambiguous abbreviation is an error); and the startup conflicts of engine-build.yaml
are reported (`--enable-dynamic-batch-tokenizer` with
`--enable-tokenizer-batch-encode`: error; with `--skip-tokenizer-init`: warning).

Passing example::

    command: [sglang, serve, --tp-size, "4", --hicache-write-policy, write_through,
              --enable-dynamic-batch-tokenizer]

Failing example::

    command: [sglang, serve, --tp-size, four,                  # int value does not parse
              --hicache-write-policy, write_sometimes,           # not a choice
              --enable-metrics, "true",                          # store_true takes no value
              --enable-dynamic-batch-tokenizer, --enable-tokenizer-batch-encode]  # startup ValueError
"""

from __future__ import annotations

import bisect
import difflib
import re
from collections.abc import Iterator
from dataclasses import dataclass

from tierops import interp
from tierops.argv import aliases_for
from validators.context import Context
from validators.findings import START, Finding, Pos, error, flag_cause, warning
from validators.manifest import FlagSpec
from validators.model import ComposeFile, Service, Token

ID = "engine-flags"
SUMMARY = (
    "engine flags exist in SGLang 0.5.16 or are declared patch flags; values, choices, startup conflicts"
)

ENGINE_PROGRAM = ("sglang", "serve")
_FLAG = re.compile(r"^--?[A-Za-z]")
_HUMAN_INT = re.compile(r"\d+|\d+(?:\.\d+)?[kMGT]|\d+(?:Ki|Mi|Gi|Ti)")


@dataclass(frozen=True)
class Use:
    """One flag as the engine's argparse would consume it."""

    written: str
    flag: str  # canonical
    values: tuple[Token, ...]
    pos: Pos
    attached: bool  # written --flag=value


def is_engine(service: Service) -> bool:
    return service.tokens is not None and tuple(t.text for t in service.tokens[:2]) == ENGINE_PROGRAM


def check(compose: ComposeFile, ctx: Context) -> Iterator[Finding]:
    # An engine's flags are judged against the build its own image runs; an engine whose
    # build has no manifest here is named once per image, never checked against another
    # build's flags (a flag of a newer build would read as a typo).
    unchecked: dict[tuple[str, str], list[Service]] = {}
    for service in compose:
        program = service.program_name()
        if program is None:
            continue
        image = service.get("image")
        image = image if isinstance(image, str) else "(no image)"
        if program == "sglang" and (not ctx.build.images or image in ctx.build.images):
            if service.tokens is not None:
                yield from _check_engine(compose.path, service, ctx)
            continue
        unchecked.setdefault((program, image), []).append(service)
    for (program, image), services in unchecked.items():
        names = ", ".join(service.name for service in services)
        yield warning(
            compose.path,
            services[0].at("image") if services[0].has("image") else services[0].pos,
            ID,
            f"flags of {names} not checked: no flag manifest for the {program} build of {image}; "
            f"the known build is {ctx.build.build} (validators/contracts/engine-build.yaml, `images:`)",
        )


_SGLANG_ALIASES = aliases_for("sglang")


def canonical(flag: str) -> str:
    """The manifest's spelling of an SGLang flag (`--tensor-parallel-size` is `--tp-size`)."""
    return _SGLANG_ALIASES.get(flag, flag)


def _spec(flag: str, ctx: Context) -> FlagSpec | None:
    spec = ctx.manifest.lookup(flag) or ctx.manifest.lookup(canonical(flag))
    if spec is not None:
        return spec
    patch = ctx.build.patch_flags.get(flag) or ctx.build.patch_flags.get(canonical(flag))
    if patch is None:
        return None
    takes_value = patch.action not in {"store_true", "store_false", "store_const", "count"}
    return FlagSpec(
        flag=patch.flag,
        aliases=(),
        action=patch.action,
        nargs=None,
        takes_value=takes_value,
        type=patch.type if takes_value else None,
        choices=None,
        deprecated=None,
        patch_reason=patch.reason,
    )


_SPELLINGS: dict[int, tuple[Context, list[str]]] = {}


def _spellings(ctx: Context) -> list[str]:
    """Every flag spelling of the manifest and the patches, sorted (once per context)."""
    cached = _SPELLINGS.get(id(ctx))
    if cached is None or cached[0] is not ctx:
        cached = (ctx, sorted({*ctx.manifest.flags, *ctx.build.patch_flags}))
        _SPELLINGS.clear()
        _SPELLINGS[id(ctx)] = cached
    return cached[1]


def _did_you_mean(written: str, ctx: Context) -> str:
    """`; did you mean --x?` for a near miss of a known flag (a typo), else ""."""
    if not written.startswith("--") or len(written) > 100:  # a hostile word is not a typo
        return ""
    close = difflib.get_close_matches(written, _spellings(ctx), n=1, cutoff=0.85)
    return f"; did you mean {close[0]}?" if close else ""


def _abbreviation(written: str, ctx: Context) -> tuple[FlagSpec | None, Finding | None]:
    """argparse accepts a unique prefix of a long flag; say so, since a new flag can break it."""
    if not written.startswith("--"):
        return None, None
    spellings = _spellings(ctx)
    # The flags starting with `written` are one run of the sorted list: two bisections,
    # not a scan of 460 flags per word (20k unknown flags took seconds).
    start = bisect.bisect_left(spellings, written)
    end = start
    while end < len(spellings) and spellings[end].startswith(written):
        end += 1
    specs = [_spec(spelling, ctx) for spelling in spellings[start:end]]
    matches = sorted({spec.flag for spec in specs if spec is not None})
    if len(matches) == 1:
        message = f"flag {written} works only as an argparse abbreviation of {matches[0]}; write {matches[0]}"
        return _spec(matches[0], ctx), warning("", START, ID, message)
    if len(matches) > 1:
        shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
        message = f"flag {written} is an ambiguous abbreviation ({shown}); argparse refuses it at startup"
        return None, error("", START, ID, message)
    return None, None


def _check_engine(path: str, service: Service, ctx: Context) -> Iterator[Finding]:
    tokens = service.argv_tokens
    name = service.name
    build = f"{ctx.manifest.label} (build {ctx.build.build})"
    uses: list[Use] = []
    index = len(service.program())
    while index < len(tokens):
        token = tokens[index]
        if not _FLAG.match(token.text):
            yield error(path, token.pos, ID, f"{name} argv has '{token.text}' where a flag was expected")
            index += 1
            continue
        written, sep, attached = token.text.partition("=")
        spec = _spec(written, ctx)
        problem: Finding | None = None
        if spec is None:
            spec, problem = _abbreviation(written, ctx)
            if problem is not None:
                yield problem._replace(
                    path=path, line=token.pos.line, col=token.pos.col, message=f"{name} {problem.message}"
                )
        if spec is None:
            if problem is None:
                yield error(
                    path,
                    token.pos,
                    ID,
                    f"{name} flag {written} does not exist in {build} and is not a declared patch flag (validators/contracts/engine-build.yaml)"
                    + _did_you_mean(written, ctx),
                )._replace(cause=flag_cause(name, written))
            # Skip what looks like its value so one unknown flag is one finding.
            index += 1
            while not sep and index < len(tokens) and not _FLAG.match(tokens[index].text):
                index += 1
            continue
        values: list[Token] = [Token(attached, token.pos)] if sep else []
        index += 1
        if not sep and spec.takes_value:
            limit = 1 if spec.nargs in (None, "?") or isinstance(spec.nargs, int) else len(tokens)
            if isinstance(spec.nargs, int) and spec.nargs > 1:
                limit = spec.nargs
            while len(values) < limit and index < len(tokens) and not _FLAG.match(tokens[index].text):
                values.append(tokens[index])
                index += 1
        elif not sep and not spec.takes_value:
            while index < len(tokens) and not _FLAG.match(tokens[index].text):
                values.append(tokens[index])
                index += 1
        uses.append(Use(written, spec.flag, tuple(values), token.pos, bool(sep)))
        yield from _values(path, name, spec, uses[-1])
    yield from _conflicts(path, name, uses, ctx)


def _values(path: str, name: str, spec: FlagSpec, use: Use) -> Iterator[Finding]:
    if spec.deprecated:
        replacement = f"; use {spec.deprecated}" if isinstance(spec.deprecated, str) else ""
        yield warning(
            path, use.pos, ID, f"{name} flag {use.written} is deprecated in the pinned build{replacement}"
        )
    if not spec.takes_value:
        if use.values:
            yield error(
                path,
                use.values[0].pos,
                ID,
                f"{name} flag {use.written} is a switch ({spec.action}) and takes no value, got '{use.values[0].text}'",
            )
        return
    if not use.values and spec.nargs not in ("?", "*"):
        yield error(path, use.pos, ID, f"{name} flag {use.written} needs a value")
        return
    for value in use.values:
        if interp.has_references(value.text):
            continue  # the host's environment decides it: nothing to judge here
        problem = _type_problem(spec.type, value.text)
        if problem:
            yield error(path, value.pos, ID, f"{name} flag {use.written} value '{value.text}' {problem}")
        else:
            yield from _choice_findings(path, name, spec, use, value)


def _choice_findings(path: str, name: str, spec: FlagSpec, use: Use, value: Token) -> Iterator[Finding]:
    """A value against the manifest's choices: known, unknown (never "any
    value"), or accepted only under a condition the compose file cannot show."""
    said = f"{name} flag {use.written} value '{value.text}'"
    if spec.choices_expr is not None:
        yield warning(
            path,
            value.pos,
            ID,
            f"{said} cannot be checked: the manifest could not resolve this flag's choices "
            f"({spec.choices_expr}); check the value against the build, or teach the extractor",
        )
    elif spec.choices is not None and value.text not in {str(choice) for choice in spec.choices}:
        choices = ", ".join(str(choice) for choice in spec.choices)
        yield error(path, value.pos, ID, f"{said} is not one of: {choices}")
    elif spec.condition(value.text) is not None:
        yield warning(
            path,
            value.pos,
            ID,
            f"{said} is a choice only when {spec.condition(value.text)} holds at startup; otherwise argparse refuses it",
        )


def _type_problem(kind: str | None, text: str) -> str | None:
    if kind == "int":
        try:
            int(text)
        except ValueError:
            return "is not an integer"
    elif kind == "float":
        try:
            float(text)
        except ValueError:
            return "is not a number"
    elif kind == "human_readable_int" and not _HUMAN_INT.fullmatch(text.strip()):
        return "is not an integer (suffixes k, M, G, T, Ki, Mi, Gi, Ti allowed)"
    return None


def _conflicts(path: str, name: str, uses: list[Use], ctx: Context) -> Iterator[Finding]:
    present = {use.flag: use for use in uses}
    for conflict in ctx.build.conflicts:
        if all(canonical(flag) in present or flag in present for flag in conflict.flags):
            last = present.get(conflict.flags[-1]) or present[canonical(conflict.flags[-1])]
            text = f"{name} sets {' and '.join(conflict.flags)}: {conflict.message}"
            if conflict.level == "warning":
                yield warning(path, last.pos, ID, text)
            else:
                yield error(path, last.pos, ID, text)
