"""What `Agent` offers for tools that need approval: the pending calls, decisions, deadlines, resuming the turn.

A base class of `Agent` (like `stellate.agent.reading`), so the agent's module keeps to its lifecycle, turns and
forks. A decision takes the session's lock and lease like a turn: of two approvers deciding the same call at
once, one wins and the other gets ``approval_decided``. Deciding the last waiting call of a paused turn resumes
that turn's tool loop in the decider's process (`TurnRunner.resume`); the log alone says what to resume, so
it may be another process, or days later.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from stellate.agent.parts import AgentParts
from stellate.agent.turn_notices import turn_error
from stellate.engine.approval import (
    PendingApproval,
    decision_data,
    expired_decisions,
    pending_approvals,
)
from stellate.engine.events import ApprovalDecided, TurnEvent, TurnFinished, TurnResult
from stellate.engine.runner import TurnRunner
from stellate.errors import ConflictError, NotFoundError, SessionBusyError
from stellate.log.events import JsonObject, make_event
from stellate.store import BaseStore, SessionId
from stellate.store.digests import SessionDigest

if TYPE_CHECKING:
    from stellate.session.session import Session

__all__ = ["AgentApprovals", "refuse_paused", "with_approvals"]

#: How many recent decisions a refused decision looks through to tell ``approval_decided`` from ``approval_not_found``.
_DECIDED_LOOKBACK = 500

_Decide = Callable[[list[PendingApproval]], list[JsonObject]]


def refuse_paused(session: Session) -> None:
    """Refuse a new turn on a session whose turn waits for approvals.

    Raises:
        ConflictError: ``approval_pending``.
    """
    cursor = session.history.cursor
    if cursor.paused:
        raise ConflictError(
            f"session {session.id} waits for approval of {len(cursor.awaiting)} tool call(s); "
            "approve or deny them before sending a new message",
            code="approval_pending",
            session_id=session.id,
            call_ids=list(cursor.awaiting),
        )


async def with_approvals(store: BaseStore, digests: list[SessionDigest]) -> list[SessionDigest]:
    """``digests`` with ``awaiting_approval`` counted.

    A listing's columns hold no cursor, so sessions with an open turn (few: running or paused) are read one by one.
    """
    out = []
    for digest in digests:
        if digest.turn_open:
            record = await store.get_session(SessionId(digest.id))
            digest = dataclasses.replace(digest, awaiting_approval=len(record.cursor.awaiting))
        out.append(digest)
    return out


class AgentApprovals(AgentParts):
    """Approval of tool calls; `Agent` provides the store, the sessions, the locks and the turn's parts."""

    # -- reading ---------------------------------------------------------------------------------

    async def pending_approvals(self, session_id: str | None = None) -> list[PendingApproval]:
        """Tool calls waiting for approval: of one session, or (None) of every session of the store.

        Requests whose deadline has passed are decided first (as their tool's ``on_timeout`` says), which
        resumes their turns; what is returned still waits. An archived session's paused turn waits no more: it
        can no longer resume, and is not listed.
        """
        ids = [session_id] if session_id is not None else await self._paused_sessions()
        pending: list[PendingApproval] = []
        for sid in ids:
            await self.settle_approvals(sid)
            session = await self._session(sid)
            if session.is_archived:
                continue
            pending.extend(pending_approvals(session.id, session.history.approvals))
        return pending

    async def _paused_sessions(self) -> list[str]:
        store = await self.store()
        open_ids = [d.id for d in await store.list_digests() if d.turn_open and d.status != "archived"]
        records = [await store.get_session(SessionId(sid)) for sid in open_ids]
        return [r.id for r in records if r.cursor.paused]

    # -- deciding --------------------------------------------------------------------------------

    async def approve(
        self, session_id: str, call_id: str, *, arguments: str | None = None, by: str = "user"
    ) -> TurnResult | None:
        """Approve a waiting tool call (with edited ``arguments``, JSON text, if given); see `decide`."""
        return await self.decide(session_id, call_id, approve=True, arguments=arguments, by=by)

    async def deny(
        self, session_id: str, call_id: str, *, reason: str | None = None, by: str = "user"
    ) -> TurnResult | None:
        """Deny a waiting tool call; the model reads the denial (and ``reason``) as its result; see `decide`."""
        return await self.decide(session_id, call_id, approve=False, reason=reason, by=by)

    async def decide(
        self,
        session_id: str,
        call_id: str,
        *,
        approve: bool,
        arguments: str | None = None,
        reason: str | None = None,
        by: str = "user",
    ) -> TurnResult | None:
        """Decide one waiting call; when it was the turn's last, run the resumed turn and return its result.

        Returns:
            The resumed turn's result, or None while other calls of the turn still wait.

        Raises:
            ConflictError: ``approval_decided`` when the call was decided already (by another approver).
            NotFoundError: ``approval_not_found`` when the session has no such waiting call.
            UsageError: edited arguments that are not a JSON object, or given with a denial.
        """
        result: TurnResult | None = None
        async for event in self.stream_decision(
            session_id, call_id, approve=approve, arguments=arguments, reason=reason, by=by
        ):
            if isinstance(event, TurnFinished):
                result = event.result
        return result

    async def stream_decision(
        self,
        session_id: str,
        call_id: str,
        *,
        approve: bool,
        arguments: str | None = None,
        reason: str | None = None,
        by: str = "user",
    ) -> AsyncIterator[TurnEvent]:
        """Like `decide`, yielding the decision and the resumed turn's events (as `Agent.stream` does)."""

        def pick(pending: list[PendingApproval]) -> list[JsonObject]:
            mine = [p for p in pending if p.call_id == call_id]
            if not mine:
                raise _not_waiting(session_id, call_id)
            chosen = decision_data(mine[0], approve=approve, by=by, arguments=arguments, reason=reason)
            return [chosen, *expired_decisions([p for p in pending if p.call_id != call_id])]

        async for event in self._driven(session_id, pick, call_id):
            yield event

    async def settle_held(self, session: Session) -> None:
        """`settle_approvals` for a session this task holds (its lock and lease, caught up with the store).

        A new turn calls it, so that a passed deadline resumes the paused turn before the new one starts.
        """
        if session.history.cursor.paused and expired_decisions(
            pending_approvals(session.id, session.history.approvals)
        ):
            async for _ in self._driven(session.id, expired_decisions, None):
                pass

    async def settle_approvals(self, session_id: str) -> TurnResult | None:
        """Decide the requests of a session whose deadline has passed (resuming its turn when none waits then).

        Returns:
            The resumed turn's result, or None when nothing was resumed.
        """
        session = await self._session(session_id)
        paused = session.history.cursor.paused and not session.is_archived
        waiting = pending_approvals(session.id, session.history.approvals) if paused else []
        if not expired_decisions(waiting):
            return None
        result: TurnResult | None = None
        async for event in self._driven(session_id, expired_decisions, None):
            if isinstance(event, TurnFinished):
                result = event.result
        return result

    async def expire_approvals(self) -> int:
        """Decide every passed deadline of the store's paused turns (the server runs this periodically).

        Returns:
            How many turns were resumed.
        """
        resumed = 0
        for sid in await self._paused_sessions():
            try:
                resumed += await self.settle_approvals(sid) is not None
            except (ConflictError, NotFoundError):  # another worker decided or resumed it meanwhile
                continue
        return resumed

    # -- the resumed turn ------------------------------------------------------------------------

    async def _driven(self, session_id: str, decide: _Decide, call_id: str | None) -> AsyncIterator[TurnEvent]:
        """Run `_resolve` in its own task (closing the iterator early aborts the resumed turn cleanly)."""
        queue: asyncio.Queue[TurnEvent | None] = asyncio.Queue()
        task = asyncio.get_running_loop().create_task(self._resolve(session_id, decide, call_id, queue))
        try:
            while (event := await queue.get()) is not None:
                yield event
            await task
        finally:
            if not task.done():
                task.cancel()
                await asyncio.wait([task])

    async def _resolve(
        self, session_id: str, decide: _Decide, call_id: str | None, queue: asyncio.Queue[TurnEvent | None]
    ) -> None:
        try:
            async with self._locks.hold(session_id):
                session = await self._session(session_id, fresh=False)
                try:
                    async with session.hold(wait=self.busy_timeout, until_turn_end=True):
                        await self._apply(session, decide, call_id, queue)
                except SessionBusyError:
                    # Another approver holds the session: if it decided this call meanwhile, say so.
                    await session.refresh()
                    if call_id is not None and not _is_waiting(session, call_id):
                        raise await _refusal(session, call_id) from None
                    raise
            self._consolidator.schedule(session)
        finally:
            queue.put_nowait(None)

    async def _apply(
        self, session: Session, decide: _Decide, call_id: str | None, queue: asyncio.Queue[TurnEvent | None]
    ) -> None:
        history = session.history
        waiting = pending_approvals(session.id, history.approvals) if history.cursor.paused else []
        try:
            decisions = decide(waiting)
        except NotFoundError:
            assert call_id is not None
            raise await _refusal(session, call_id) from None
        if not decisions:
            return
        if len(decisions) < len(waiting):  # other calls still wait: record the decisions, stay paused
            await session.writer.write([make_event("tool/approval_decided", d) for d in decisions])
            names = {p.call_id: p.name for p in waiting}
            for data in decisions:
                await self._emit(queue, _decided_event(session.id, names[data["call_id"]], data))
            return
        runner = TurnRunner(
            session, await self._tools_for(session), agent=self, max_rounds=self.max_rounds, approvals=self.approvals
        )
        try:
            async for event in runner.resume(decisions):
                await self._emit(queue, event)
        except Exception as exc:
            await self.events.publish(turn_error(session.id, exc))
            raise

    async def _emit(self, queue: asyncio.Queue[TurnEvent | None], event: TurnEvent) -> None:
        await self.events.publish(event)
        queue.put_nowait(event)


