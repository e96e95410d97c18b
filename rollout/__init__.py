"""rollout: compare production files between refs, plan their rollout, tag releases."""
