"""Rehearse compose files on this machine's Docker daemon (`python -m rollout.rehearse`).

docs/rehearsal.md is the operator's guide: what is built, what the override changes
and why, the probes, the exit codes and how to read a failure.
"""
