"""The DCGM field catalogue: which counter names the pinned dcgm-exporter accepts.

dcgm-exporter resolves every field of its counters CSV by name (go-dcgm's
`GetFieldID`, then its own `DCGM_EXP_*` counters) and refuses to start on a name it
cannot find. The shape check (`^DCGM_(FI|EXP)_[A-Z0-9_]+$`) lets a typo such as
`DCGM_FI_DEV_GPU_UTILIZATION` through ("counters naming a field that does
not exist"); the catalogue does not.

One catalogue per exporter release tag, `validators/contracts/dcgm-fields-<tag>.txt`,
chosen by the tag of the dcgm service's image (`<DCGM version>-<exporter version>`,
e.g. `4.5.3-4.8.2-distroless` -> `dcgm-fields-4.5.3-4.8.2.txt`). Each file's header
records where its list came from and which versions it is for.

Passing example (catalogue 4.5.3-4.8.2)::

    DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).

Failing example::

    DCGM_FI_DEV_GPU_UTILIZATION, gauge, GPU utilization (in %).   # not a DCGM field
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from tierops.errors import InputError

CATALOGUES = Path(__file__).resolve().parents[1] / "contracts"
# `<DCGM x.y.z>-<exporter x.y.z>[-variant]`, the tag of nvcr.io/nvidia/k8s/dcgm-exporter.
_TAG = re.compile(r"^(?P<dcgm>\d+\.\d+\.\d+)-(?P<exporter>\d+\.\d+\.\d+)(?:-[A-Za-z0-9_.-]+)?$")
_HEADER = re.compile(r"^#\s*(?P<key>[a-z_]+):\s*(?P<value>\S.*?)\s*$")
_LINE = re.compile(r"^(?P<name>DCGM_(?:FI|EXP)_[A-Z0-9_]+)\s+(?P<id>\d+|-)$")


@dataclass(frozen=True)
class Catalogue:
    path: Path
    tag: str  # the exporter release, e.g. 4.5.3-4.8.2
    dcgm_version: str
    exporter_version: str
    fields: frozenset[str]

    def __contains__(self, name: object) -> bool:
        return name in self.fields

    @property
    def label(self) -> str:
        return f"dcgm-exporter {self.tag} (DCGM {self.dcgm_version})"


def release_tag(image: str) -> str | None:
    """`nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-distroless@sha256:...` -> `4.5.3-4.8.2`."""
    name = image.split("@", 1)[0].rsplit("/", 1)[-1]
    if ":" not in name:
        return None
    match = _TAG.match(name.split(":", 1)[1])
    return f"{match.group('dcgm')}-{match.group('exporter')}" if match else None


def catalogue_path(tag: str) -> Path:
    return CATALOGUES / f"dcgm-fields-{tag}.txt"


def parse_catalogue(text: str, path: Path) -> Catalogue:
    header: dict[str, str] = {}
    fields: set[str] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            found = _HEADER.match(line)
            if found and found.group("key") not in header:
                header[found.group("key")] = found.group("value")
            continue
        match = _LINE.match(line)
        if match is None:
            raise InputError(f"line {number} is not `NAME ID`: {line!r}", where=str(path))
        fields.add(match.group("name"))
    missing = [key for key in ("tag", "dcgm_version", "exporter_version") if key not in header]
    if missing:
        raise InputError(f"the header lacks {', '.join(missing)}", where=str(path))
    if path.name != f"dcgm-fields-{header['tag']}.txt":
        raise InputError(f"the header says tag {header['tag']}, the file name another", where=str(path))
    if not fields:
        raise InputError("no field names", where=str(path))
    return Catalogue(
        path, header["tag"], header["dcgm_version"], header["exporter_version"], frozenset(fields)
    )


@functools.lru_cache(maxsize=8)
def load_catalogue(path: Path) -> Catalogue:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the DCGM field catalogue: {exc.strerror}", where=str(path)) from None
    return parse_catalogue(text, path)


def catalogue_for(image: str) -> Catalogue | None:
    """The catalogue of the image's exporter release, or None when there is none."""
    tag = release_tag(image)
    if tag is None or not catalogue_path(tag).is_file():
        return None
    return load_catalogue(catalogue_path(tag))


def unknown_field(field: str, catalogue: Catalogue) -> str | None:
    """Why `field` would stop the exporter, or None when the catalogue has it."""
    if field in catalogue:
        return None
    return (
        f"DCGM field {field} does not exist in {catalogue.label}: the exporter refuses to start "
        f"('could not find DCGM field'); catalogue {catalogue.path.name}"
    )
