"""Signals between processes sharing a store: appends wake subscribers, payloads of any size arrive whole."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from stellate.log import make_event
from stellate.store import BaseStore, SessionId
from stellate.store.signals import LOG_CHANNEL, RESYNC, Reassembler, fragments, parse_log_payload

S = SessionId


async def next_payload(subscription: object, timeout: float = 10) -> tuple[str, str]:
    return await asyncio.wait_for(subscription.get(), timeout)  # type: ignore[attr-defined]


async def test_an_append_signals_the_log_channel_after_it_commits(store: BaseStore) -> None:
    await store.create_session(session_id=S("a"), events=[make_event("session/created", {"label": "a"})])
    subscription = await store.signals.subscribe([LOG_CHANNEL])
    await store.append(S("a"), [make_event("memory/put", {"content": "m"})])
    await store.append_batches({S("a"): [make_event("insight/put", {"content": "i"})]})
    assert [parse_log_payload((await next_payload(subscription))[1]) for _ in range(2)] == [("a", 2), ("a", 3)]
    subscription.close()


async def test_a_refused_append_signals_nothing(store: BaseStore) -> None:
    await store.create_session(session_id=S("a"), events=[make_event("session/created", {"label": "a"})])
    subscription = await store.signals.subscribe([LOG_CHANNEL])
    with pytest.raises(Exception):  # noqa: B017 - any refusal will do
        await store.append(S("a"), [make_event("turn/end", {"turn": 1, "reason": "completed"})])
    await store.append(S("a"), [make_event("memory/put", {"content": "m"})])
    assert parse_log_payload((await next_payload(subscription))[1]) == ("a", 2)
    subscription.close()


def test_long_messages_travel_as_fragments_and_come_back_whole() -> None:
    message = "é" * 5000 + "x" * 9000
    parts = fragments(message)
    assert len(parts) > 1 and all(len(p.encode()) <= 7000 for p in parts)
    joiner = Reassembler()
    assert [joiner.add(p) for p in parts][-1] == message
    assert fragments("short") == ["short"] and joiner.add("short") == "short"


def test_a_message_missing_a_fragment_is_dropped() -> None:
    parts = fragments("y" * 20_000)
    joiner = Reassembler()
    assert [joiner.add(p) for p in parts[:1] + parts[2:]] == [None] * (len(parts) - 1)


# -- between processes: PostgreSQL --------------------------------------------------------------


@pytest.fixture
async def pg_pair(pg_url: str, pg_schema: str) -> AsyncIterator[tuple[BaseStore, BaseStore]]:
    """Two stores on one schema, as two processes would have."""
    from stellate.store.postgres import PostgresStore

    first = await PostgresStore.open(pg_url, schema=pg_schema)
    second = await PostgresStore.open(pg_url, schema=pg_schema)
    yield first, second
    await first.close()
    await second.close()


@pytest.mark.postgres
async def test_postgres_carries_signals_between_stores_in_order(pg_pair: tuple[BaseStore, BaseStore]) -> None:
    listener, writer = pg_pair
    await writer.create_session(session_id=S("a"), events=[make_event("session/created", {"label": "a"})])
    subscription = await listener.signals.subscribe([LOG_CHANNEL, "events"])
    for n in range(5):
        await writer.append(S("a"), [make_event("memory/put", {"content": str(n)})])
    await writer.signals.publish("events", fragments("z" * 30_000))
    seen = [await next_payload(subscription) for _ in range(5)]
    assert [parse_log_payload(p) for _, p in seen] == [("a", n) for n in range(2, 7)]
    joiner = Reassembler()
    while (whole := joiner.add((await next_payload(subscription))[1])) is None:
        pass
    assert whole == "z" * 30_000
    subscription.close()


@pytest.mark.postgres
async def test_postgres_signals_stay_inside_their_schema(pg_url: str, pg_pair: tuple[BaseStore, BaseStore]) -> None:
    import uuid

    from stellate.store.postgres import PostgresStore

    listener, _ = pg_pair
    other_schema = f"stellate_test_{uuid.uuid4().hex[:12]}"
    other = await PostgresStore.open(pg_url, schema=other_schema)
    try:
        subscription = await listener.signals.subscribe([LOG_CHANNEL])
        await other.create_session(session_id=S("b"), events=[make_event("session/created", {"label": "b"})])
        await other.append(S("b"), [make_event("memory/put", {"content": "m"})])
        with pytest.raises(TimeoutError):
            await next_payload(subscription, timeout=0.5)
    finally:
        await other.close()
        import psycopg
        from psycopg import sql

        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(other_schema)))


@pytest.mark.postgres
async def test_a_dropped_listener_reconnects_and_says_resync(pg_url: str, pg_pair: tuple[BaseStore, BaseStore]) -> None:
    import psycopg

    listener, writer = pg_pair
    await writer.create_session(session_id=S("a"), events=[make_event("session/created", {"label": "a"})])
    subscription = await listener.signals.subscribe([LOG_CHANNEL])
    with psycopg.connect(pg_url, autocommit=True) as conn:
        killed = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
            (listener.signals.application_name,),  # type: ignore[attr-defined]
        ).fetchall()
    assert killed, "the listener's connection was found"
    assert (await next_payload(subscription))[1] == RESYNC
    deadline = asyncio.get_running_loop().time() + 15
    while True:  # the listener is back when a new append reaches it
        await writer.append(S("a"), [make_event("memory/put", {"content": "again"})])
        try:
            channel, payload = await next_payload(subscription, timeout=0.5)
        except TimeoutError:
            assert asyncio.get_running_loop().time() < deadline, "the listener never came back"
            continue
        if payload != RESYNC:
            break
    assert channel == LOG_CHANNEL and parse_log_payload(payload) is not None
    subscription.close()
