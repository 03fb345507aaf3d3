"""Runs the shipped store and digest contracts against every backend of ``conftest.BACKENDS``."""

from stellate.testing.digest_contract import *  # noqa: F403
from stellate.testing.store_contract import *  # noqa: F403
