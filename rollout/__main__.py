import gc

# The collector is off for the whole process, from before the imports: a command makes
# no cycles worth collecting (rollout/cli.py pauses it for runs in other processes too),
# and with it on, the interpreter's exit makes one last pass over everything the run
# still holds: 0.3 s of a 200-service diff (issue 9).
gc.disable()

from rollout.cli import main  # noqa: E402 (after the collector is off)

raise SystemExit(main())
