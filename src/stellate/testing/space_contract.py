"""The space rules of the store contract: a handle scoped to a space sees only that space's sessions.

`stellate.testing.store_contract` re-exports these tests, so ``from stellate.testing.store_contract import *`` runs
them; import this module alone to run only them, over the same ``store`` and ``reopen`` fixtures.
"""

from __future__ import annotations

from typing import Any

import pytest

from stellate.errors import ConflictError, ForkError, NotFoundError
from stellate.store import BaseStore, ForkRequest
from stellate.testing.contract_support import S, turn, with_turns

# -- spaces --------------------------------------------------------------------------------------


async def test_a_space_sees_none_of_another_spaces_sessions(store: BaseStore) -> None:
    """A handle scoped to a space cannot read, list, append to, fork from or hang a child under another's session."""
    alpha, beta = store.in_space("alpha"), store.in_space("beta")
    await with_turns(alpha, "a1", 1)
    await with_turns(beta, "b1", 1)
    assert [r.id for r in await alpha.list_sessions()] == ["a1"]
    assert [r.id for r in await beta.list_sessions(roots=True)] == ["b1"]
    assert await store.list_sessions() == []  # the unscoped handle is the default space
    with pytest.raises(NotFoundError):
        await beta.get_session(S("a1"))
    with pytest.raises(NotFoundError):
        await beta.read_events(S("a1"))
    with pytest.raises(NotFoundError):
        await beta.append(S("a1"), turn(2))
    with pytest.raises(NotFoundError):
        await beta.append_batches({S("b1"): turn(2), S("a1"): turn(2)})
    with pytest.raises(ForkError) as info:
        await beta.create_session(session_id=S("b2"), fork=ForkRequest(source_id=S("a1")))
    assert info.value.code == "source_not_found"
    with pytest.raises(NotFoundError):
        await beta.create_session(session_id=S("b3"), parent_id=S("a1"))
    assert (await alpha.get_session(S("a1"))).next_seq == 7  # the refused append wrote nothing
    assert [r.id for r in await beta.list_sessions()] == ["b1"]


async def test_an_id_taken_in_another_space_is_refused_without_its_data(store: BaseStore) -> None:
    """Session ids are unique across spaces: a taken id is refused with ``session_exists`` and nothing else."""
    await with_turns(store.in_space("alpha"), "same", 1)
    with pytest.raises(ConflictError) as info:
        await store.in_space("beta").create_session(session_id=S("same"))
    assert info.value.code == "session_exists"
    assert await store.in_space("beta").list_sessions() == []


async def test_spaces_survive_a_reopen(store: BaseStore, reopen: Any) -> None:
    """A session stays in its space after the store is closed and opened again."""
    await with_turns(store.in_space("alpha"), "a1", 2)
    fresh = await reopen(store)
    assert [r.id for r in await fresh.in_space("alpha").list_sessions()] == ["a1"]
    assert await fresh.list_sessions() == []
    assert len(await fresh.in_space("alpha").read_events(S("a1"))) == 13


__all__ = [name for name in dir() if name.startswith("test_")]  # what `import *` hands a backend's test module
