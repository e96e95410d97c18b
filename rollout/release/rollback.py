"""Roll services of one prod file back to their previous definition, one at a time.

"Previous" means the newest release tag, older than the deployed one, at which the file
defines those services differently: not merely the previous tag, which may carry the
very same definition (a change to another file or another replica). The definitions
come from the tags' records (rollout/release/record.py); the file at the chosen tag is then
rendered with the real `docker compose config` and the dummy environment, so a
rollback is never printed for a file compose would reject.

The steps follow the rollout plan's rules, through compose-manager's real API
(`rollout/compose-manager.yaml`), one service at a time: stage the old image first
when it differs (`up` with `materialize_only`), preview (`up` dry run at the old tag:
its `plan` event must name no other service, and it writes the old file where the down
reads it), `down` (compose-manager's down has no dry run), `up` from the old tag, and
verify what the rollback moves (health, the image, the variant label). A rollback
never removes a service (see the orphan refusal below), so no service is an orphan
of the old file's `up`.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from rollout import git
from rollout.diff.changes import ABSENT, Aspect, Change, Op
from rollout.diff.forms import load_documents
from rollout.plan.checks import VARIANT_LABEL, Check, checks_for
from rollout.plan.steps import Action, ComposeCall, Mode
from rollout.release import changelog
from rollout.release.record import format_time
from rollout.release.tagset import AgeGate, IgnoredTag, ReleaseTag, TagSet
from tierops.composebin import DUMMY_ENV, ComposeBinary, run_config
from tierops.errors import InputError, RefusedError, UsageError
from tierops.roles import Role, SpellingError, key_values, roles_of

EMERGENCY_HINT = "an emergency before then follows docs/releasing.md (Emergency path), never a lower gate"


@dataclass(frozen=True)
class Step:
    service: str
    action: str  # stage, preview, down, up, verify
    call: ComposeCall | None
    why: str
    checks: tuple[Check, ...] = ()


@dataclass(frozen=True)
class Rollback:
    file: str
    services: tuple[str, ...]
    deployed: ReleaseTag
    target: ReleaseTag
    changed: tuple[str, ...]  # services whose definition differs at the target
    unchanged: tuple[str, ...]  # services the target defines identically: not touched
    passed_over: tuple[ReleaseTag, ...]  # newer tags with the deployed definition
    rendered_with: str
    steps: tuple[Step, ...]
    ignored: tuple[IgnoredTag, ...] = ()  # v0.0.* tags newer than the target that are not releases
    # Telemetry rolled back with the named services: it carries their labels (the
    # collector's scrape jobs name each engine's variant).
    followers: tuple[str, ...] = ()
    # Why telemetry that differs too is left alone (it would mislabel another service).
    warnings: tuple[str, ...] = ()
    # What the rollback applies, in the diff's words: one line per service it recreates.
    applies: tuple[str, ...] = ()


def choose_target(
    tags: Sequence[ReleaseTag], file: str, services: Sequence[str], deployed: ReleaseTag
) -> tuple[ReleaseTag, tuple[ReleaseTag, ...]]:
    """The newest release tag older than `deployed` whose definition of `services` differs."""
    current = deployed.record.definition(file, services)
    passed_over: list[ReleaseTag] = []
    for tag in reversed(tags):
        if tag.number >= deployed.number:
            continue
        if tag.record.definition(file, services) != current:
            return tag, tuple(passed_over)
        passed_over.append(tag)
    oldest = passed_over[-1].name if passed_over else deployed.name
    raise RefusedError(
        f"no release tag older than {deployed.name} defines {', '.join(services)} in {file} "
        f"differently (read back to {oldest}): there is nothing to roll back to"
    )


def plan_rollback(
    repo: Path,
    tags: TagSet,
    file: str,
    services: Sequence[str],
    *,
    from_tag: str | None,
    gate: AgeGate,
    now: datetime,
    compose: ComposeBinary | None,
) -> Rollback:
    """Choose, check and render the rollback; RefusedError/UsageError say why not.

    `compose` None skips rendering (only for callers that render themselves)."""
    usable = tags.require()
    wanted = tuple(dict.fromkeys(services))
    deployed = tags.find(from_tag) if from_tag else usable[-1]
    if from_tag is None and not gate.deployable(deployed, now):
        # compose-manager refuses that tag, so no host runs it: the host runs an older
        # one, and a rollback computed from the newest tag would start from the wrong file.
        raise RefusedError(
            f"the newest release tag {deployed.name} is not deployable until "
            f"{format_time(gate.deployable_from(deployed))} (MIN_TAG_AGE_HOURS={gate.hours}), so no host "
            "runs it under the gate",
            hint="pass --from TAG with the tag the host runs (compose-manager shows it)",
        )
    at_deployed = deployed.record.digests.get(file)
    if at_deployed is None:
        raise UsageError(
            f"{file} does not exist at {deployed.name}",
            hint=f"files at {deployed.name}: {', '.join(sorted(deployed.record.digests)) or 'none'}",
        )
    missing = [name for name in wanted if name not in at_deployed]
    if missing:
        raise UsageError(
            f"{file} at {deployed.name} has no service {', '.join(missing)}",
            hint=f"its services: {', '.join(sorted(at_deployed))}",
        )

    target, passed_over = choose_target(usable, file, wanted, deployed)
    at_target = target.record.digests.get(file, {})
    absent = [name for name in wanted if name not in at_target]
    if absent:
        what = f"has no service {', '.join(absent)}" if at_target else "does not exist"
        raise RefusedError(
            f"the previous definition is at {target.name}, where {file} {what}: "
            "rolling back would remove it, not restore it; roll it back by hand or pick --from"
        )
    orphans = sorted(set(at_deployed) - set(at_target))
    if orphans:
        # compose-manager's `up` removes orphans: bringing up the old file would kill these with
        # a short timeout instead of their grace period.
        raise RefusedError(
            f"{file} at {target.name} lacks {', '.join(orphans)}, which {deployed.name} defines: "
            f"compose/up from {target.name} would remove {'them' if len(orphans) > 1 else 'it'} as orphans",
            hint="roll back by hand with the orphan rule in mind, or fix forward",
        )
    if not gate.deployable(target, now):
        raise RefusedError(
            f"{target.name} (commit {target.short}, committed {format_time(target.commit_time)}) "
            f"is not deployable until {format_time(gate.deployable_from(target))} "
            f"(MIN_TAG_AGE_HOURS={gate.hours}, measured on the commit date)",
            hint=EMERGENCY_HINT,
        )

    # A service the old tag defines identically is left alone: recreating an engine for
    # nothing costs a model load (15 minutes and more) with one replica serving.
    changed = tuple(name for name in wanted if at_target[name] != at_deployed[name])
    unchanged = tuple(name for name in wanted if name not in changed)
    rendered_with = render_at(repo, target, file, changed, compose) if compose else "not rendered"

    running = _services(_document(repo, deployed, file))
    old_document = _document(repo, target, file)
    previous = _services(old_document)
    roles = roles_of(old_document)
    followers, warnings = _telemetry(wanted, changed, at_deployed, at_target, roles, target.name)
    if followers and compose:
        render_at(repo, target, file, (*changed, *followers), compose)
    steps: list[Step] = []
    for name in (*changed, *followers):
        old_def, new_def = previous.get(name, {}), running.get(name, {})
        moved = _moved(new_def, old_def)
        role = roles.get(name, Role.OTHER)
        if any(change.aspect is Aspect.IMAGE for change in moved) or (
            role is Role.ONE_SHOT and old_def.get("command") != new_def.get("command")
        ):
            steps.append(
                Step(
                    name,
                    "stage",
                    ComposeCall(Action.UP, target.name, file, (name,), Mode.STAGE),
                    f"pull the image of {target.name} while {deployed.name} still serves: "
                    "a `staged` event, nothing started",
                )
            )
        steps += [
            Step(
                name,
                "preview",
                ComposeCall(Action.UP, target.name, file, (name,), Mode.DRY_RUN),
                f"its `plan` event must name no service but {name} (recreate, or unchanged when only a "
                "mounted config differs) and remove nothing; it also writes the old file for the down",
            ),
            Step(
                name,
                "down",
                ComposeCall(Action.DOWN, deployed.name, file, (name,)),
                "a down has no dry run: it stops the service at once",
            ),
            Step(
                name,
                "up",
                ComposeCall(Action.UP, target.name, file, (name,)),
                f"from {target.name}; wait until it is healthy before the next service",
            ),
            Step(
                name,
                "verify",
                None,
                f"it runs its definition at {target.name}",
                checks_for(file, name, role, old_def, Path(file).stem, moved),
            ),
        ]
    # Tags an operator may have taken for the deployed or the previous release: say
    # why they are not (a lightweight v0.0.10 on HEAD is no rollback point).
    ignored = tuple(tag for tag in tags.ignored if (tag.number or -1) > target.number)
    return Rollback(
        file,
        wanted,
        deployed,
        target,
        changed,
        unchanged,
        passed_over,
        rendered_with,
        tuple(steps),
        ignored,
        followers,
        warnings,
        _applies(repo, file, deployed, target, (*changed, *followers)),
    )


def _applies(
    repo: Path, file: str, deployed: ReleaseTag, target: ReleaseTag, services: Sequence[str]
) -> tuple[str, ...]:
    """The diff from the deployed tag to the target, per service the rollback recreates."""
    if not services:
        return ()
    try:
        return tuple(changelog.summary(repo, file, deployed.commit, target.commit, services))
    except changelog.Unreadable as error:
        return (f"(the diff cannot say what it applies: {error})",)


def _telemetry(
    wanted: Sequence[str],
    changed: Sequence[str],
    at_deployed: Mapping[str, str],
    at_target: Mapping[str, str],
    roles: Mapping[str, Role],
    target: str,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The telemetry services whose definition differs at the target too: rolled back
    with the named services, last (the collector scrapes the old labels only once the
    engines run them), unless another service that also differs would then be
    mislabelled, in which case they are left alone and said so."""
    if not changed:
        return (), ()
    differs = [name for name in at_deployed if name in at_target and at_target[name] != at_deployed[name]]
    telemetry = [
        name for name in differs if roles.get(name) in (Role.DCGM, Role.COLLECTOR) and name not in wanted
    ]
    others = [name for name in differs if roles.get(name) is Role.ENGINE and name not in wanted]
    if not telemetry:
        return (), ()
    if others:
        warning = (
            f"{', '.join(telemetry)} differ at {target} too, but so do {', '.join(others)}, which this rollback "
            f"leaves alone: rolling the telemetry back would mislabel them; recreate it by hand once every engine "
            "runs its final definition"
        )
        return (), (warning,)
    ordered = sorted(telemetry, key=lambda name: roles.get(name) is Role.COLLECTOR)  # the collector last
    return tuple(ordered), ()


