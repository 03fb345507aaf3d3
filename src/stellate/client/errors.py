"""Problem responses back into the typed errors `Agent` raises, by their stable ``code``."""

from __future__ import annotations

from typing import Any

from stellate.errors import (
    ArchivedError,
    ConflictError,
    ForkError,
    HasDependentsError,
    LLMError,
    NotFoundError,
    ProviderError,
    StellateError,
    StoreError,
    UsageError,
)

__all__ = ["error_from_problem"]

_FORK_CODES = frozenset(
    {
        "source_not_found",
        "child_exists",
        "invalid_boundary",
        "open_turn",
        "fork_unavailable",
        "profile_not_found",
        "split_rejected",
    }
)
_BY_CODE: dict[str, type[StellateError]] = {
    "session_not_found": NotFoundError,
    "session_archived": ArchivedError,
    "provider_error": ProviderError,
    "context_overflow": ProviderError,
    "llm_error": LLMError,
    "seq_conflict": ConflictError,
    "session_exists": ConflictError,
    "session_busy": ConflictError,
    "lease_lost": ConflictError,
    "store_locked": ConflictError,
    "turn_cancelled": ConflictError,
    "store_error": StoreError,
    "store_unavailable": StoreError,
    "has_dependents": HasDependentsError,
    "approval_pending": ConflictError,
    "approval_decided": ConflictError,
    "approval_not_found": NotFoundError,
    "blob_not_found": NotFoundError,
    "images_unsupported": LLMError,
}


def error_from_problem(status: int, body: Any) -> StellateError:
    """The error a problem response stands for (same class and ``code`` as in-process, where one exists)."""
    if not isinstance(body, dict) or "code" not in body:
        return StellateError(f"HTTP {status} without a problem body", code="http_error", status=status)
    code, detail = str(body["code"]), str(body.get("detail", ""))
    raw = body.get("details")
    details: dict[str, Any] = (
        {k: v for k, v in raw.items() if k not in ("code", "status")} if isinstance(raw, dict) else {}
    )
    if code in _FORK_CODES:
        return ForkError(detail, code=code, **details)  # type: ignore[arg-type]
    cls = _BY_CODE.get(code)
    if cls is None:
        cls = UsageError if status in (400, 413, 422) else StellateError
    return cls(detail, code=code, status=status, **details)
