"""`Client`: the `Agent` API over HTTP, so code moves between in-process and remote by changing one line.

agent = stellate.Agent("sqlite:///stellate.db", llm=...)          # in-process
agent = stellate.client.Client("http://127.0.0.1:8700", key=...)   # remote, same method names
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

try:
    import httpx
except ImportError as exc:  # pragma: no cover - the extra is installed wherever the client is tested
    raise ImportError('the client needs httpx; install it with `pip install "stellate[server]"`') from exc
from pydantic import TypeAdapter

from stellate.agent import Reflection, SearchPage, SessionDigest, TopologyNode
from stellate.agent.context_window import ContextWindow
from stellate.agent.images import ImagePolicy, ImageSource, load_image
from stellate.agent.topology import forest_of
from stellate.agent.usage_report import UsageReport
from stellate.client.branches import ClientBranches
from stellate.client.errors import error_from_problem
from stellate.client.usage import context_window_from_json, usage_report_from_json
from stellate.engine import ForkOptions, PendingApproval, SessionConfig
from stellate.engine.events import AgentEvent, TurnEvent, TurnResult
from stellate.errors import UsageError
from stellate.log.images import ImageRef, images_from_json
from stellate.log.messages import Message, message_from_json
from stellate.store.erasure import Dependents, ErasePlan, Tombstone

__all__ = ["Client"]

_DIGEST = TypeAdapter(SessionDigest)
_NODES = TypeAdapter(list[TopologyNode])

_RESULT = TypeAdapter(TurnResult)
_SEARCH_PAGE = TypeAdapter(SearchPage)
_TURN_EVENT: TypeAdapter[TurnEvent] = TypeAdapter(TurnEvent)
_AGENT_EVENT: TypeAdapter[AgentEvent] = TypeAdapter(AgentEvent)
_TOMBSTONES = TypeAdapter(list[Tombstone])
_FORK_FIELDS = (
    "label", "context", "prompt", "system_prompt", "profile", "profile_vars", "skills", "tools", "llm",
    "topology_parent_id", "session_id", "boundary", "at_seq",
)  # fmt: skip


class Client(ClientBranches):
    """An async client of ``stellate serve`` with `Agent`'s method names; errors keep their codes.

    Args:
        base_url: The server, e.g. ``http://127.0.0.1:8700``.
        key: An API key (sent as ``Authorization: Bearer``), when the server needs one.
        timeout: Seconds per request (turns may take long: None waits as long as they do).
        transport: An httpx transport (tests pass ``httpx.ASGITransport(app)``).
    """

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8700",
        *,
        key: str | None = None,
        timeout: float | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._http = httpx.AsyncClient(
            base_url=base_url.rstrip("/") + "/v1", headers=headers, timeout=timeout, transport=transport
        )
        self.image_policy = ImagePolicy()
        """What ``turn(images=...)`` reads on this side before uploading (size limit, paths, URLs)."""

    async def close(self) -> None:
        """Close the connections."""
        await self._http.aclose()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        response = await self._http.request(method, path, **kwargs)
        if response.status_code >= 400:
            raise error_from_problem(response.status_code, _json_or_none(response))
        return response.json() if response.content else None

    # -- sessions --------------------------------------------------------------------------------

    async def create_session(
        self,
        *,
        label: str = "",
        system_prompt: str | None = None,
        session_id: str | None = None,
        config: SessionConfig | None = None,
    ) -> SessionDigest:
        """See `Agent.create_session`; ``config`` may name the server's model, tools and skills (names only).

        Raises:
            UsageError: ``config`` holds objects (an adapter, a tool, a function), which cannot cross HTTP.
        """
        body: dict[str, Any] = {"label": label, "system_prompt": system_prompt, "session_id": session_id}
        if config is not None:
            body.update(_names(config))
        return _DIGEST.validate_python(await self._call("POST", "/sessions", json=_compact(body)))

    async def set_system_prompt(self, session_id: str, content: str) -> None:
        """See `stellate.agent.editing.set_system_prompt`."""
        await self._call("PUT", f"/sessions/{session_id}/system_prompt", json={"content": content})

    async def fork_session(self, source_id: str, options: ForkOptions | None = None, **fields: Any) -> SessionDigest:
        """See `Agent.fork_session`; ``llm`` and ``tools`` must be names the server knows."""
        options = options if options is not None else ForkOptions(**fields)
        body = {name: getattr(options, name) for name in _FORK_FIELDS}
        if body["profile_vars"] is not None:
            body["profile_vars"] = dict(body["profile_vars"])
        return _DIGEST.validate_python(await self._call("POST", f"/sessions/{source_id}/forks", json=_compact(body)))

    async def archive_session(self, session_id: str) -> None:
        """See `Agent.archive_session`."""
        await self._call("POST", f"/sessions/{session_id}/archive")

    async def rename_session(self, session_id: str, label: str) -> None:
        """See `stellate.agent.editing.rename_session`."""
        await self._call("PATCH", f"/sessions/{session_id}", json={"label": label})

    # -- turns -----------------------------------------------------------------------------------

    async def turn(self, session_id: str, content: str, *, images: Sequence[ImageSource] = ()) -> TurnResult:
        """See `Agent.turn`; ``images`` (bytes, paths, URLs) are read here, uploaded, then sent by hash."""
        body = await self._turn_body(content, images)
        return _RESULT.validate_python(await self._call("POST", f"/sessions/{session_id}/turns", json=body))

    async def stream(
        self, session_id: str, content: str, *, images: Sequence[ImageSource] = ()
    ) -> AsyncIterator[TurnEvent]:
        """See `Agent.stream`; leaving early stops watching (the turn goes on: see `cancel_turn`)."""
        body = await self._turn_body(content, images)
        request = self._http.build_request(
            "POST", f"/sessions/{session_id}/turns", json=body, headers={"Accept": "text/event-stream"}
        )
        async for name, data in self._events(request):
            if name == "problem":
                raise error_from_problem(int(data.get("status", 500)), data)
            yield _TURN_EVENT.validate_python(data)

    async def _turn_body(self, content: str, images: Sequence[ImageSource]) -> dict[str, Any]:
        body: dict[str, Any] = {"content": content}
        if images:
            body["images"] = [{"sha256": (await self.put_image(source)).sha256} for source in images]
        return body

    async def put_image(self, source: ImageSource) -> ImageRef:
        """See `Agent.put_image`: the image is read and checked here (paths and URLs too), then uploaded."""
        image = await load_image(source, self.image_policy)
        assert image.data is not None
        data = await self._call("POST", "/blobs", json={"data": base64.b64encode(image.data).decode("ascii")})
        return images_from_json([data])[0]

    async def get_image(self, sha256: str) -> bytes:
        """The bytes of a stored image of the key's space (`NotFoundError` ``blob_not_found`` otherwise)."""
        response = await self._http.get(f"/blobs/{sha256}")
        if response.status_code >= 400:
            raise error_from_problem(response.status_code, _json_or_none(response))
        return response.content

    async def cancel_turn(self, session_id: str) -> bool:
        """Abort the session's running turn; False when none runs."""
        return bool((await self._call("POST", f"/sessions/{session_id}/turns/current/cancel"))["cancelled"])

    async def subscribe(self, types: list[str] | None = None) -> AsyncIterator[AgentEvent]:
        """See `Agent.subscribe`: the space's events from now on."""
        params = {"types": ",".join(types)} if types else None
        async for _, data in self._events(self._http.build_request("GET", "/events", params=params)):
            yield _AGENT_EVENT.validate_python(data)

    async def _events(self, request: httpx.Request) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        response = await self._http.send(request, stream=True)
        try:
            if response.status_code >= 400:
                await response.aread()
                raise error_from_problem(response.status_code, _json_or_none(response))
            name, lines = "message", []
            async for line in response.aiter_lines():
                if line.startswith("event:"):
                    name = line[6:].strip()
                elif line.startswith("data:"):
                    lines.append(line[5:].lstrip())
                elif not line and lines:
                    yield name, json.loads("\n".join(lines))
                    name, lines = "message", []
        finally:
            await response.aclose()

    # -- reading ---------------------------------------------------------------------------------

    async def get_session_digest(self, session_id: str) -> SessionDigest:
        """See `Agent.get_session_digest`."""
        found = await self._call("GET", f"/sessions/{session_id}")
        return _DIGEST.validate_python({k: found[k] for k in _DIGEST_FIELDS})

    async def get_session(self, session_id: str) -> dict[str, Any]:
        """Everything about one session except its log (``GET /v1/sessions/{id}``)."""
        found: dict[str, Any] = await self._call("GET", f"/sessions/{session_id}")
        return found

    async def list_session_digests(self) -> list[SessionDigest]:
        """See `Agent.list_session_digests` (every page)."""
        digests: list[SessionDigest] = []
        cursor: str | None = None
        while True:
            params = {"limit": 1000, **({"cursor": cursor} if cursor else {})}
            page = await self._call("GET", "/sessions", params=params)
            digests.extend(_DIGEST.validate_python(item) for item in page["items"])
            cursor = page["next_cursor"]
            if cursor is None:
                return digests

    async def list_session_digests_page(
        self, *, after: str | None = None, limit: int = 100, parent_id: str | None = None, status: str | None = None
    ) -> list[SessionDigest]:
        """See `Agent.list_session_digests_page` (one ``GET /v1/sessions`` page after the session ``after``)."""
        params: dict[str, Any] = {"limit": limit}
        if after is not None:
            params["cursor"] = _cursor_after(after)
        if parent_id is not None:
            params["parent"] = parent_id
        if status is not None:
            params["status"] = status
        page = await self._call("GET", "/sessions", params=params)
        return [_DIGEST.validate_python(item) for item in page["items"]]

    async def get_topology_page(self, *, after: str | None = None, limit: int = 1000) -> list[TopologyNode]:
        """See `Agent.get_topology_page` (one ``GET /v1/forest/nodes`` page)."""
        params: dict[str, Any] = {"limit": limit, **({"cursor": _cursor_after(after)} if after is not None else {})}
        return _NODES.validate_python((await self._call("GET", "/forest/nodes", params=params))["items"])

    async def get_topology(self) -> list[TopologyNode]:
        """See `Agent.get_topology` (every page of ``GET /v1/forest/nodes``, the forest built here)."""
        nodes: list[TopologyNode] = []
        cursor: str | None = None
        while True:
            params = {"limit": 5000, **({"cursor": cursor} if cursor else {})}
            page = await self._call("GET", "/forest/nodes", params=params)
            nodes.extend(_NODES.validate_python(page["items"]))
            cursor = page["next_cursor"]
            if cursor is None:
                return forest_of(nodes)

    async def list_messages(self, session_id: str) -> list[Message]:
        """See `Agent.list_messages`."""
        return [message_from_json(m) for m in await self._call("GET", f"/sessions/{session_id}/transcript")]

    async def list_events(self, session_id: str, *, after: int = -1, limit: int = 200) -> list[dict[str, Any]]:
        """A page of the session's log (``inherited`` marks events read from the fork source)."""
        page = await self._call("GET", f"/sessions/{session_id}/events", params={"after": after, "limit": limit})
        events: list[dict[str, Any]] = page["events"]
        return events

    async def context_at(self, session_id: str, step: int | None = None) -> dict[str, Any]:
        """The exact context of a past model call (see `stellate.agent.inspection.context_at`)."""
        params = {"step": step} if step is not None else None
        found: dict[str, Any] = await self._call("GET", f"/sessions/{session_id}/context", params=params)
        return found

    # -- slots and reflection --------------------------------------------------------------------

    async def put_memory(self, session_id: str, content: str) -> None:
        """See `Agent.put_memory`."""
        await self._call("PUT", f"/sessions/{session_id}/memory", json={"content": content})

    async def put_insight(self, session_id: str, content: str) -> None:
        """See `Agent.put_insight`."""
        await self._call("PUT", f"/sessions/{session_id}/insight", json={"content": content})

    async def clear_insight(self, session_id: str) -> None:
        """See `Agent.clear_insight`."""
        await self._call("DELETE", f"/sessions/{session_id}/insight")

    async def consolidate_session(self, session_id: str) -> str:
        """See `Agent.consolidate_session`."""
        return str((await self._call("POST", f"/sessions/{session_id}/consolidate"))["memory"])

    async def reflect(self, *, synthesis_session_id: str | None = None) -> Reflection:
        """See `Agent.reflect`."""
        found = await self._call("POST", "/reflect", json={"synthesis_session_id": synthesis_session_id})
        return Reflection(synthesis=found["synthesis"], insights=found["insights"], dropped=tuple(found["dropped"]))

    # -- usage -----------------------------------------------------------------------------------

    async def usage_report(self, session_id: str) -> UsageReport:
        """See `Agent.usage_report` (costs by the server's price table)."""
        return usage_report_from_json(await self._call("GET", f"/sessions/{session_id}/usage"))

    async def context_window(self, session_id: str, reply_seq: int | None = None) -> ContextWindow:
        """See `Agent.context_window`."""
        params = {"reply_seq": reply_seq} if reply_seq is not None else None
        return context_window_from_json(
            await self._call("GET", f"/sessions/{session_id}/context-window", params=params)
        )

    # -- erasure ---------------------------------------------------------------------------------

    async def plan_erase(
        self, session_id: str, *, subtree: bool = False, dependents: Dependents | None = None
    ) -> ErasePlan:
        """See `Agent.plan_erase`."""
        params = _compact({"subtree": subtree, "dependents": dependents})
        return _plan(await self._call("GET", f"/sessions/{session_id}/erase-plan", params=params))

    async def erase_session(
        self,
        session_id: str,
        *,
        subtree: bool = False,
        dependents: Dependents | None = None,
        busy_timeout: float | None = None,
    ) -> ErasePlan:
        """See `Agent.erase_session` (the tombstones name this client's API key)."""
        params = _compact({"subtree": subtree, "dependents": dependents, "wait": busy_timeout})
        return _plan(await self._call("DELETE", f"/sessions/{session_id}", params=params))

    async def erase_space(self, *, busy_timeout: float | None = None) -> ErasePlan:
        """See `Agent.erase_space`."""
        return _plan(await self._call("DELETE", "/sessions", params=_compact({"all": True, "wait": busy_timeout})))

    async def prune_sessions(self, older_than: float, *, dry_run: bool = False) -> ErasePlan:
        """See `Agent.prune_sessions`."""
        return _plan(await self._call("POST", "/prune", json={"older_than": older_than, "dry_run": dry_run}))

    async def list_tombstones(self) -> list[Tombstone]:
        """See `Agent.list_tombstones`."""
        return _TOMBSTONES.validate_python(await self._call("GET", "/tombstones"))

    async def capabilities(self) -> dict[str, Any]:
        """What the space offers (``GET /v1/capabilities``).

        Tools, skills, profiles, the served model (``default_model``: provider, model, base URL) and the
        reflector (``reflection``: its model, prompt and schedule; None when there is none).
        """
        found: dict[str, Any] = await self._call("GET", "/capabilities")
        return found

    # -- search ----------------------------------------------------------------------------------

    async def search(
        self, query: str, *, include_archived: bool = False, limit: int = 20, offset: int = 0
    ) -> SearchPage:
        """See `Agent.search`."""
        params = {"q": query, "archived": include_archived, "limit": limit, "offset": offset}
        return _SEARCH_PAGE.validate_python(await self._call("GET", "/search", params=params))

    # -- approvals -------------------------------------------------------------------------------

    async def pending_approvals(self, session_id: str | None = None) -> list[PendingApproval]:
        """See `Agent.pending_approvals`."""
        path = f"/sessions/{session_id}/approvals" if session_id is not None else "/approvals"
        return [PendingApproval(**item) for item in (await self._call("GET", path))["items"]]

    async def approve(
        self, session_id: str, call_id: str, *, arguments: str | None = None, by: str = "user"
    ) -> TurnResult | None:
        """See `Agent.approve`."""
        return await self._decide(session_id, call_id, {"decision": "approve", "arguments": arguments, "by": by})

    async def deny(
        self, session_id: str, call_id: str, *, reason: str | None = None, by: str = "user"
    ) -> TurnResult | None:
        """See `Agent.deny`."""
        return await self._decide(session_id, call_id, {"decision": "deny", "reason": reason, "by": by})

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
        """See `Agent.stream_decision`."""
        body = {"decision": "approve" if approve else "deny", "arguments": arguments, "reason": reason, "by": by}
        request = self._http.build_request(
            "POST",
            f"/sessions/{session_id}/approvals/{call_id}",
            json=_compact(body),
            headers={"Accept": "text/event-stream"},
        )
        async for name, data in self._events(request):
            if name == "problem":
                raise error_from_problem(int(data.get("status", 500)), data)
            yield _TURN_EVENT.validate_python(data)

    async def _decide(self, session_id: str, call_id: str, body: dict[str, Any]) -> TurnResult | None:
        found = await self._call("POST", f"/sessions/{session_id}/approvals/{call_id}", json=_compact(body))
        return _RESULT.validate_python(found["result"]) if found["result"] is not None else None