def _document(repo: Path, tag: ReleaseTag, file: str) -> dict[str, Any]:
    """The compared form of `file` at `tag` (empty when unreadable: the render check
    refuses such a tag anyway)."""
    data = git.show(repo, tag.commit, file)
    if data is None:
        return {}
    try:
        return load_documents(data, where=file)[0]
    except InputError:
        return {}


def _services(document: Mapping[str, Any]) -> dict[str, dict[str, object]]:
    services = document.get("services") or {}
    return {str(name): service for name, service in services.items() if isinstance(service, dict)}


def _moved(now: dict[str, object], then: dict[str, object]) -> tuple[Change, ...]:
    """What a rollback moves that its checks can see: the image and the variant label."""
    changes: list[Change] = []
    if now.get("image") != then.get("image"):
        changes.append(
            Change(
                Aspect.IMAGE,
                Op.CHANGED,
                ("image",),
                "image",
                now.get("image", ABSENT),
                then.get("image", ABSENT),
            )
        )
    if _variant(now) != _variant(then):
        changes.append(Change(Aspect.LABELS, Op.CHANGED, ("labels", VARIANT_LABEL), VARIANT_LABEL))
    return tuple(changes)


def _variant(service: dict[str, object]) -> str | None:
    try:
        return key_values(service.get("labels"), what="labels").get(VARIANT_LABEL)
    except SpellingError:
        return None


