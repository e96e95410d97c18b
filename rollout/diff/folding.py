"""The same change on several services is one line: `r1, r2: + --flag`, exceptions named.

Lines are folded by their exact text (values included, after masking), so two replicas
that got different values never share a line. A folded line names the peers that did
*not* get the change when they share the role of the folded services (an engine flag
added on two of three engines says `(not on r3)`), because that asymmetry is what a
reviewer has to confirm is intended.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Folded:
    subjects: tuple[str, ...]  # services (or scrape jobs) that share the line, in order
    text: str
    missing: tuple[str, ...] = ()  # same-role peers without this change


def fold(
    items: Sequence[tuple[str, str]],
    roles: Mapping[str, str] | None = None,
    peers: Sequence[str] = (),
) -> list[Folded]:
    """Fold (subject, line) pairs, keeping the order in which lines first appear.

    `roles` and `peers` (every subject of the document, changed or not) enable the
    exceptions; without them no exception is computed (scrape jobs, for instance).
    """
    groups: dict[str, list[str]] = {}
    for subject, text in items:
        members = groups.setdefault(text, [])
        if subject not in members:
            members.append(subject)
    result: list[Folded] = []
    for text, members in groups.items():
        missing: tuple[str, ...] = ()
        if roles is not None and len(members) > 1:
            kinds = {roles.get(member) for member in members}
            if len(kinds) == 1:
                kind = kinds.pop()
                missing = tuple(peer for peer in peers if roles.get(peer) == kind and peer not in members)
        result.append(Folded(tuple(members), text, missing))
    return result
