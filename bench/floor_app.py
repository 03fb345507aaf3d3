"""B6's floor: the least a FastAPI app can do for a turn, run as ``python -m bench.floor_app DB PORT MODEL_URL``.

A turn writes the rows a stellate turn's log holds (its 7 events: turn/start, user/message, step/start before
the model call; assistant/message, step/end, model/called, turn/end after it) and updates the session's row
(turn count, last activity): two transactions, the first one committed before the model is called, as
stellate does, on SQLite in WAL at ``synchronous=NORMAL`` (stellate's own setting). The model call is the same
streamed chat completion (the whole history, ``stream: true`` with usage) through one pooled
``httpx.AsyncClient``; the history is kept in memory. No lease, no search index, no event history, no
middleware: what stellate does on top is what the B6 rows compare.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from fastapi import FastAPI, HTTPException
from pydantic import BaseModel

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, label TEXT, turns INTEGER NOT NULL DEFAULT 0, "
    "next_seq INTEGER NOT NULL DEFAULT 0, last_activity INTEGER)",
    "CREATE TABLE IF NOT EXISTS events (session_id TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL, "
    "time INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (session_id, seq))",
)
_INSERT = "INSERT INTO events (session_id, seq, type, time, data) VALUES (?, ?, ?, ?, ?)"
_UPDATE = "UPDATE sessions SET turns = ?, next_seq = ?, last_activity = ? WHERE id = ?"


class NewSession(BaseModel):
    label: str | None = None


class NewTurn(BaseModel):
    content: str


class _Session:
    def __init__(self, sid: str) -> None:
        self.id, self.turns, self.seq = sid, 0, 0
        self.messages: list[dict[str, str]] = []


def _dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, separators=(",", ":"))


def create_floor_app(db: str, model_url: str) -> FastAPI:
    """The floor app over the SQLite file ``db``, calling the chat completions API at ``model_url`` (``/v1``)."""
    conn = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    for statement in _SCHEMA:
        conn.execute(statement)
    sessions: dict[str, _Session] = {}
    holder: dict[str, httpx.AsyncClient] = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        limits = httpx.Limits(max_connections=100, max_keepalive_connections=100)  # as stellate's httpx client
        async with httpx.AsyncClient(base_url=model_url, limits=limits, timeout=60) as client:
            holder["client"] = client
            yield
        conn.close()

    app = FastAPI(lifespan=lifespan)

    def write(session: _Session, rows: list[tuple[str, dict[str, Any]]], now: int) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(
                _INSERT, [(session.id, session.seq + n, kind, now, _dumps(data)) for n, (kind, data) in enumerate(rows)]
            )
            session.seq += len(rows)
            conn.execute(_UPDATE, (session.turns, session.seq, now, session.id))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    @app.get("/v1/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/v1/sessions", status_code=201)
    async def create_session(body: NewSession) -> dict[str, Any]:
        sid = f"s-{uuid.uuid4().hex}"
        conn.execute("INSERT INTO sessions (id, label) VALUES (?, ?)", (sid, body.label))
        sessions[sid] = _Session(sid)
        return {"id": sid, "label": body.label}

    @app.post("/v1/sessions/{sid}/turns")
    async def turn(sid: str, body: NewTurn) -> dict[str, Any]:
        session = sessions.get(sid)
        if session is None:
            raise HTTPException(404, "no such session")
        session.turns += 1
        number, now = session.turns, time.time_ns() // 1_000_000
        before: list[tuple[str, dict[str, Any]]] = [("turn/start", {"turn": number})]
        before.append(("user/message", {"content": body.content}))
        write(session, [*before, ("step/start", {"turn": number, "step": 1})], now)
        session.messages.append({"role": "user", "content": body.content})
        request = {
            "model": "mock",
            "messages": session.messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        text, usage = await _stream(holder["client"], request)
        session.messages.append({"role": "assistant", "content": text})
        now = time.time_ns() // 1_000_000
        after: list[tuple[str, dict[str, Any]]] = [
            ("assistant/message", {"content": text}),
            ("step/end", {"turn": number, "step": 1}),
            ("model/called", {"turn": number, "step": 1, "model": "mock", "usage": usage}),
            ("turn/end", {"turn": number, "reason": "completed"}),
        ]
        write(session, after, now)
        return {"session_id": sid, "turn": number, "content": text, "usage": usage}

    return app


async def _stream(client: httpx.AsyncClient, request: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The streamed completion's text and usage."""
    pieces: list[str] = []
    usage: dict[str, Any] = {}
    async with client.stream("POST", "/chat/completions", json=request) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if not line.startswith("data:") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[5:])
            usage = chunk.get("usage") or usage
            for choice in chunk.get("choices") or ():
                pieces.append((choice.get("delta") or {}).get("content") or "")
    return "".join(pieces), usage


def main() -> None:
    import uvicorn

    db, port, model_url = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    uvicorn.run(create_floor_app(db, model_url), host="127.0.0.1", port=port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
