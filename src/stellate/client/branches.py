"""`Client`'s edit, regenerate, compare and replay: the `Agent` methods of the same names, over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, cast

from pydantic import TypeAdapter

from stellate.agent.branching import Branched
from stellate.agent.comparison import Comparison
from stellate.agent.replay import Replay, ReplayTurn
from stellate.client.errors import error_from_problem
from stellate.engine.events import TurnEvent

if TYPE_CHECKING:
    from stellate.client.remote import Client

__all__ = ["ClientBranches"]

_BRANCHED = TypeAdapter(Branched)
_COMPARISON = TypeAdapter(Comparison)
_REPLAY = TypeAdapter(Replay)
_REPLAY_TURN = TypeAdapter(ReplayTurn)
_TURN_EVENT: TypeAdapter[TurnEvent] = TypeAdapter(TurnEvent)
_STREAM = {"Accept": "text/event-stream"}


class ClientBranches:
    """Mixed into `Client`."""

    def _client(self) -> Client:
        return cast("Client", self)

    async def edit_turn(self, session_id: str, turn: int, content: str, *, label: str | None = None) -> Branched:
        """See `Agent.edit_turn`."""
        body = _compact({"turn": turn, "content": content, "label": label})
        return _BRANCHED.validate_python(await self._client()._call("POST", f"/sessions/{session_id}/edit", json=body))

    def stream_edit_turn(
        self, session_id: str, turn: int, content: str, *, label: str | None = None
    ) -> AsyncIterator[TurnEvent]:
        """See `Agent.stream_edit_turn`; leaving early stops watching (the turn goes on)."""
        body = _compact({"turn": turn, "content": content, "label": label})
        return self._turn_events(f"/sessions/{session_id}/edit", body)

    async def regenerate_turn(self, session_id: str, turn: int | None = None, *, label: str | None = None) -> Branched:
        """See `Agent.regenerate_turn`."""
        body = _compact({"turn": turn, "label": label})
        found = await self._client()._call("POST", f"/sessions/{session_id}/regenerate", json=body)
        return _BRANCHED.validate_python(found)

    def stream_regenerate_turn(
        self, session_id: str, turn: int | None = None, *, label: str | None = None
    ) -> AsyncIterator[TurnEvent]:
        """See `Agent.stream_regenerate_turn`."""
        return self._turn_events(f"/sessions/{session_id}/regenerate", _compact({"turn": turn, "label": label}))

    async def _turn_events(self, path: str, body: dict[str, Any]) -> AsyncIterator[TurnEvent]:
        async for item in self._stream(path, body):
            if isinstance(item, ReplayTurn):  # pragma: no cover - edit streams carry no replay progress
                continue
            yield item

    async def compare_sessions(self, a_id: str, b_id: str) -> Comparison:
        """See `Agent.compare_sessions`."""
        return _COMPARISON.validate_python(await self._client()._call("GET", "/compare", params={"a": a_id, "b": b_id}))

    async def replay_session(self, session_id: str, *, from_turn: int, **settings: str | None) -> Replay:
        """See `Agent.replay_session` (``llm``, ``system_prompt``, ``profile``, ``label`` as keywords)."""
        body = _compact({"from_turn": from_turn, **settings})
        return _REPLAY.validate_python(await self._client()._call("POST", f"/sessions/{session_id}/replay", json=body))

    def stream_replay(
        self, session_id: str, *, from_turn: int, **settings: str | None
    ) -> AsyncIterator[ReplayTurn | TurnEvent]:
        """See `Agent.stream_replay`."""
        return self._stream(f"/sessions/{session_id}/replay", _compact({"from_turn": from_turn, **settings}))

    async def _stream(self, path: str, body: dict[str, Any]) -> AsyncIterator[ReplayTurn | TurnEvent]:
        client = self._client()
        request = client._http.build_request("POST", path, json=body, headers=_STREAM)
        async for name, data in client._events(request):
            if name == "problem":
                raise error_from_problem(int(data.get("status", 500)), data)
            if name == "replay_turn":
                yield _REPLAY_TURN.validate_python(data)
            elif name not in ("branch", "replay_finished"):
                yield _TURN_EVENT.validate_python(data)


def _compact(body: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in body.items() if value is not None}
