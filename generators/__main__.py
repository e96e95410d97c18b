from tierops.entry import launch

launch("generators.cli")