def _is_waiting(session: Session, call_id: str) -> bool:
    return call_id in session.history.cursor.awaiting


def _not_waiting(session_id: str, call_id: str) -> NotFoundError:
    return NotFoundError(
        f"session {session_id} has no tool call {call_id} waiting for approval; list the pending approvals",
        code="approval_not_found",
        session_id=session_id,
        call_id=call_id,
    )


async def _refusal(session: Session, call_id: str) -> ConflictError | NotFoundError:
    """``approval_decided`` when the log holds a decision of ``call_id``, else ``approval_not_found``."""
    recent = await session.store.read_events(
        session.id, types=["tool/approval_decided"], reverse=True, limit=_DECIDED_LOOKBACK
    )
    decided = next((e.data for e in recent if e.data["call_id"] == call_id), None)
    if decided is None:
        return _not_waiting(session.id, call_id)
    return ConflictError(
        f"tool call {call_id} was already {decided['decision']} by {decided['by']}; nothing more to decide",
        code="approval_decided",
        session_id=session.id,
        call_id=call_id,
        decision=decided["decision"],
        by=decided["by"],
    )


def _decided_event(session_id: str, name: str, data: JsonObject) -> ApprovalDecided:
    return ApprovalDecided(
        session_id=session_id,
        call_id=data["call_id"],
        name=name,
        decision=data["decision"],
        by=data["by"],
        arguments=data.get("arguments"),
        reason=data.get("reason"),
    )
