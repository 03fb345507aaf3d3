"""Runs the shipped store and digest contracts against every backend of ``conftest.BACKENDS``.

Like a third-party backend, it imports `store_contract` only: that module re-exports the lease, claim, space and
history rules.
"""

from stellate.testing.digest_contract import *  # noqa: F403
from stellate.testing.store_contract import *  # noqa: F403


def test_the_store_contract_hands_over_every_rule() -> None:
    """A backend importing `store_contract` alone gets the lease, claim and space rules too."""
    from stellate.testing import (
        approval_contract,
        blob_contract,
        erase_contract,
        history_contract,
        lease_contract,
        listing_contract,
        search_contract,
        space_contract,
        store_contract,
    )

    for module in (
        approval_contract,
        blob_contract,
        erase_contract,
        history_contract,
        lease_contract,
        listing_contract,
        search_contract,
        space_contract,
    ):
        rules = {name for name in vars(module) if name.startswith("test_")}
        assert rules and rules <= set(store_contract.__all__), module.__name__
