"""Errors raised by stellate.

Every error carries a stable snake_case ``code``; messages may change, codes may not::

    StellateError
    ├── UsageError            caller mistakes, raised at once (bad arguments, empty input)
    ├── InvariantError        an event would break the log's invariants, or a log fails them on load
    ├── FormatError           data that is not stellate's: non-JSON data, unknown event type, corrupt JSONL
    ├── StoreError            persistence failures
    │   ├── ConflictError     a stale expected seq, a duplicate id, a lock held elsewhere
    │   │   ├── SessionBusyError   another writer holds the session's lease (or this writer lost it)
    │   │   └── HasDependentsError  an erase would break sessions that inherit by reference
    │   ├── NotFoundError     no such session
    │   └── SchemaError       a database written by a newer stellate
    ├── ForkError             a fork that cannot be made (see ``ForkErrorCode``)
    ├── LLMError              a model call failed
    │   ├── ProviderError     the provider answered with an error after retries
    │   └── OutputValidationError  the model's structured output stayed invalid after the retries
    └── ArchivedError         a write to an archived session
"""

from __future__ import annotations

import time
from typing import Any, Literal

__all__ = [
    "ERROR_CODES",
    "ArchivedError",
    "ConflictError",
    "ForkError",
    "ForkErrorCode",
    "FormatError",
    "HasDependentsError",
    "InvariantError",
    "LLMError",
    "NotFoundError",
    "OutputValidationError",
    "ProviderError",
    "SchemaError",
    "SessionBusyError",
    "UNAVAILABLE_CODES",
    "StellateError",
    "StoreError",
    "UsageError",
    "is_unavailable",
]


class StellateError(Exception):
    """Root of every error stellate raises on purpose.

    Attributes:
        code: Stable machine-readable code.
        details: JSON-able context (session id, seq, call id...).
    """

    code: str = "stellate_error"

    def __init__(self, message: str, *, code: str | None = None, **details: Any) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.details: dict[str, Any] = details

    @property
    def message(self) -> str:
        """The human-readable message."""
        return str(self.args[0]) if self.args else ""


class UsageError(StellateError):
    """Raised when the caller passes something that can never work (empty input, bad option)."""

    code = "usage_error"


class InvariantError(StellateError):
    """Raised when an event would break a log invariant, or a stored log does not satisfy them."""

    code = "invariant_violation"


class FormatError(StellateError):
    """Raised for data stellate cannot read: non-JSON data, an unknown event type, a corrupt import file."""

    code = "bad_format"


class StoreError(StellateError):
    """Raised when the store cannot do what was asked; nothing was written."""

    code = "store_error"


class ConflictError(StoreError):
    """Raised on a stale expected seq, a duplicate session id or a lock held by another writer."""

    code = "seq_conflict"


class SessionBusyError(ConflictError):
    """Raised when another live writer holds the session's lease (``session_busy``) or took over this one's.

    Code ``lease_lost``: this writer's lease lapsed and was taken before it could write. Either way it is
    retryable and nothing was written.

    Attributes:
        details: ``session_id``, ``holder`` (the owner of the live lease, when known) and ``expires_at``
            (epoch ms at which that lease lapses unless its holder renews it).
    """

    code = "session_busy"

    @property
    def retry_after(self) -> float:
        """Seconds after which a retry may find the session free (at least 0.1)."""
        expires = self.details.get("expires_at")
        return max(0.1, expires / 1000 - time.time()) if isinstance(expires, int) else 1.0


class NotFoundError(StoreError):
    """Raised when a session id is unknown to the store."""

    code = "session_not_found"


class SchemaError(StoreError):
    """Raised when the database schema is newer than this stellate understands."""

    code = "schema_too_new"


ForkErrorCode = Literal[
    "source_not_found",
    "child_exists",
    "invalid_boundary",
    "open_turn",
    "fork_unavailable",
    "profile_not_found",
    "split_rejected",
]


class ForkError(StellateError):
    """Raised when a fork cannot be made; ``code`` is one of ``ForkErrorCode``."""

    code: ForkErrorCode = "invalid_boundary"

    def __init__(self, message: str, *, code: ForkErrorCode, **details: Any) -> None:
        super().__init__(message, code=code, **details)


class LLMError(StellateError):
    """Raised when a model call fails for a reason other than a provider error response."""

    code = "llm_error"


class ProviderError(LLMError):
    """Raised when the provider keeps answering with an error after the configured retries.

    Its code is ``context_overflow`` when the provider refused the prompt as longer than the model's context
    window (the model's real window is smaller than the adapter's ``max_context_tokens``).
    """

    code = "provider_error"


class OutputValidationError(LLMError):
    """Raised when the model's structured output is still invalid after the allowed retries.

    Also raised when the model never answers in the required form. ``details`` hold ``attempts`` and
    ``problems`` (one line per invalid field of the last attempt).
    """

    code = "output_invalid"


class ArchivedError(StellateError):
    """Raised on a write (turn, fork, slot change) to an archived session."""

    code = "session_archived"


class HasDependentsError(ConflictError):
    """Raised when an erase names no choice for the sessions that inherit from it by reference.

    Attributes:
        details: ``session_ids`` (what was to be erased) and ``dependents`` (the sessions that read part of their
            history from them, which ``cascade`` would erase too and ``keep`` would give their own copy).
    """

    code = "has_dependents"


