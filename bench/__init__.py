"""stellate's benchmarks, side by side with LangGraph and the OpenAI Agents SDK (docs/benchmarks.md).

Run ``python -m bench --quick`` for a sanity pass, ``python -m bench --pg`` for the full run.
"""
