"""A Python client of ``stellate serve`` (extra ``server``): `Agent`'s method names over HTTP, async and sync."""

from stellate.client.blocking import SyncClient
from stellate.client.remote import Client

__all__ = ["Client", "SyncClient"]
