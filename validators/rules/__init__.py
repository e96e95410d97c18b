"""The rule families: each module (or package) is one family with an ID, a SUMMARY and
`check(compose, ctx)`, listed in validators/registry.py; `collector` and `embedded` parse
the configs embedded in a compose file for the families that read them."""
