"""`rollout release` and `rollout status`: release tags as rollback points.

record (what a tag's message records), tags (making tags: which commits, verified,
created and pushed), changelog, rollback (the steps back to a previous definition),
status (what each host runs, compared with the tags). The commands are
rollout/commands/release.py and rollout/commands/status.py.
"""
