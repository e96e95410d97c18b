"""`rollout plan` and `rollout apply`: the ordered compose-manager calls for a change set.

planner (what to stage, preview, recreate and verify, in which order, and the
rollback), steps (one call: its body and the command compose-manager runs), checks
(what a verify step looks at), fleet (the hosts of each file, from the fleet's data),
variables (host variables a change starts to read), report (text, Markdown, JSON),
deployer (compose-manager's API as data) and deploy (sending a plan to the hosts). The
commands are rollout/commands/plan.py and rollout/commands/apply.py.
"""
