"""The change model: what differs between two versions of the compose files, as data.

Every rendering (text, Markdown, JSON) and the rollout plan are pure functions of a
`ChangeSet`; none of them looks at the files again. The JSON form is the model itself
(`ChangeSet.to_json()`), and it is complete: applied to the base's compared form
(`forms.py`, over the canonical model) it yields the head's (the tests' oracle,
tests/rollout/diff_oracle.py, applies it by the rules below).

A `Change` is one edit at one `path` in the compared form of a document:

- `op="added"`: `path` names a new mapping key, or a new list item at its head index;
- `op="removed"`: `path` names a mapping key, or a list item at its base index;
- `op="changed"`: the value at `path` (base coordinates) is replaced by `new`; with
  `head_index` set, the list item at base index `path[-1]` moves to `head_index`;
- `op="note"` (aspect `note`): no edit; `path` names the service and `subject` is one
  line a reviewer must read (the container is recreated although nothing changes at
  runtime; the `x-` block that fed the changes).

`subject` is what a reviewer calls the thing (`--chunked-prefill-size`, `HF_TOKEN`,
`healthcheck.interval`); `aspect` groups changes the way reviewers think of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

Key = str | int


class Aspect(StrEnum):
    """What a change is about, in the order a reviewer reads a service."""

    SERVICE = "service"
    IMAGE = "image"
    ARGV = "argv"
    ENTRYPOINT = "entrypoint"
    ENVIRONMENT = "environment"
    LABELS = "labels"
    GPUS = "gpus"
    PORTS = "ports"
    VOLUMES = "volumes"
    DEPENDS_ON = "depends_on"
    HEALTHCHECK = "healthcheck"
    OTHER = "other"
    CONFIG = "config"
    TOP_LEVEL = "top-level"
    NOTE = "note"  # not an edit: what a reviewer must know about the service's changes


ASPECT_ORDER = {aspect: number for number, aspect in enumerate(Aspect)}


class Op(StrEnum):
    ADDED = "added"
    REMOVED = "removed"
    CHANGED = "changed"
    NOTE = "note"  # `subject` is the note; applying the model skips it


class _Absent:
    """Marks "no value on this side" (None is a real value: a bare flag, an env from the host)."""

    _instance: _Absent | None = None

    def __new__(cls) -> _Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()


@dataclass(frozen=True)
class Change:
    aspect: Aspect
    op: Op
    path: tuple[Key, ...]
    subject: str
    old: Any = ABSENT
    new: Any = ABSENT
    head_index: int | None = None
    # Text configs only: the unified diff a reviewer reads (old/new hold the full texts).
    unified: tuple[str, ...] = ()
    # Where the author wrote the value in the base and in the head file ("line:col"),
    # for a service's changes: merge keys and anchors point into the block that holds it.
    at: tuple[str | None, str | None] = (None, None)
    # What the author wrote there, on each side (a scalar exactly, quotes included; a
    # collection in flow style; an argv option as its words), for a service's changes:
    # the lines compare meanings and quote this where it reads otherwise (`300s` -> `5m`).
    written: tuple[str | None, str | None] = (None, None)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "aspect": self.aspect.value,
            "op": self.op.value,
            "path": list(self.path),
            "subject": self.subject,
        }
        if self.old is not ABSENT:
            out["old"] = self.old
        if self.new is not ABSENT:
            out["new"] = self.new
        if self.head_index is not None:
            out["head_index"] = self.head_index
        if self.unified:
            out["unified"] = list(self.unified)
        if self.at != (None, None):
            out["at"] = list(self.at)
        if self.written != (None, None):
            out["written"] = list(self.written)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Change:
        return cls(
            aspect=Aspect(data["aspect"]),
            op=Op(data["op"]),
            path=tuple(data["path"]),
            subject=str(data["subject"]),
            old=data.get("old", ABSENT),
            new=data.get("new", ABSENT),
            head_index=data.get("head_index"),
            unified=tuple(data.get("unified", ())),
            at=tuple(data.get("at", (None, None))),
            written=tuple(data.get("written", (None, None))),
        )


class Status(StrEnum):
    ADDED = "added"
    REMOVED = "removed"
    CHANGED = "changed"
    RENAMED = "renamed"  # files only: the path changed (and maybe the content)
    UNCHANGED = "unchanged"  # files only: bytes differ, meaning does not (spelling, comments)
    ERROR = "error"  # files only: one side cannot be read or parsed


@dataclass(frozen=True)
class ServiceChange:
    name: str
    status: Status
    role: str
    changes: tuple[Change, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status.value,
            "role": self.role,
            "changes": [change.to_json() for change in self.changes],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ServiceChange:
        return cls(
            name=data["name"],
            status=Status(data["status"]),
            role=data["role"],
            changes=tuple(Change.from_json(item) for item in data["changes"]),
        )


@dataclass(frozen=True)
class FileChange:
    """One document of one file (`document` is 1-based, None when the file has one)."""

    path: str
    status: Status
    old_path: str | None = None
    document: int | None = None
    services: tuple[ServiceChange, ...] = ()
    # Inline configs (`configs`/`secrets` content and fields) and every other top-level key.
    others: tuple[Change, ...] = ()
    # Head roles of every service (base roles for services only in the base): folding
    # shows exceptions among services of one role, and the plan orders by role.
    roles: dict[str, str] = field(default_factory=dict)
    # Which services mount each config or secret (head, else base), for "(used by ...)".
    users: dict[str, tuple[str, ...]] = field(default_factory=dict)
    error: str | None = None

    @property
    def label(self) -> str:
        return file_label(self.path, self.old_path, self.document)

    def all_changes(self) -> list[Change]:
        return [change for service in self.services for change in service.changes] + list(self.others)

    def to_json(self) -> dict[str, Any]:
        out = file_identity(self.path, self.old_path, self.document, self.error)
        out["status"] = self.status.value
        out["services"] = [service.to_json() for service in self.services]
        out["others"] = [change.to_json() for change in self.others]
        out["roles"] = dict(self.roles)
        out["users"] = {name: list(users) for name, users in self.users.items()}
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FileChange:
        return cls(
            path=data["path"],
            status=Status(data["status"]),
            old_path=data.get("old_path"),
            document=data.get("document"),
            services=tuple(ServiceChange.from_json(item) for item in data["services"]),
            others=tuple(Change.from_json(item) for item in data["others"]),
            roles=dict(data["roles"]),
            users={name: tuple(users) for name, users in data["users"].items()},
            error=data.get("error"),
        )


@dataclass(frozen=True)
class Side:
    """One end of the comparison: a commit, or the working tree (commit None)."""

    ref: str
    commit: str | None
    how: str = ""  # how the ref was chosen, e.g. "merge-base of HEAD and origin/main"

    @property
    def short(self) -> str:
        return self.commit[:7] if self.commit else "working tree"

    def describe(self) -> str:
        if self.commit is None:
            return "the working tree"
        if self.how.startswith("merge-base"):
            return f"the {self.how} ({self.short})"
        if self.ref and not self.commit.startswith(self.ref):
            return f"{self.ref} ({self.short})"
        return self.short

    def to_json(self) -> dict[str, Any]:
        return {"ref": self.ref, "commit": self.commit, "how": self.how}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Side:
        return cls(ref=data["ref"], commit=data["commit"], how=data.get("how", ""))


@dataclass(frozen=True)
class ChangeSet:
    base: Side
    head: Side
    paths: tuple[str, ...]
    files: tuple[FileChange, ...]
    masked: bool = False

    @property
    def changed_files(self) -> list[FileChange]:
        return [file for file in self.files if file.status is not Status.UNCHANGED]

    @property
    def errors(self) -> list[FileChange]:
        return [file for file in self.files if file.status is Status.ERROR]

    def has_changes(self) -> bool:
        return any(file.status not in (Status.UNCHANGED, Status.ERROR) for file in self.files)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": "tierops.rollout.diff/1",
            "base": self.base.to_json(),
            "head": self.head.to_json(),
            "paths": list(self.paths),
            "masked": self.masked,
            "files": [file.to_json() for file in self.files],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ChangeSet:
        return cls(
            base=Side.from_json(data["base"]),
            head=Side.from_json(data["head"]),
            paths=tuple(data["paths"]),
            files=tuple(FileChange.from_json(item) for item in data["files"]),
            masked=bool(data.get("masked", False)),
        )


def file_label(path: str, old_path: str | None, document: int | None) -> str:
    """How a file is named in every report: a rename shows both paths, a multi-document
    file its document number."""
    shown = f"{old_path} -> {path}" if old_path else path
    return f"{shown} (document {document})" if document else shown


def file_identity(path: str, old_path: str | None, document: int | None, error: str | None) -> dict[str, Any]:
    """The JSON keys that identify a file in the change model and in the plan."""
    out: dict[str, Any] = {"path": path}
    if old_path:
        out["old_path"] = old_path
    if document:
        out["document"] = document
    if error:
        out["error"] = error
    return out
