"""Validators: the production contracts, judged independently of generators/."""
