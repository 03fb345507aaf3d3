"""One fan-out per agent for every ``/v1/events`` stream of its space: wakes and text chunks handed to each.

An idle event stream used to hold a signal subscription, two queues and two pump tasks of its own (issue 22,
goal 7). `HistoryFanout` holds them once per agent (so per space, on this event loop): one subscription to
the store's history signal and one to the agent's text chunks, each drained by one task that hands what
came to every open stream's `Listener`, a few slots and a list. It starts with the first stream and stops
with the last. A stream registers before its first read of the history, and the subscription is live by
then: no wake slips by. A listener that falls behind keeps the newest `MAX_PENDING` text chunks (the
relay's queue of one subscriber kept as many).
"""

from __future__ import annotations

import asyncio
import weakref

from stellate.agent import Agent
from stellate.engine.events import TextChunk
from stellate.store.history import HISTORY_CHANNEL, parse_history_payload
from stellate.store.signals import RESYNC, Subscription

__all__ = ["MAX_PENDING", "HistoryFanout", "Listener", "listen", "listening"]

MAX_PENDING = 1000
"""Text chunks a listener keeps while its stream does not take them (the oldest go first)."""
Item = tuple[int | None, TextChunk]


class Listener:
    """What one stream has been handed and not taken yet: text chunks, and whether the history grew."""

    __slots__ = ("items", "texts", "waiter", "woke")

    def __init__(self, texts: bool) -> None:
        self.texts = texts
        self.items: list[Item] = []
        self.woke = False
        self.waiter: asyncio.Future[None] | None = None

    @property
    def pending(self) -> bool:
        """Whether something came since the last `take`."""
        return self.woke or bool(self.items)

    def wake(self) -> None:
        """The history grew (or signals were lost)."""
        self.woke = True
        self._ready()

    def add(self, item: Item) -> None:
        """A text chunk."""
        items = self.items
        items.append(item)
        if len(items) > MAX_PENDING:
            del items[0]
        self._ready()

    def _ready(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait(self, seconds: float) -> None:
        """Return once something is pending, or after ``seconds``."""
        if self.pending:
            return
        loop = asyncio.get_running_loop()
        self.waiter = waiter = loop.create_future()
        timer = loop.call_later(seconds, _settle, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self.waiter = None

    def take(self) -> tuple[bool, list[Item]]:
        """Whether the history grew, and the text chunks, since the last call."""
        woke, items = self.woke, self.items
        self.woke, self.items = False, []
        return woke, items


def _settle(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class HistoryFanout:
    """The open streams of one agent's space on this loop, and the two tasks that feed them."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.loop = asyncio.get_running_loop()
        self.listeners: set[Listener] = set()
        self._signals: Subscription | None = None
        self._wakes: asyncio.Task[None] | None = None
        self._texts: asyncio.Task[None] | None = None
        self._starting = asyncio.Lock()

    @property
    def usable(self) -> bool:
        """On the running loop, and its signal pump (if started) still runs."""
        return self.loop is asyncio.get_running_loop() and not (self._wakes is not None and self._wakes.done())

    async def add(self, listener: Listener) -> None:
        """Start handing ``listener`` what comes; the history signal is subscribed to when this returns."""
        self.listeners.add(listener)
        try:
            if self._wakes is None:
                async with self._starting:
                    if self._wakes is None:
                        store = await self.agent.store()
                        self._signals = await store.signals.subscribe([HISTORY_CHANNEL])
                        self._wakes = self.loop.create_task(self._pump_wakes(self._signals, store.space))
        except BaseException:
            self.remove(listener)
            raise
        if listener.texts and self._texts is None:
            self._texts = self.loop.create_task(self._pump_texts())

    def remove(self, listener: Listener) -> None:
        """Stop handing ``listener`` anything; the last one out stops the pumps."""
        self.listeners.discard(listener)
        if not any(li.texts for li in self.listeners) and self._texts is not None:
            self._texts.cancel()
            self._texts = None
        if not self.listeners:
            if self._wakes is not None:
                self._wakes.cancel()
                self._wakes = None
            if self._signals is not None:
                self._signals.close()
                self._signals = None
            if _BY_AGENT.get(self.agent) is self:
                del _BY_AGENT[self.agent]

    async def _pump_wakes(self, signals: Subscription, space: str) -> None:
        async for _, payload in signals:
            parsed = parse_history_payload(payload)
            if payload == RESYNC or (parsed is not None and parsed[1] == space):
                for listener in list(self.listeners):
                    listener.wake()

    async def _pump_texts(self) -> None:
        async for item in self.agent.text_chunks():
            for listener in list(self.listeners):
                if listener.texts:
                    listener.add(item)


_BY_AGENT: weakref.WeakKeyDictionary[Agent, HistoryFanout] = weakref.WeakKeyDictionary()


async def listen(agent: Agent, *, texts: bool) -> tuple[HistoryFanout, Listener]:
    """A listener of ``agent``'s fan-out (started if it was not); `HistoryFanout.remove` it when done."""
    fanout = _BY_AGENT.get(agent)
    if fanout is None or not fanout.usable:
        fanout = _BY_AGENT[agent] = HistoryFanout(agent)
    listener = Listener(texts)
    await fanout.add(listener)
    return fanout, listener


def listening(agent: Agent) -> int:
    """How many streams listen to ``agent``'s fan-out on the running loop (0: it is stopped)."""
    fanout = _BY_AGENT.get(agent)
    return len(fanout.listeners) if fanout is not None and fanout.usable else 0
