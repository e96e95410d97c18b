"""Offline tools for the people who maintain tierops, never on the check path.

`tools.flag_manifest` writes the engine builds' flag manifests that engine-flags reads;
`tools.check_faults` proves that `nox -s check` catches each fault it claims to.
"""
