"""LLM engines run locally as AWS runs them: AWS's vLLM image as vLLM's own server (:mod:`smkit.llm.engine`),
its LoRA adapter components through the engine's adapter API (:mod:`smkit.llm.adapters`), and a tiny model
to try them with (:mod:`smkit.llm.tiny`). docs/llm.md."""
