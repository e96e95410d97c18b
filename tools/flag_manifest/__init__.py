"""The flag-manifest extractor: an engine wheel's CLI flags, read without importing it.

`python -m tools.flag_manifest extract <wheel>` writes `validators/manifest/<package>-
<version>.json` (sglang.py for an SGLang wheel, vllm.py for a vLLM one); engine-flags
reads those files through `validators.manifest.load_manifest`.
"""
