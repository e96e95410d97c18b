"""Lists of words: `command`/`entrypoint` (a string split by Compose's shell rules) and
the string lists (cap_add, dns, tmpfs, profiles, security_opt, ...), with Compose's rule
for duplicates.
"""

from __future__ import annotations

import itertools
from typing import Any

from tierops import shellwords
from tierops.canonical.context import Ctx, Handler
from tierops.canonical.model import Origin, dotted, flow, new_origin, type_name
from tierops.yamlload import YList


def argv(ctx: Ctx, value: Any, origin: Origin) -> list[str] | None:
    """command/entrypoint: exec-form words; a string split with compose's shell rules."""
    key = str(ctx.prefix[-1])
    if value is None:
        return None
    if isinstance(value, str):
        masked = ctx.masked(value, origin)
        if masked is None:
            return [value]
        try:
            parsed = shellwords.split(masked.text)
        except shellwords.ShellError as exc:
            ctx.problem(origin, f"{key} {exc} (compose refuses it)")
            return [masked.restore(masked.text)]
        if parsed.dropped is not None:
            ctx.problem(
                origin,
                f"{key} is cut at {parsed.dropped[:1]!r}: compose runs only the words before it and drops "
                f"{parsed.dropped!r}; write the list form, or [sh, -c, '...'] for a shell",
            )
        words = [masked.restore(word) for word in parsed.words]
        for index in range(len(words)):
            ctx.record((key, index), origin)
        return words
    if isinstance(value, YList):
        words = []
        origins = ctx.origins
        # The loader keeps a position and a span per item: `ctx.item`, inline (an argv
        # of 80 words in 200 services made it a tenth of the model's time).
        if len(value.item_pos) == len(value.item_span) == len(value):
            children = map(new_origin, zip(value.item_pos, value, value.item_span, strict=True))
        else:
            children = map(ctx.item, itertools.repeat(value), range(len(value)))
        for index, child in enumerate(children):
            origins[(key, index)] = child
            item = child.raw
            if isinstance(item, str):
                words.append(item if "$" not in item else ctx.template(item, child))
            else:
                ctx.problem(child, f"{key}[{index}] must be a string, not {type_name(item)} (quote it)")
                words.append(flow(item))
        return words
    ctx.problem(origin, f"{key} must be a string or a list of strings, not {type_name(value)}")
    return None


def string_list(*, single: bool, duplicates: str = "keep") -> Handler:
    """A list of strings (or, where compose allows it, one string for a one-item list).

    `duplicates`: "keep", "drop" (compose keeps the first of equal items: cap_add, dns,
    tmpfs, profiles, ...) or "refuse" (compose's schema refuses the file: group_add,
    security_opt, volumes_from, ...).
    """

    def handler(ctx: Ctx, value: Any, origin: Origin) -> list[str]:
        result = _strings(ctx, value, origin)
        if duplicates == "keep" or len(set(result)) == len(result):
            return result
        if duplicates == "refuse":
            seen: set[str] = set()
            for index, item in enumerate(result):
                if item in seen:
                    ctx.problem(
                        ctx.origin_of((*ctx.prefix, index), origin),
                        f"{dotted(ctx.prefix)} lists {item!r} twice; compose refuses duplicates here",
                    )
                seen.add(item)
            return result
        return list(dict.fromkeys(result))

    def _strings(ctx: Ctx, value: Any, origin: Origin) -> list[str]:
        prefix = ctx.prefix
        key = dotted(prefix)
        if isinstance(value, str) and single:
            ctx.record((*prefix, 0), origin)
            return [ctx.template(value, origin)]
        if not isinstance(value, YList):
            if value is None:
                return []
            ctx.problem(origin, f"{key} must be a list of strings, not {type_name(value)}")
            return []
        result = []
        for index, item in enumerate(value):
            child = ctx.item(value, index)
            ctx.record((*prefix, index), child)
            if isinstance(item, str):
                result.append(ctx.template(item, child))
            elif isinstance(item, (int, float)) and not isinstance(item, bool):
                result.append(ctx.stringified(item, child) or "")
            else:
                ctx.problem(child, f"{key}[{index}] must be a string, not {type_name(item)}")
        return result

    return handler
