"""One canonical compose project: what Compose means by each service, whatever the spelling.

Compose's own rendering is the definition. `docker compose config --format json`
(v2.40.3) loads a file, merges its documents as override files, interpolates, turns
every short syntax into the long one, casts strings to the types the spec says, and
prints the result. This package does the same, with one difference: variables are kept
*symbolic*, in the spelling compose prints (`${NAME}`, `${NAME:-default}`, a literal
`$` as `$$`), so the model is the same whatever the host's environment will be.

    canonical(service) == canonical(other)
        exactly when compose renders them equal, with an environment that gives every
        referenced variable its own distinct value (and with every variable empty, and
        every variable unset: so `${X:-a}` and `${X}` differ, as they do on a host).

tests/tierops/test_equivalence.py proves it against the real binary: on every prod
file, on a corpus of hand-written files, and on generated spelling variants; a
deliberately broken normaliser is shown to fail there.

What each service key becomes (the same as compose prints it):

- `command`/`entrypoint`: a string is split into words by Compose's shell rules
  (`tierops/shellwords.py`, not POSIX); `""` is `[]`; absent is `null`;
- `environment`, `labels`, `sysctls`, `annotations`: a mapping whatever the spelling
  (`K=V` list or mapping); YAML numbers and booleans as Go prints them (`1.50` is
  "1.5"); `K` alone / `K:` is `null` in environment and "" in labels;
- `ports`: the long syntax, one entry per port of a range, `/tcp` and `mode: ingress`
  filled in, `published` a string; `expose`: strings;
- `volumes`: the long syntax (`type`, `source`, `target`, `read_only`, `bind`/`volume`
  options), relative bind sources resolved against the project directory;
- durations as Go prints them (`300s` is `5m0s`), byte sizes as a count of bytes
  (`shm_size: "64"` and `64` are both "64", `1gb` is "1073741824");
- `healthcheck.test` as a list (a string is `[CMD-SHELL, string]`); `depends_on` as a
  mapping with `condition: service_started` and `required: true` filled in;
- quoted numbers and booleans where compose casts them (`init: "true"` is `true`);
- `networks` as a mapping (`default` when none is named and no `network_mode`);
- service-level `x-*` keys dropped (compose drops them; the raw node keeps them).

Keys outside this list are compared as written (after template normalisation): never
equal by accident, at worst reported although compose would not see a change.

Runtime equivalence is a second, coarser reading (`runtime_form`): some spellings that
compose renders differently, and therefore recreates a container for, run the same
(`docker.io/` or not, `CAP_SYS_ADMIN` for `SYS_ADMIN`, memlock `-1` or soft/hard `-1`,
`count: all` where the ids are every GPU of the host). The validators judge by that
reading; the diff reports the rendering change and says nothing changes at runtime.

Every canonical value keeps where it was written: `Service.origin(path)` gives the
position and the raw node (the exact text of a scalar, quotes included), so findings
and diff lines point at and quote the author's text.
"""

from tierops.canonical.merge import merge_documents
from tierops.canonical.model import Key, Origin, PathT, Problem, Project, Service, flow
from tierops.canonical.project import build, build_raw, canonical_value, load
from tierops.canonical.runtime import normalize_image, runtime_form
from tierops.canonical.service import MODELLED_KEYS, SERVICE_KEYS

__all__ = [
    "MODELLED_KEYS",
    "SERVICE_KEYS",
    "Key",
    "Origin",
    "PathT",
    "Problem",
    "Project",
    "Service",
    "build",
    "build_raw",
    "canonical_value",
    "flow",
    "load",
    "merge_documents",
    "normalize_image",
    "runtime_form",
]
