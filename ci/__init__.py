"""What a workflow or a nox session of `check` runs: stages, the record, the pull-request
comment, the pre-commit hooks' entry points, and the lock files. The tools themselves never
import from here."""
