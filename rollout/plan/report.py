"""The plan's three formats, pure functions of a Plan.

Text and Markdown open with one screen an operator can read at night: the tags, the
capacity per model, and per file its hosts and one line per service (what runs:
stage, preview, down, up, verify, and why). The calls follow: every step's
compose-manager body, the command compose-manager runs for it, what its preview must
show, and each check with its API reading and its shell command. Markdown keeps the
calls in a collapsed block and leaves the shell commands to the text format, so a
plan fits a pull-request comment.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable

from rollout.diff.secret_values import mask_text
from rollout.markdown import PLAN_BUDGET, code, escape, fence, fit
from rollout.plan.model import NO_DOWN_PREVIEW, FilePlan, Plan, Stage, Step
from rollout.plan.steps import ComposeCall


def no_change_line(plan: Plan) -> str | None:
    if plan.files:
        return None
    paths = " ".join(plan.paths)
    return f"no changes in {paths} between {plan.base.describe()} and {plan.head.describe()}: nothing to roll out"


def _where(file: FilePlan) -> str:
    placement = file.placement
    project = f"project {file.project}" if file.project else "compose-manager's default project"
    if placement.hosts:
        order = "" if len(placement.hosts) == 1 else ", one host at a time, the first is the canary host"
        return f"on {', '.join(placement.hosts)} ({project}{order})"
    if placement.note:
        return f"on {placement.note} ({project}; the fleet's data names no host)"
    return f"({project}; hosts: not in the fleet's data)"


def _summary_line(stage: Stage) -> str:
    number = f"{stage.number}"
    return f"  {number:>3}  {stage.service}  [{stage.role}]  {stage.actions}: {stage.reason}" + (
        "  INTERRUPTS TRAFFIC" if stage.interrupts_traffic else ""
    )


def _rollback_line(file: FilePlan) -> str:
    parts = [f"{stage.number} {stage.service}" for stage in file.rollback]
    return "  rollback, in this order (stages already past their down, when a step fails): " + "; ".join(
        parts
    )


def summary_text(plan: Plan) -> list[str]:
    """The first screen."""
    lines = [f"rollout plan: base {plan.base.describe()} -> head {plan.head.describe()}"]
    deployable = f" ({plan.tags.deployable})" if plan.tags.deployable else ""
    lines.append(f"tags: deploy {plan.tags.new}{deployable}; deployed now {plan.tags.old}")
    lines += [f"  {note}" for note in plan.tags.notes]
    lines += [f"capacity {entry.line()}" for entry in plan.capacity]
    for file in plan.files:
        lines.append("")
        if file.error:
            lines.append(f"{file.label}: cannot plan: {file.error}")
            continue
        lines.append(f"{file.label} {_where(file)}")
        if file.staging is not None and file.staging.call is not None:
            staged = ", ".join(file.staging.call.services)
            lines.append(f"    0  stage (pull, start nothing): {staged}")
        lines += [_summary_line(stage) for stage in file.stages]
        if file.variables:
            lines.append(
                f"  {NEW_VARIABLES}: {', '.join(variable.describe() for variable in file.variables)}"
            )
        if file.untouched:
            lines.append(f"  untouched: {', '.join(file.untouched)}")
        lines += [f"  note: {note}" for note in file.notes]
        lines += [f"  WARNING: {warning}" for warning in file.warnings]
        if file.rollback:
            lines.append(_rollback_line(file))
    if any(step.action == "down" for file in plan.files for stage in file.stages for step in stage.steps):
        lines += ["", f"note: {NO_DOWN_PREVIEW}."]
    if plan.files:
        lines.append(f"note: {ONE_AT_A_TIME}.")
    return lines


NEW_VARIABLES = "new host variables, set in compose-manager's env files on every host before the first up"
ONE_AT_A_TIME = (
    "one call at a time per host: compose-manager answers 409 while another runs (GET /status names it); "
    "a `$` line is the command compose-manager runs for the call, from a checkout of this repository, "
    "where it also passes --env-file for each of its ENV_FILES"
)


def _call_lines(call: ComposeCall, indent: str, *, commands: bool) -> list[str]:
    body = json.dumps(call.payload(), ensure_ascii=False)
    lines = [f"{indent}{call.endpoint} {body}"]
    if commands:
        lines.append(f"{indent}$ {call.command()}")
    return lines


def _step_lines(step: Step, *, commands: bool) -> list[str]:
    pad = " " * 5
    title = f"{pad}{step.number} {step.action}"
    lines = [f"{title}: {step.expect}" if step.expect else f"{title}:"]
    if step.call is not None:
        lines += _call_lines(step.call, pad + "    ", commands=commands)
    for check in step.checks:
        lines.append(f"{pad}    - {check.what}: expect {check.expect}")
        if commands:  # the Markdown keeps one line a check: how to read it is in the text
            if check.api:
                lines.append(f"{pad}      api: {check.api}")
            lines.append(f"{pad}      $ {check.command}")
    return lines


def _stage_lines(stage: Stage, *, commands: bool) -> list[str]:
    dot = "." if isinstance(stage.number, int) else ""
    lines = [f"  {stage.number}{dot} {stage.service} [{stage.role}]: {stage.reason}"]
    if stage.note:
        lines.append(f"     {stage.note}")
    if stage.warning:
        lines.append(f"     WARNING: {stage.warning}")
    for step in stage.steps:
        lines += _step_lines(step, commands=commands)
    return lines


def details_text(file: FilePlan, *, commands: bool = True) -> list[str]:
    """Every call and check of one file, then its rollback."""
    if file.error:
        return []
    lines = [f"{file.label}: the calls, in order, host by host {_where(file)}"]
    if file.staging is not None:
        lines += _step_lines(file.staging, commands=commands)
    for stage in file.stages:
        lines += _stage_lines(stage, commands=commands)
    if file.rollback:
        lines.append(f"{file.label}: the rollback, the same rules in reverse (added services go down first)")
        if file.rollback_staging is not None:
            lines += _step_lines(file.rollback_staging, commands=commands)
        for stage in file.rollback:
            lines += _stage_lines(stage, commands=commands)
    return lines


def render_text(plan: Plan) -> str:
    quiet = no_change_line(plan)
    if quiet is not None:
        return quiet + "\n"
    lines = summary_text(plan)
    for file in plan.files:
        details = details_text(file)
        if details:
            lines += ["", *details]
    return mask_text("\n".join(lines)) + "\n"


def render_json(plan: Plan) -> str:
    return mask_text(json.dumps(plan.to_json(), indent=2, ensure_ascii=False)) + "\n"


def render_markdown(plan: Plan, limit: int = PLAN_BUDGET) -> str:
    quiet = no_change_line(plan)
    if quiet is not None:
        return f"### Rollout plan\n\n{escape(quiet)}\n"
    deployable = f" ({escape(plan.tags.deployable)})" if plan.tags.deployable else ""
    tags = f"Deploy {code(plan.tags.new)}{deployable}; deployed now {code(plan.tags.old)}"
    notes = "".join(f"\n- {escape(note)}" for note in plan.tags.notes)
    blocks = ["### Rollout plan\n", f"{tags}{notes}\n"]
    if plan.capacity:
        blocks.append("".join(f"- Capacity {escape(entry.line())}\n" for entry in plan.capacity))
    for file in plan.files:
        if file.error:
            blocks.append(f"#### {code(file.label)}\n\nCannot plan: {escape(file.error)}\n")
            continue
        blocks.append(f"#### {code(file.label)} {escape(_where(file))}\n")
        blocks.append(_table(file))
        lines = []
        if file.variables:
            described = ", ".join(escape(variable.describe()) for variable in file.variables)
            lines.append(f"- **{escape(NEW_VARIABLES)}**: {described}")
        if file.untouched:
            lines.append(f"- Untouched: {', '.join(code(name) for name in file.untouched)}")
        lines += [f"- {escape(note)}" for note in file.notes]
        lines += [f"- **Warning:** {escape(warning)}" for warning in file.warnings]
        if file.rollback:
            order = "; ".join(f"{stage.number} {code(stage.service)}" for stage in file.rollback)
            lines.append(f"- Rollback, in this order: {order}")
        if lines:
            blocks.append("\n".join(lines) + "\n")
    blocks.append(
        f"{escape(NO_DOWN_PREVIEW)}. How to read each check (through compose-manager's API and in a shell), "
        "and the command compose-manager runs for each call: `python -m rollout plan --format text`.\n"
    )
    for file in plan.files:
        details = mask_text("\n".join(details_text(file, commands=False))).splitlines()
        if details:
            summary = html.escape(f"{file.label}: calls, checks and rollback")
            blocks.append(
                f"<details><summary>{summary}</summary>\n\n{fence(details, 'text')}\n\n</details>\n"
            )
    return fit([mask_text(block) for block in blocks], limit, "plan")


def _table(file: FilePlan) -> str:
    rows = ["| # | service | role | steps | why |", "|---|---|---|---|---|"]
    if file.staging is not None and file.staging.call is not None:
        staged = ", ".join(code(name) for name in file.staging.call.services)
        rows.append(f"| 0 | {staged} | | stage | new images or model snapshots, pulled while all serve |")
    for stage in file.stages:
        role = escape(stage.role) + (" **interrupts traffic**" if stage.interrupts_traffic else "")
        rows.append(
            f"| {stage.number} | {code(stage.service)} | {role} | {escape(stage.actions)} | {escape(stage.reason)} |"
        )
    return "\n".join(rows) + "\n"


RENDERERS: dict[str, Callable[[Plan], str]] = {
    "text": render_text,
    "markdown": render_markdown,
    "json": render_json,
}
