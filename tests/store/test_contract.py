"""Runs the shipped store contract against every backend of ``conftest.BACKENDS``."""

from stellate.testing.store_contract import *  # noqa: F403
