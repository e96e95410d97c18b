"""`rollout diff`: files compared as Compose reads them, and the change model they yield.

snapshot (the two sides: a ref or the working tree), forms (each file's compared form:
the canonical model, argv as flags), document (the diff of two forms: per file, per
service, per flag), changes (the change model), apply (the model applied to the base
yields the head), compare (files to a change set), describe and folding (a change as a
line), masking (secrets never leave the process), report and colour (text, Markdown,
JSON). The command itself is rollout/commands/diff.py.
"""
