from tierops.entry import launch

launch("validators.cli")
