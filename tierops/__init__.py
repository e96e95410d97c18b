"""Shared plumbing for tierops: errors, exit codes, the YAML factory, atomic writes.

`generators/` writes, `validators/` judges, `rollout/` compares and ships; what all
three need lives here, once.
"""
