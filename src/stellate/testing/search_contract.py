"""The message search rules of the store contract (`stellate.store.search`), over the same ``store`` fixture.

`stellate.testing.store_contract` re-exports these tests. Backends rank hits differently, so the rules compare
*sets* of hits, except where one hit is the only answer.
"""

from __future__ import annotations

from typing import Any

import pytest

from stellate.errors import UsageError
from stellate.log import make_event
from stellate.store import BaseStore, ForkRequest
from stellate.store.search import MessageSearch, SearchPage, SearchQuery
from stellate.testing.contract_support import S, turn


def searcher(store: BaseStore) -> MessageSearch:
    """The store as a `MessageSearch` (every backend that runs this contract is one)."""
    assert isinstance(store, MessageSearch), f"{type(store).__name__} does not search messages"
    return store


async def search(store: BaseStore, text: str, **options: Any) -> SearchPage:
    """One page of hits for ``text``."""
    return await searcher(store).search_messages(SearchQuery(text=text, **options))


def found(page: SearchPage) -> set[tuple[str, int]]:
    """The (session id, seq) of each hit."""
    return {(h.session_id, h.seq) for h in page.hits}


async def session(store: BaseStore, sid: str, *turns: tuple[str, str], label: str | None = None) -> None:
    """Session ``sid`` with one completed turn per (user text, reply text).

    Turn ``n``'s user message is at seq ``6n - 4`` and its reply at ``6n - 2``.
    """
    await store.create_session(session_id=S(sid), events=[make_event("session/created", {"label": label or sid})])
    for n, (user, reply) in enumerate(turns, start=1):
        await store.append(S(sid), turn(n, user=user, reply=reply))


async def test_search_finds_user_and_assistant_messages_with_their_place(store: BaseStore) -> None:
    """A hit names the owning session, its label, the message's seq, turn and role, and a highlighted snippet."""
    await session(store, "trip", ("plan a trip to Kyoto", "Kyoto in spring is lovely"), ("and Osaka?", "Osaka too"))
    page = await search(store, "osaka")
    assert found(page) == {("trip", 8), ("trip", 10)}
    by_seq = {h.seq: h for h in page.hits}
    assert (by_seq[8].role, by_seq[8].turn, by_seq[8].label) == ("user", 2, "trip")
    assert (by_seq[10].role, by_seq[10].turn, by_seq[10].archived) == ("assistant", 2, False)
    hit = by_seq[8]
    assert [hit.snippet[a:b].lower() for a, b in hit.highlights] == ["osaka"]
    assert page.next_offset is None


async def test_every_term_must_occur_in_any_case(store: BaseStore) -> None:
    """Terms are ANDed and matched as substrings ignoring case; a message missing one term is not a hit."""
    await session(store, "a", ("Budget for the TRIP", "a cheap trip"), ("budget only", "fine"))
    assert found(await search(store, "trip budget")) == {("a", 2)}
    assert found(await search(store, "BUDG")) == {("a", 2), ("a", 8)}
    assert found(await search(store, "rip")) == {("a", 2), ("a", 4)}
    assert found(await search(store, "nowhere")) == set()


async def test_chinese_text_is_found_by_short_and_long_queries(store: BaseStore) -> None:
    """Chinese has no spaces between words: two-character and longer queries find the message that holds them."""
    await session(store, "cn", ("我想去日本留学，预算有限", "可以考虑东京的语言学校"), ("签证要多久", "一般一个月左右"))
    assert found(await search(store, "日本")) == {("cn", 2)}
    assert found(await search(store, "日本留学")) == {("cn", 2)}
    assert found(await search(store, "东京 学校")) == {("cn", 4)}
    assert found(await search(store, "签")) == {("cn", 8)}
    assert found(await search(store, "法国")) == set()


async def test_a_message_inherited_by_a_fork_is_reported_once_at_its_owner(store: BaseStore) -> None:
    """A fork's inherited messages are hits of their source only; the fork's own messages are hits of the fork."""
    await session(store, "src", ("tell me about lanterns", "paper lanterns"))
    await store.create_session(session_id=S("fork"), fork=ForkRequest(source_id=S("src")))
    await store.append(S("fork"), turn(2, user="more lanterns please", reply="sure"))
    page = await search(store, "lantern")
    assert found(page) == {("src", 2), ("src", 4), ("fork", 8)}
    assert next(h.turn for h in page.hits if h.session_id == "fork") == 2


