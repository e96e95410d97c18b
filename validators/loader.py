"""Rule `yaml`: a file is read once, by the one loader, into the one canonical model.

The reading itself is tierops's (`tierops/yamlload/`, then `tierops/canonical/`):
the same loader and model the rollout tools use, so a spelling compose reads as the
same value is the same value to every rule. This module only turns "cannot be read
as a compose file" into exactly one finding with this rule id, so the run goes on with
the next file: invalid UTF-8, a file over the size budget, malformed YAML, a document
that is not a mapping, a duplicate key, a complex key, nesting deeper than the limit,
an undefined or recursive alias, an alias-expansion bomb.

Passing example::

    services:
      nginx:
        image: nginx@sha256:...

Failing example (a duplicate key; compose refuses the file)::

    services:
      nginx:
        image: nginx@sha256:...
        image: nginx:latest        # -> 4:5: duplicate key 'image' (first at line 3) (yaml)
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from pathlib import Path

from tierops.canonical import Project, build
from tierops.yamlload import Loaded, LoadError, YMap, load_bytes, read_regular
from validators.findings import Finding, error

ID = "yaml"
SUMMARY = "the file reads as compose YAML: a regular UTF-8 file within the budgets, no duplicate keys, each document a mapping"


@dataclass(frozen=True)
class Document:
    """One file as the rules read it: the loaded text and its canonical project."""

    path: str  # as displayed in findings (the path the user gave)
    loaded: Loaded
    project: Project

    @property
    def data(self) -> YMap:
        """The merged document as written (documents merged, merge keys applied)."""
        return self.project.raw

    @property
    def lines(self) -> tuple[str, ...]:
        return self.loaded.lines

    @property
    def text(self) -> str:
        return self.loaded.text

    @property
    def stem(self) -> str:
        return Path(self.path).stem


def load_file(path: Path, display: str | None = None) -> Document | Finding:
    """Read and model one file; InputError (exit 2) when it cannot be read at all."""
    shown = display if display is not None else str(path)
    return parse(read_regular(path, shown), shown, project_dir=str(path.parent))


def parse(raw: bytes, path: str, *, project_dir: str | None = None) -> Document | Finding:
    """Bytes to a Document, or the one `yaml` finding that explains why not."""
    try:
        loaded = load_bytes(raw, path)
    except LoadError as problem:
        return error(path, problem.pos, ID, problem.message)
    directory = project_dir if project_dir is not None else posixpath.dirname(path) or "."
    return Document(path, loaded, build(loaded, project_dir=directory))
