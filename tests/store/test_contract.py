"""Runs the shipped store and digest contracts against every backend of ``conftest.BACKENDS``.

Like a third-party backend, it imports `store_contract` only: that module re-exports the lease, claim and space rules.
"""

from stellate.testing.digest_contract import *  # noqa: F403
from stellate.testing.store_contract import *  # noqa: F403
