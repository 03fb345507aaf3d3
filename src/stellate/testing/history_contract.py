"""The event history rules of the store contract (`stellate.store.history`), over the same ``store`` fixture.

`stellate.testing.store_contract` re-exports these tests, so ``from stellate.testing.store_contract import *`` runs
them; import this module alone to run only them.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from stellate.store import BaseStore
from stellate.store.history import (
    HISTORY_CHANNEL,
    EventHistory,
    HistoryBounds,
    NewHistoryEntry,
    parse_history_payload,
)
from stellate.testing.contract_support import Clock


def rows(*texts: str, kind: str = "note") -> list[NewHistoryEntry]:
    """History rows of one kind, each ``{"text": ...}``."""
    return [NewHistoryEntry(kind=kind, data=json.dumps({"text": t})) for t in texts]


def history(store: BaseStore) -> EventHistory:
    """The store as an `EventHistory` (every backend that runs this contract is one)."""
    assert isinstance(store, EventHistory), f"{type(store).__name__} keeps no event history"
    return store


def texts(page: Any) -> list[str]:
    """The ``text`` of each entry of a page."""
    return [json.loads(e.data)["text"] for e in page.entries]


async def test_history_ids_start_at_one_and_follow_the_appends(store: BaseStore) -> None:
    """Rows get ids 1, 2, 3, ... in append order, and read back byte for byte with their kind and time."""
    kept = history(store)
    assert (await kept.read_history()).last_id == 0
    first = await kept.append_history(rows("a", "b"))
    second = await kept.append_history([NewHistoryEntry(kind="other", data='{"text": "c",  "x":[1]}')])
    assert [e.id for e in first + second] == [1, 2, 3]
    page = await kept.read_history(after=0)
    assert page.last_id == 3 and page.entries == first + second
    assert page.entries[2].data == '{"text": "c",  "x":[1]}' and page.entries[2].kind == "other"
    assert all(e.time > 0 for e in page.entries)


async def test_history_reads_page_forward_after_an_id_and_newest_without(store: BaseStore) -> None:
    """``after`` pages forward (oldest first); without it a read returns the newest rows; ``before`` bounds both."""
    kept = history(store)
    await kept.append_history(rows(*"abcdefg"))
    assert texts(await kept.read_history(after=2, limit=3)) == ["c", "d", "e"]
    assert texts(await kept.read_history(limit=3)) == ["e", "f", "g"]
    assert texts(await kept.read_history(before=4, limit=2)) == ["b", "c"]
    assert texts(await kept.read_history(after=1, before=4)) == ["b", "c"]
    assert texts(await kept.read_history(after=7)) == []
    assert (await kept.read_history(limit=0)).entries == []


async def test_history_reads_filter_by_kind(store: BaseStore) -> None:
    """``kinds`` keeps only rows of those kinds (none for an empty list), in id order."""
    kept = history(store)
    await kept.append_history(rows("a") + rows("b", kind="turn") + rows("c") + rows("d", kind="turn"))
    assert [e.id for e in (await kept.read_history(after=0, kinds=["turn"])).entries] == [2, 4]
    assert texts(await kept.read_history(kinds=["note", "turn"], limit=3)) == ["b", "c", "d"]
    assert (await kept.read_history(after=0, kinds=[])).entries == []


async def test_each_space_has_its_own_history_and_ids(store: BaseStore) -> None:
    """A space reads only its own rows; each space's ids start at 1; the unscoped handle is the default space."""
    alpha, beta = history(store.in_space("alpha")), history(store.in_space("beta"))
    await alpha.append_history(rows("a1", "a2"))
    await beta.append_history(rows("b1"))
    assert texts(await alpha.read_history(after=0)) == ["a1", "a2"]
    page = await beta.read_history(after=0)
    assert texts(page) == ["b1"] and page.entries[0].id == 1 and page.last_id == 1
    assert (await history(store).read_history(after=0)).entries == []


async def test_history_keeps_only_the_newest_rows_up_to_its_count(store: BaseStore) -> None:
    """Past ``max_entries`` a read returns only the newest that many rows; ids go on from the head."""
    kept = history(store)
    kept.history_bounds = HistoryBounds(max_entries=5)
    for n in range(12):
        await kept.append_history(rows(str(n)))
    page = await kept.read_history(after=0)
    assert [e.id for e in page.entries] == [8, 9, 10, 11, 12] and page.last_id == 12
    assert [e.id for e in (await kept.read_history(limit=100)).entries] == [8, 9, 10, 11, 12]


async def test_history_drops_rows_older_than_its_age_bound(store: BaseStore) -> None:
    """Rows older than ``max_age_ms`` are no longer read; the head keeps its id, so a reader can tell they went."""
    clock = Clock(store)
    kept = history(store)
    kept.history_bounds = HistoryBounds(max_age_ms=60_000)
    await kept.append_history(rows("old"))
    clock.now += 50_000
    await kept.append_history(rows("newer"))
    clock.now += 20_000
    page = await kept.read_history(after=0)
    assert texts(page) == ["newer"] and page.last_id == 2
    clock.now += 60_000
    page = await kept.read_history(after=0)
    assert page.entries == [] and page.last_id == 2


async def test_history_ids_of_concurrent_appenders_never_collide_or_skip(store: BaseStore) -> None:
    """Appenders racing in one space get distinct ids without holes, each batch in one run."""
    kept = history(store)
    batches = await asyncio.gather(*(kept.append_history(rows(f"{n}.1", f"{n}.2")) for n in range(10)))
    ids = sorted(e.id for batch in batches for e in batch)
    assert ids == list(range(1, 21))
    assert all(batch[1].id == batch[0].id + 1 for batch in batches)
    assert len((await kept.read_history(after=0)).entries) == 20


async def test_history_survives_a_reopen(store: BaseStore, reopen: Any) -> None:
    """Rows and the head outlive the store handle: a reopened store reads them and goes on from the head."""
    await history(store.in_space("alpha")).append_history(rows("a", "b"))
    fresh = history((await reopen(store)).in_space("alpha"))
    assert texts(await fresh.read_history(after=0)) == ["a", "b"]
    assert [e.id for e in await fresh.append_history(rows("c"))] == [3]


async def test_a_history_append_signals_its_last_id_and_space(store: BaseStore) -> None:
    """Subscribers of the ``history`` channel hear ``(last id, space)`` of each append."""
    scoped = store.in_space("alpha")
    with await store.signals.subscribe([HISTORY_CHANNEL]) as signals:
        await history(scoped).append_history(rows("a", "b"))
        heard: set[tuple[int, str]] = set()
        while (2, "alpha") not in heard:  # PostgreSQL's NOTIFY comes back too: a second, identical wake
            _, payload = await asyncio.wait_for(signals.get(), 10)
            parsed = parse_history_payload(payload)
            if parsed is not None:
                heard.add(parsed)
    assert heard == {(2, "alpha")}


__all__ = [name for name in dir() if name.startswith("test_")]  # what `import *` hands a backend's test module
