"""`healthcheck`: the test as a list (a string is `[CMD-SHELL, string]`), its durations
as Go prints them, `disable: false` left out as compose leaves it out.
"""

from __future__ import annotations

from typing import Any

from tierops.canonical.context import Ctx
from tierops.canonical.model import Origin, flow, type_name
from tierops.yamlload import YList, YMap


def healthcheck(ctx: Ctx, value: Any, origin: Origin) -> Any:  # noqa: PLR0912 (one branch per healthcheck key)
    if not isinstance(value, YMap):
        ctx.problem(origin, f"healthcheck must be a mapping, not {type_name(value)}")
        return None
    result: dict[str, Any] = {}
    for key in value:
        child = ctx.member_value(value, key)
        ctx.record(("healthcheck", key), Origin(value.at(key), value[key], child.span))
        item = value[key]
        if key == "test":
            if isinstance(item, str):
                result["test"] = ["CMD-SHELL", ctx.template(item, child)]
            elif isinstance(item, YList):
                words = []
                for index, word in enumerate(item):
                    inner = ctx.item(item, index)
                    ctx.record(("healthcheck", "test", index), inner)
                    if isinstance(word, str):
                        words.append(ctx.template(word, inner))
                    else:
                        ctx.problem(
                            inner, f"healthcheck.test[{index}] must be a string, not {type_name(word)}"
                        )
                        words.append(flow(word))
                result["test"] = words
            else:
                ctx.problem(child, "healthcheck.test must be a string or a list")
        elif key in ("interval", "timeout", "start_period", "start_interval"):
            result[key] = ctx.cast(item, child, "duration", f"healthcheck.{key}")
        elif key == "retries":
            result[key] = ctx.cast(item, child, "int", "healthcheck.retries")
        elif key == "disable":
            disable = ctx.cast(item, child, "bool", "healthcheck.disable")
            if disable is True:
                result["disable"] = True
        else:
            result[key] = ctx.generic(item, child, ("healthcheck", key), ("healthcheck", key))
    return result
