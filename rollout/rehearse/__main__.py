from tierops.entry import launch

launch("rollout.rehearse.cli")
