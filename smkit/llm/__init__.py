"""LLM engines run locally as AWS runs them: what the local endpoint needs to know of AWS's vLLM image (its
server, environment and the engine environment from a pinned lock, :mod:`smkit.llm.engine`; the process
itself is smkit.local.engines) and a tiny model with a LoRA adapter to try it with (:mod:`smkit.llm.tiny`).
docs/llm.md."""