_DIGEST_FIELDS = (
    "id", "label", "status", "parent_id", "memory", "insight", "turn_count", "last_activity", "awaiting_approval",
)  # fmt: skip


def _names(config: SessionConfig) -> dict[str, Any]:
    if config.consolidate_fn is not None or config.compress_fn is not None or config.system_prompt is not None:
        raise UsageError("over HTTP a session config may set only llm, tools and skills (by name)")
    tools = list(config.tools) if config.tools is not None else None
    if not isinstance(config.llm, str | None) or any(not isinstance(t, str) for t in tools or ()):
        raise UsageError("over HTTP a session's model and tools are named, not passed as objects")
    skills = list(config.skills) if config.skills is not None else None
    return {"llm": config.llm, "tools": tools, "skills": skills}


def _plan(found: Mapping[str, Any]) -> ErasePlan:
    return ErasePlan(erased=tuple(found["erased"]), kept=tuple(found["kept"]), scrubbed=bool(found["scrubbed"]))


def _compact(body: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in body.items() if value is not None}


def _json_or_none(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _cursor_after(session_id: str) -> str:
    """The listing cursor that continues after ``session_id`` (the server's opaque cursor, made the same way)."""
    return base64.urlsafe_b64encode(session_id.encode()).decode().rstrip("=")