#: Every code stellate can raise, with a one-line meaning; docs and the CLI are checked against it.
ERROR_CODES: dict[str, str] = {
    "stellate_error": "an error of stellate without a more specific code",
    "usage_error": "the call can never work as made; fix the arguments",
    "invariant_violation": "an event would break the event log's rules",
    "bad_format": "data is not valid stellate data (non-JSON, unknown type, corrupt file)",
    "unknown_event_type": "an event type this stellate does not know and that is not marked ignorable",
    "store_error": "the store failed; nothing was written",
    "store_unavailable": "the store cannot be reached (a database restart, a network cut); retry shortly",
    "seq_conflict": "another writer appended first; re-read the head and retry",
    "session_exists": "a session with this id already exists",
    "session_not_found": "no session has this id",
    "schema_too_new": "the database was written by a newer stellate; upgrade stellate",
    "store_locked": "the store file is locked by another process",
    "session_busy": "another writer is running a turn on this session; wait for it or retry later",
    "lease_lost": "this writer's lease expired and another writer took the session; nothing more was written",
    "source_not_found": "the fork source does not exist",
    "child_exists": "the requested child id is taken",
    "invalid_boundary": "the fork boundary is not a seq of the source",
    "open_turn": "the fork boundary lies inside an open turn",
    "fork_unavailable": "the anchored turn has not finished; no fork point exists yet",
    "profile_not_found": "no fork profile has this name",
    "split_rejected": "the split guard refused the fork (too few turns or cooling down)",
    "llm_error": "the model call failed",
    "provider_error": "the provider answered with an error after retries",
    "context_overflow": "the provider refused the prompt as longer than the model's context window",
    "output_invalid": "the model's structured output failed validation after the allowed retries",
    "reply_unstorable": "the model's reply holds characters no store keeps (NUL, lone surrogate); the turn ended",
    "context_too_large": "the input does not fit the model's context even after compression",
    "session_archived": "the session is archived and read-only",
    "schema_behind": "the database needs migrating; run `stellate db migrate`",
    "store_closed": "the store was closed; open it again",
    "unsupported": "the store backend cannot do this operation",
    "adapter_not_found": "no LLM adapter is registered under this name",
    "tool_name_taken": "a tool with this name is already registered",
    "tool_not_found": "no tool is registered under this name",
    "skill_name_taken": "two skills have the same name",
    "hook_failed": "an event hook raised (reported as an event, never raised)",
    "compress_failed": "the compress function failed; the turn went on with a bounded history (recorded as an event)",
    "consolidation_failed": "a scheduled consolidation failed (reported as an event)",
    "unexpected_error": "an exception that is not a stellate error ended the turn",
    "provider_not_configured": "no model provider is configured; the message says what to set",
    "config_invalid": "a config file or environment variable has a bad value",
    "missing_extra": "an optional dependency is not installed; the message names the pip install",
    "store_not_found": "the database does not exist yet",
    "io_error": "a file could not be read or written",
    "turn_cancelled": "the turn was cancelled before it finished (it is recorded as aborted)",
    "validation_error": "the request does not match the API's schema",
    "not_found": "no such API route (or a space this server does not serve)",
    "method_not_allowed": "the route does not accept this HTTP method",
    "http_error": "an HTTP error without a more specific code",
    "unauthorized": "the server needs a valid API key (Authorization: Bearer ...)",
    "read_only_key": "the API key may only read",
    "request_too_large": "the request body is over the server's limit",
    "internal_error": "the server failed unexpectedly (details are in its log, never in the response)",
    "key_not_found": "no API key has this id",
    "keys_required": "the server would listen beyond loopback without API keys",
    "host_not_allowed": "the server does not serve the request's Host (dev mode serves loopback names only)",
    "origin_not_allowed": "a page of another origin may not change state on this server",
    "unsupported_media_type": "a request that changes state sent a body that is not JSON",
    "request_timeout": "the request's body did not arrive within the server's deadline",
    "too_many_streams": "this client or space already holds the most event streams the server allows",
    "port_in_use": "another process already listens on the address `stellate serve` was given",
    "invalid_address": "the host or port to listen on is not a valid address of this machine",
    "bind_refused": "the system refused to let `stellate serve` listen there (a privileged port?)",
    "has_dependents": "other sessions inherit from what an erase names; choose cascade or keep for them",
    "approval_pending": "the session's turn waits for tool calls to be approved or denied; decide them first",
    "approval_decided": "the tool call was already approved or denied (by another approver, or its deadline)",
    "approval_not_found": "the session has no tool call with this id waiting for approval",
    "not_an_image": "the data given as an image is not a PNG, JPEG, GIF or WebP image",
    "image_too_large": "an image is over the size limit",
    "image_path_refused": "an image path lies outside what may be read here (the server takes uploads only)",
    "image_unreachable": "an image URL could not be fetched (error, timeout, or URLs not allowed here)",
    "images_unsupported": "the session's model cannot see images",
    "blob_not_found": "no stored blob (image) has this sha256 in this space",
    "bad_cursor": "a listing's cursor names no session of it (erased, or never handed out); start again without it",
}

#: Codes of a store that failed for now and may answer a retry: a lost connection, a lock held elsewhere.
UNAVAILABLE_CODES = frozenset({"store_unavailable", "store_locked"})


def is_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` says the store cannot answer for now (retry with backoff), not that the request is wrong."""
    return isinstance(exc, StoreError) and exc.code in UNAVAILABLE_CODES
