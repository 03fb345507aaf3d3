"""Full-text search over message text: the query, its hits, the rule every backend matches by, and snippets.

What is searched: the ``content`` of ``user/message`` and ``assistant/message`` events (tool results, imported
context and slot texts are not). The rule is the same on every backend: the query is split on whitespace into
terms, and a message matches when its text contains every term, ignoring case (`matches`). A message lives in
the log of the session that appended it; a fork that inherits it by reference does not hold it again, so a hit
is reported once, at its owning session. Ranking differs by backend; the set of hits does not.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Final, Literal, Protocol, runtime_checkable

from stellate.errors import UsageError
from stellate.log.events import Event, storable_text
from stellate.store._batch import PlannedAppend
from stellate.store.types import SessionId, SessionRecord

__all__ = [
    "MAX_LIMIT",
    "MAX_TERMS",
    "SEARCHED_TYPES",
    "MessageSearch",
    "SearchHit",
    "SearchPage",
    "SearchQuery",
    "hit_of",
    "indexed_messages",
    "make_snippet",
    "matches",
    "page_of",
    "role_of",
    "scan_messages",
    "turn_before",
]

SEARCHED_TYPES: Final = ("user/message", "assistant/message")
"""Event types whose ``content`` is searched."""
MAX_TERMS: Final = 8
"""Most terms a query may have."""
MAX_LIMIT: Final = 100
"""Most hits one page may hold."""
_MAX_QUERY = 200
_SNIPPET_BEFORE = 40
_SNIPPET_WIDTH = 160

Role = Literal["user", "assistant"]


def role_of(event_type: str) -> Role:
    """The role of a searched event type."""
    return "user" if event_type == "user/message" else "assistant"


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchQuery:
    """What to look for, and which page of the hits.

    Raises:
        UsageError: on construction, for an empty or too long query, or a bad ``limit``/``offset``.
    """

    text: str
    """The query: terms separated by whitespace; a message matches when it contains every one (any case)."""
    include_archived: bool = False
    """Search archived sessions too (by default only active ones)."""
    limit: int = 20
    """Hits on this page (1 to `MAX_LIMIT`)."""
    offset: int = 0
    """Hits to skip: the ``next_offset`` of the page before."""

    def __post_init__(self) -> None:
        if storable_text(self.text)[1]:  # no stored text holds these (they are replaced on the way in)
            raise UsageError("the search query holds a NUL character or a lone surrogate; remove it")
        if not self.text.split():
            raise UsageError("the search query is empty; give a word or phrase to look for")
        if len(self.text) > _MAX_QUERY:
            raise UsageError(f"the search query is longer than {_MAX_QUERY} characters; shorten it")
        if len(self.text.split()) > MAX_TERMS:
            raise UsageError(f"the search query has more than {MAX_TERMS} terms; use fewer words")
        if not 1 <= self.limit <= MAX_LIMIT:
            raise UsageError(f"the search limit must be between 1 and {MAX_LIMIT}")
        if self.offset < 0:
            raise UsageError("the search offset must be 0 or more")

    @property
    def terms(self) -> list[str]:
        """The query's terms, lower-cased, each once, in query order."""
        return list(dict.fromkeys(t.lower() for t in self.text.split()))


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchHit:
    """One message that matched. ``label`` and ``snippet`` are untrusted text (show them as text, never markup)."""

    session_id: SessionId
    """The session that holds the message in its own log (forks that inherit it are not listed)."""
    label: str
    """That session's label."""
    archived: bool
    """Whether that session is archived."""
    seq: int
    """The message's seq in that session's log."""
    turn: int
    """The turn the message belongs to (1 for the first)."""
    role: Role
    """Who wrote it."""
    time: int
    """Epoch milliseconds of the message."""
    snippet: str
    """Part of the message around the first match (whitespace collapsed; ``…`` where cut)."""
    highlights: tuple[tuple[int, int], ...]
    """Where terms occur in ``snippet``: ``(start, end)`` character offsets, in order, not overlapping."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchPage:
    """A page of hits, best first (the backend's ranking; newest first among equals)."""

    hits: list[SearchHit]
    next_offset: int | None
    """The ``offset`` of the next page, or None when this is the last."""


@runtime_checkable
class MessageSearch(Protocol):
    """A store that searches message text (every shipped backend)."""

    async def search_messages(self, query: SearchQuery) -> SearchPage:
        """The page of ``query``'s hits in this store's space."""
        ...


def matches(text: str, terms: Sequence[str]) -> bool:
    """Whether ``text`` contains every (lower-cased) term, ignoring case: the matching rule of every backend."""
    folded = text.lower()
    return all(term in folded for term in terms)


def hit_of(
    *,
    session_id: str,
    label: str,
    status: str,
    seq: int,
    turn: int,
    event_type: str,
    time: int,
    content: str,
    terms: Sequence[str],
) -> SearchHit:
    """A hit from what a backend read for one matching message."""
    snippet, highlights = make_snippet(content, terms)
    return SearchHit(
        session_id=SessionId(session_id),
        label=label,
        archived=status == "archived",
        seq=seq,
        turn=turn,
        role=role_of(event_type),
        time=time,
        snippet=snippet,
        highlights=highlights,
    )


def page_of(hits: list[SearchHit], query: SearchQuery) -> SearchPage:
    """The page from up to ``limit + 1`` hits read at ``offset`` (the extra one says another page follows)."""
    more = len(hits) > query.limit
    return SearchPage(hits=hits[: query.limit], next_offset=query.offset + query.limit if more else None)


def turn_before(planned: PlannedAppend) -> int:
    """The newest turn started before a planned batch (the record after it, less the turns the batch starts)."""
    return planned.record.cursor.last_turn - sum(1 for e in planned.events if e.type == "turn/start")


def scan_messages(logs: Iterable[tuple[SessionRecord, Sequence[Event]]], query: SearchQuery) -> SearchPage:
    """Search by reading every message: for stores without an index (each session with its *own* events).

    Hits come newest first (then by session id, then latest seq first).
    """
    terms = query.terms
    found: list[tuple[SessionRecord, Event, int]] = []
    for record, own in logs:
        if record.status == "archived" and not query.include_archived:
            continue
        found.extend((record, e, turn) for e, turn in indexed_messages(own, 0) if matches(e.data["content"], terms))
    found.sort(key=lambda f: (-f[1].time, f[0].id, -f[1].seq))
    chosen = found[query.offset : query.offset + query.limit + 1]
    hits = [
        hit_of(
            session_id=r.id,
            label=r.label,
            status=r.status,
            seq=e.seq,
            turn=turn,
            event_type=e.type,
            time=e.time,
            content=e.data["content"],
            terms=terms,
        )
        for r, e, turn in chosen
    ]
    return page_of(hits, query)


def indexed_messages(events: Sequence[Event], turn: int) -> Iterator[tuple[Event, int]]:
    """The searchable messages of a run of one log's events, each with its turn.

    Args:
        events: Consecutive events of one session's own log.
        turn: The newest turn started before the first of them (0 before any).
    """
    for event in events:
        if event.type == "turn/start":
            turn = int(event.data["turn"])
        elif event.type in SEARCHED_TYPES and event.data.get("content"):
            yield event, turn


def make_snippet(text: str, terms: Sequence[str]) -> tuple[str, tuple[tuple[int, int], ...]]:
    """Part of ``text`` around the first match of any term, and where the terms occur in it."""
    flat = " ".join(text.split())
    folded = flat.lower()
    found = [i for i in (folded.find(t) for t in terms) if i >= 0]
    first = min(found) if found else 0
    start = max(0, first - _SNIPPET_BEFORE)
    end = min(len(flat), start + _SNIPPET_WIDTH)
    start = max(0, min(start, end - _SNIPPET_WIDTH))
    lead, tail = ("…" if start > 0 else ""), ("…" if end < len(flat) else "")
    snippet = lead + flat[start:end] + tail
    folded_snippet = snippet.lower()
    if len(folded_snippet) != len(snippet):  # a few letters lower-case to two characters: offsets would drift
        return snippet, ()
    return snippet, _highlights(folded_snippet, terms)


def _highlights(folded: str, terms: Sequence[str]) -> tuple[tuple[int, int], ...]:
    spans: list[tuple[int, int]] = []
    for term in terms:
        at = folded.find(term)
        while at >= 0:
            spans.append((at, at + len(term)))
            at = folded.find(term, at + len(term))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return tuple(merged)
