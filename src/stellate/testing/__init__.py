"""Test support shipped with stellate: the store and digest contract suites and a loopback mock of LLM provider APIs.

Third-party store backends can run the same contract suites: see `stellate.testing.store_contract` (which
re-exports `lease_contract` and `space_contract`) and `stellate.testing.digest_contract`.
"""
