"""The loader's budgets: what a file may cost before it is refused, never a hang."""

from __future__ import annotations

# A prod file is about 20 KB and a large hand-written stack a few hundred; 2 MiB keeps
# a 100x margin while bounding the time a file can cost (about 0.5 s per MB here).
MAX_BYTES = 2 * 1024 * 1024
# Compose files nest about 8 levels (services.x.deploy.resources.reservations.devices
# [0].capabilities[0]); 64 leaves room for any hand-written file.
MAX_DEPTH = 64
# Nodes after alias expansion. A prod file has about 2,000; a "billion laughs" reaches
# millions from a few hundred bytes.
MAX_NODES = 200_000
