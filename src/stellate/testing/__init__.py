"""Test support shipped with stellate: the store contract suite and a loopback mock of LLM provider APIs.

Third-party store backends can run the same contract suite: see `stellate.testing.store_contract`.
"""
