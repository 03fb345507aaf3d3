"""Errors as RFC 9457 problem details: one table from stellate error ``code`` to HTTP status.

Every error response is ``application/problem+json`` whose ``code`` is the stellate error code (the
same codes the library raises and the client re-raises), so a caller branches on ``code``, never on the
message. Nothing unexpected leaks: an exception stellate did not raise on purpose becomes a 500 problem
with code ``internal_error`` and no traceback (the traceback goes to the server's log).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException
from starlette.routing import Match

from stellate.errors import (
    ArchivedError,
    ConflictError,
    ForkError,
    FormatError,
    InvariantError,
    LLMError,
    NotFoundError,
    StellateError,
    StoreError,
    UsageError,
)

__all__ = [
    "PROBLEM_TYPE",
    "STATUS_BY_CODE",
    "Problem",
    "ProblemError",
    "install_problem_handlers",
    "make_problem",
    "problem_of",
    "problem_response",
    "problem_responses",
    "status_of",
]

log = logging.getLogger("stellate.server")

PROBLEM_TYPE = "urn:stellate:problem:"
"""Prefix of every problem's ``type``; the stellate error code follows it."""

#: Error code -> HTTP status. Codes not listed fall back to their error class (`_BY_CLASS`).
STATUS_BY_CODE: dict[str, int] = {
    "session_not_found": 404,
    "source_not_found": 404,
    "not_found": 404,
    "unauthorized": 401,
    "read_only_key": 403,
    "origin_not_allowed": 403,
    "method_not_allowed": 405,
    "request_timeout": 408,
    "session_busy": 409,
    "lease_lost": 409,
    "open_turn": 409,
    "fork_unavailable": 409,
    "child_exists": 409,
    "session_exists": 409,
    "split_rejected": 409,
    "session_archived": 409,
    "seq_conflict": 409,
    "request_too_large": 413,
    "unsupported_media_type": 415,
    "host_not_allowed": 421,
    "validation_error": 422,
    "invalid_boundary": 422,
    "profile_not_found": 422,
    "adapter_not_found": 422,
    "tool_not_found": 422,
    "context_too_large": 422,
    "context_overflow": 422,
    "usage_error": 422,
    "too_many_streams": 429,
    "store_locked": 503,
    "provider_error": 503,
    "provider_not_configured": 503,
    "llm_error": 503,
    "store_error": 503,
    "store_unavailable": 503,
    "internal_error": 500,
    "has_dependents": 409,
    "approval_pending": 409,
    "approval_decided": 409,
    "approval_not_found": 404,
    "not_an_image": 422,
    "image_too_large": 413,
    "image_path_refused": 422,
    "image_unreachable": 422,
    "images_unsupported": 422,
    "blob_not_found": 404,
}

_BY_CLASS: tuple[tuple[type[StellateError], int], ...] = (
    (NotFoundError, 404),
    (ForkError, 409),
    (ConflictError, 409),
    (ArchivedError, 409),
    (UsageError, 422),
    (FormatError, 422),
    (InvariantError, 422),
    (LLMError, 503),
    (StoreError, 503),
)

#: Seconds a client should wait before retrying a busy session.
RETRY_AFTER_BUSY = 1


class Problem(BaseModel):
    """An RFC 9457 problem, with the stellate error ``code`` and its ``details``."""

    type: str
    title: str
    status: int
    detail: str
    code: str
    details: dict[str, Any] = {}


class ProblemError(Exception):
    """Raised inside the server to answer with a problem (for errors that are the server's own)."""

    def __init__(self, code: str, detail: str, *, status: int | None = None, **details: Any) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.status = status or STATUS_BY_CODE.get(code, 500)
        self.details = details


def status_of(error: StellateError) -> int:
    """The HTTP status of a stellate error: by its code, else by its class, else 500."""
    status = STATUS_BY_CODE.get(error.code)
    if status is not None:
        return status
    return next((status for cls, status in _BY_CLASS if isinstance(error, cls)), 500)