def render_at(repo: Path, tag: ReleaseTag, file: str, services: Sequence[str], compose: ComposeBinary) -> str:
    """`docker compose config` of `file` at `tag`, scoped to `services` (which also
    activates their profiles, as compose-manager's scoped `up` does). Uses the tag's own
    ci/dummy.env when it has one: the file and its dummies were checked together."""
    data = git.show(repo, tag.commit, file)
    if data is None:
        raise RefusedError(f"{file} cannot be read at {tag.name} ({tag.short})")
    dummies = git.show(repo, tag.commit, "ci/dummy.env")
    with tempfile.TemporaryDirectory(prefix="tierops-rollback-") as tmp:
        path = Path(tmp) / file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        env_file = DUMMY_ENV
        if dummies is not None:
            env_file = Path(tmp) / "ci" / "dummy.env"
            env_file.parent.mkdir(parents=True, exist_ok=True)
            env_file.write_bytes(dummies)
        result = run_config(compose, path, env_file=env_file, extra_args=("--format", "json", *services))
    if not result.ok:
        raise RefusedError(
            f"{file} at {tag.name} does not render with docker compose config: {result.error_line()}",
            hint="that tag is not a safe rollback point; choose another with --from or fix forward",
        )
    try:
        rendered = set(json.loads(result.stdout).get("services") or {})
    except (ValueError, AttributeError):
        raise RefusedError(f"docker compose config printed no JSON for {file} at {tag.name}") from None
    lost = [name for name in services if name not in rendered]
    if lost:
        raise RefusedError(f"docker compose config of {file} at {tag.name} has no service {', '.join(lost)}")
    env_name = "its ci/dummy.env" if dummies is not None else f"{DUMMY_ENV.name} of this checkout"
    return f"{compose.origin} with {env_name}"
