from tierops.entry import launch

launch("rollout.cli")