def problem_of(error: BaseException) -> Problem:
    """The problem a turn's error stands for (a cancellation is ``turn_cancelled``; anything else unexpected)."""
    if isinstance(error, StellateError):
        return make_problem(error.code, error.message, status_of(error), error.details)
    if isinstance(error, asyncio.CancelledError):
        return make_problem("turn_cancelled", "the turn was cancelled", 409)
    return make_problem("internal_error", f"unexpected {type(error).__name__}; see the server log", 500)


def make_problem(code: str, detail: str, status: int, details: dict[str, Any] | None = None) -> Problem:
    """A problem body."""
    return Problem(
        type=PROBLEM_TYPE + code,
        title=code.replace("_", " "),
        status=status,
        detail=detail,
        code=code,
        details=_jsonable(details or {}),
    )


def problem_response(
    code: str, detail: str, status: int, details: dict[str, Any] | None = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    """A ``application/problem+json`` response."""
    body = make_problem(code, detail, status, details)
    extra = dict(headers or {})
    if code in ("session_busy", "store_unavailable"):
        extra.setdefault("Retry-After", str(RETRY_AFTER_BUSY))
    return JSONResponse(body.model_dump(), status_code=status, media_type="application/problem+json", headers=extra)


def _jsonable(details: dict[str, Any]) -> dict[str, Any]:
    return {key: value if _is_plain(value) else str(value) for key, value in details.items()}


def _is_plain(value: Any) -> bool:
    """A JSON scalar, or a list of them (``has_dependents`` lists session ids)."""
    if isinstance(value, list):
        return all(isinstance(item, str | int | float | bool | None) for item in value)
    return isinstance(value, str | int | float | bool | None)


async def _on_stellate_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StellateError)
    return problem_response(exc.code, exc.message, status_of(exc), exc.details)


async def _on_problem(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ProblemError)
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
    return problem_response(exc.code, exc.detail, exc.status, exc.details, headers)


async def _on_validation(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = [f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', '')}" for e in exc.errors()]
    return problem_response("validation_error", "; ".join(errors) or "invalid request", 422)


async def _on_http(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 400:  # a body that cannot be parsed (not UTF-8 JSON): a validation problem like the rest
        return problem_response("validation_error", str(exc.detail), 422)
    code = {404: "not_found", 405: "method_not_allowed", 413: "request_too_large"}.get(exc.status_code, "http_error")
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        headers["Allow"] = ", ".join(_allowed_methods(request))
    return problem_response(code, str(exc.detail), exc.status_code, headers=headers)


def _allowed_methods(request: Request) -> list[str]:
    """Every method the path takes (Starlette names only those of the first route matching the path)."""
    methods: set[str] = set()
    for route in request.app.routes:
        match, _ = route.matches(request.scope)
        if match != Match.NONE:
            methods |= set(getattr(route, "methods", None) or ())
    return sorted(methods)


async def _on_unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unexpected error on %s %s", request.method, request.url.path, exc_info=exc)
    return problem_response("internal_error", f"unexpected {type(exc).__name__}; see the server log", 500)


def install_problem_handlers(app: FastAPI) -> None:
    """Answer every error of ``app`` with a problem response."""
    app.add_exception_handler(StellateError, _on_stellate_error)
    app.add_exception_handler(ProblemError, _on_problem)
    app.add_exception_handler(RequestValidationError, _on_validation)
    app.add_exception_handler(HTTPException, _on_http)
    app.add_exception_handler(Exception, _on_unexpected)


_STATUS_TEXT = {
    401: "no valid API key",
    403: "the key may only read, or the request's Origin may not change state",
    404: "unknown session (or one of another space)",
    408: "the request body did not arrive in time",
    409: "conflict with the session's state",
    413: "request body too large",
    415: "a body that is not JSON",
    421: "a Host this server does not serve",
    422: "invalid request",
    503: "the model provider or the store is unavailable",
}


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for the problems a route may answer.

    Always possible: 401 (a key), 403 and 415 (`stellate.server.security`), 408 and 413 (the body), 421 (the
    Host), 422 and 500.
    """
    wanted = sorted({401, 403, 408, 413, 415, 421, 422, 500, *statuses})
    return {
        status: {
            "model": Problem,
            "description": _STATUS_TEXT.get(status, "unexpected server error"),
            "content": {"application/problem+json": {}},
        }
        for status in wanted
    }
