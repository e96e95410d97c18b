import gc

# The collector is off for the whole process, from before the imports: a command makes
# no cycles worth collecting (rollout/cli.py pauses it for runs in other processes too),
# and with it on, the interpreter's exit makes one last pass over everything the run
# still holds: 0.3 s of a 200-service diff.
gc.disable()

from tierops.entry import launch  # noqa: E402 (after the collector is off)

# The interpreter's teardown would free, one by one, every object the run's per-process
# readings still hold (0.1 s of the same diff); the process ends at once instead, its
# output flushed (a closed pipe ends it quietly). Nothing of ours runs at exit: commands
# join their threads and remove their temporary files themselves.
launch("rollout.cli", fast_exit=True)
