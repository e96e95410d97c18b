"""One module per `python -m rollout` subcommand (pre-commit's commands/ layout).

Each module defines `NAME`, `HELP` (one line), `add_arguments(parser)` and
`run(args) -> int`; `rollout/cli.py` lists them in one plain dict.
"""
