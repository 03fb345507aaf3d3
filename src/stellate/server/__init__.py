"""The HTTP server (extra ``server``): a REST + SSE API over the forest, with spaces and API keys.

from stellate.server import create_app
app = create_app(agent)          # serve with any ASGI server, or run `stellate serve`
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stellate.server.app import create_app

__all__ = ["create_app"]

_HINT = 'the server needs FastAPI and uvicorn; install them with `pip install "stellate[server]"`'


def __getattr__(name: str) -> Any:
    # Lazy, so `stellate.server.keys` (used by `stellate keys`) imports without the extra.
    if name != "create_app":
        raise AttributeError(name)
    try:
        from stellate.server.app import create_app
    except ImportError as exc:
        if exc.name in ("fastapi", "fastapi_offline", "starlette", "uvicorn", "pydantic"):
            raise ImportError(_HINT) from exc
        raise
    return create_app
