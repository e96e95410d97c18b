"""The plan's three formats, pure functions of a Plan.

Every step shows the compose-manager call (endpoint and JSON body) and the equivalent
plain `docker compose` command, what its dry run must show, and its rollback.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable

from rollout.markdown import PLAN_BUDGET, code, escape, fence, fit
from rollout.masking import mask_text
from rollout.plan import FilePlan, Plan, Stage, Step
from rollout.steps import ComposeCall


def no_change_line(plan: Plan) -> str | None:
    if plan.files:
        return None
    paths = " ".join(plan.paths)
    return f"no changes in {paths} between {plan.base.describe()} and {plan.head.describe()}: nothing to roll out"


def _call_lines(call: ComposeCall, indent: str) -> list[str]:
    body = json.dumps(call.payload(), ensure_ascii=False)
    return [f"{indent}{call.endpoint} {body}", f"{indent}$ {call.command()}"]


def _step_lines(step: Step) -> list[str]:
    pad = " " * 5
    title = f"{pad}{step.number} {step.action}"
    lines = [f"{title}: {step.expect}" if step.expect else f"{title}:"]
    if step.call is not None:
        lines += _call_lines(step.call, pad + "    ")
    for check in step.checks:
        lines.append(f"{pad}    - {check.what}: expect {check.expect}")
        lines.append(f"{pad}      $ {check.command}")
    if step.rollback:
        lead = f"rollback ({step.rollback_note})" if step.rollback_note else "rollback"
        lines.append(f"{pad}    {lead}:")
        for call in step.rollback:
            lines += _call_lines(call, pad + "      ")
    elif step.rollback_note:
        lines.append(f"{pad}    rollback: {step.rollback_note}")
    return lines


def _stage_lines(stage: Stage) -> list[str]:
    dot = "." if isinstance(stage.number, int) else ""
    lines = [f"  {stage.number}{dot} {stage.service} [{stage.role}]: {stage.reason}"]
    if stage.note:
        lines.append(f"     {stage.note}")
    # The profile note of its calls, once per stage (JSON carries it on every call).
    calls = [call for step in stage.steps for call in (step.call, *step.rollback) if call is not None]
    lines += [f"     note: {note}" for note in dict.fromkeys(call.note() for call in calls) if note]
    if stage.warning:
        lines.append(f"     WARNING: {stage.warning}")
    for step in stage.steps:
        lines += _step_lines(step)
    return lines


def file_text(file: FilePlan, plan: Plan) -> list[str]:
    if file.error:
        return [f"plan for {file.label}: cannot plan: {file.error}"]
    count = len(file.stages)
    lines = [
        f"plan for {file.label}: {count} service(s) to recreate, one at a time, in this order "
        f"(base {plan.base.describe()} -> head {plan.head.describe()})"
    ]
    if file.untouched:
        lines.append(f"  not touched (unchanged): {', '.join(file.untouched)}")
    lines += [f"  note: {note}" for note in file.notes]
    lines += [f"  WARNING: {warning}" for warning in file.warnings]
    if file.stages:
        lines.append('  every rollback call: send it with "dry_run": true first and check it, then false')
    for stage in file.stages:
        lines += _stage_lines(stage)
    if file.rollback:
        lines.append(
            "  rollback of this whole plan, its exact reverse (services the plan added go down first: "
            "the orphan rule):"
        )
        for stage in file.rollback:
            lines += _stage_lines(stage)
    return lines


def _tag_lines(plan: Plan) -> list[str]:
    return [
        f"tags: new {plan.tags.new}, deployed {plan.tags.old}",
        *[f"  {note}" for note in plan.tags.notes],
    ]


def render_text(plan: Plan) -> str:
    quiet = no_change_line(plan)
    if quiet is not None:
        return quiet + "\n"
    lines = _tag_lines(plan)
    for file in plan.files:
        lines += file_text(file, plan)
    return mask_text("\n".join(lines)) + "\n"


def render_json(plan: Plan) -> str:
    return mask_text(json.dumps(plan.to_json(), indent=2, ensure_ascii=False)) + "\n"


def render_markdown(plan: Plan, limit: int = PLAN_BUDGET) -> str:
    quiet = no_change_line(plan)
    if quiet is not None:
        return f"### Rollout plan\n\n{escape(quiet)}\n"
    tags = f"Tags: new {code(plan.tags.new)}, deployed {code(plan.tags.old)}"
    notes = "".join(f"\n- {escape(note)}" for note in plan.tags.notes)
    blocks = ["### Rollout plan\n", f"{tags}{notes}\n"]
    for file in plan.files:
        blocks.append(f"#### {code(file.label)}\n")
        if file.error:
            blocks.append(f"Cannot plan: {escape(file.error)}\n")
            continue
        if file.untouched:
            blocks.append(f"Not touched (unchanged): {', '.join(code(name) for name in file.untouched)}\n")
        blocks += [f"- {escape(note)}" for note in file.notes]
        blocks += [f"- **Warning:** {escape(warning)}" for warning in file.warnings]
        blocks += _table(file.stages)
        if file.rollback:
            blocks.append(
                "Rollback of this whole plan (its exact reverse; services the plan added go down first):\n"
            )
            blocks += _table(file.rollback)
        details = mask_text("\n".join(file_text(file, plan))).splitlines()
        summary = html.escape("payloads, commands, checks and rollbacks")
        blocks.append(f"<details><summary>{summary}</summary>\n\n{fence(details, 'text')}\n\n</details>\n")
    return fit([mask_text(block) for block in blocks], limit, "plan")


def _table(stages: tuple[Stage, ...]) -> list[str]:
    rows = ["| step | service | role | action | traffic |\n|---|---|---|---|---|"]
    for stage in stages:
        traffic = "**interrupts**" if stage.interrupts_traffic else ""
        for step in stage.steps:
            dry = " (dry run)" if step.call is not None and step.call.dry_run else ""
            action = escape(step.action.removesuffix(" (dry run)") + dry)
            rows.append(
                f"| {step.number} | {code(stage.service)} | {escape(stage.role)} | {action} | {traffic} |"
            )
    rows.append("")
    return rows


RENDERERS: dict[str, Callable[[Plan], str]] = {
    "text": render_text,
    "markdown": render_markdown,
    "json": render_json,
}