async def test_archived_sessions_are_searched_only_when_asked(store: BaseStore) -> None:
    """An archived session's messages are hits only with ``include_archived``, and say they are archived."""
    await session(store, "old", ("the glacier walk", "bring boots"))
    await session(store, "new", ("the glacier hut", "book early"))
    await store.append(S("old"), [make_event("session/archived", {})])
    assert found(await search(store, "glacier")) == {("new", 2)}
    page = await search(store, "glacier", include_archived=True)
    assert found(page) == {("old", 2), ("new", 2)}
    assert {h.session_id: h.archived for h in page.hits} == {"old": True, "new": False}


async def test_pages_cover_every_hit_once(store: BaseStore) -> None:
    """Reading page after page by ``next_offset`` returns every hit exactly once, then no next page."""
    for n in range(7):
        await session(store, f"s{n}", (f"ferry number {n}", "noted"))
    seen: list[tuple[str, int]] = []
    offset: int | None = 0
    while offset is not None:
        page = await search(store, "ferry", limit=3, offset=offset)
        assert len(page.hits) <= 3
        seen.extend((h.session_id, h.seq) for h in page.hits)
        offset = page.next_offset
    assert sorted(seen) == sorted((f"s{n}", 2) for n in range(7))


async def test_search_sees_only_the_stores_space(store: BaseStore) -> None:
    """A space's search never returns another space's messages."""
    await session(store, "mine", ("harbour lights", "yes"))
    other = store.in_space("other")
    await session(other, "theirs", ("harbour view", "yes"))
    assert found(await search(store, "harbour")) == {("mine", 2)}
    assert found(await search(other, "harbour")) == {("theirs", 2)}


async def test_query_text_is_data_not_syntax(store: BaseStore) -> None:
    """Characters with a meaning in a backend's query language (``"``, ``%``, ``_``, ``*``, NEAR) match as text."""
    await session(store, "q", ('say "hi" to 50% of *all*', "a_b NEAR c"), ("plain words", "nothing"))
    assert found(await search(store, '"hi"')) == {("q", 2)}
    assert found(await search(store, "50%")) == {("q", 2)}
    assert found(await search(store, "a_b")) == {("q", 4)}
    assert found(await search(store, "*all*")) == {("q", 2)}
    assert found(await search(store, "NEAR")) == {("q", 4)}
    assert found(await search(store, "%")) == {("q", 2)}
    assert found(await search(store, "_")) == {("q", 4)}


async def test_messages_written_by_an_import_are_found(store: BaseStore) -> None:
    """A session whose events arrive with its creation (an import, a copied history) is indexed too."""
    await store.create_session(
        session_id=S("imp"), events=[make_event("session/created", {"label": "imp"}), *turn(1, user="velvet")]
    )
    assert found(await search(store, "velvet")) == {("imp", 2)}


async def test_an_erased_sessions_messages_are_no_longer_found_and_a_kept_fork_owns_its_copy(
    store: BaseStore,
) -> None:
    """An erased session's messages are not found; a fork kept with its own copy owns them, same seqs and turns."""
    await session(store, "src", ("paper lanterns", "lovely"))
    await store.create_session(session_id=S("fork"), fork=ForkRequest(source_id=S("src")))
    await store.append(S("fork"), turn(2, user="more lanterns", reply="sure"))
    await session(store, "other", ("a lantern shop", "closed"))
    await store.erase_sessions([S("src")], dependents="keep")
    page = await search(store, "lantern")
    assert found(page) == {("fork", 2), ("fork", 8), ("other", 2)}
    assert {(h.seq, h.turn) for h in page.hits if h.session_id == "fork"} == {(2, 1), (8, 2)}
    await store.erase_sessions([S("fork"), S("other")])
    assert found(await search(store, "lantern")) == set()


@pytest.mark.parametrize("text", ["", "   ", "x" * 201, " ".join("abcdefghi"), "a\x00b", "\ud800"])
async def test_an_unusable_query_is_a_usage_error(store: BaseStore, text: str) -> None:
    """Empty, too long, too many terms, or a character no stored text holds: refused before any backend is asked."""
    with pytest.raises(UsageError):
        await search(store, text)


__all__ = [name for name in dir() if name.startswith("test_")]  # what `import *` hands a backend's test module
