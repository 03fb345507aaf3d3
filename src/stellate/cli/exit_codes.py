"""Exit statuses of the ``stellate`` command: one table from error ``code`` to status.

Statuses group codes by what the person at the terminal has to do next (fix the command, pick another
session, retry later, upgrade...). A code missing from the table falls back to its error class, so a new
code never exits 0; a test checks that every code of `stellate.errors.ERROR_CODES` is listed here.
"""

from __future__ import annotations

from stellate.errors import (
    ArchivedError,
    ConflictError,
    ForkError,
    FormatError,
    InvariantError,
    LLMError,
    NotFoundError,
    SchemaError,
    StellateError,
    StoreError,
    UsageError,
)

__all__ = [
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_STATUS",
    "error_line",
    "exit_status",
]

EXIT_OK = 0
EXIT_INTERNAL = 1
"""An unexpected exception: a bug in stellate (``STELLATE_DEBUG=1`` shows the traceback)."""
EXIT_INTERRUPTED = 130
"""Ctrl-C, as shells report SIGINT."""

#: Error code -> exit status.
EXIT_STATUS: dict[str, int] = {
    # 1: failed for a reason stellate cannot name more precisely (also reported as events).
    "stellate_error": EXIT_INTERNAL,
    "unexpected_error": EXIT_INTERNAL,
    "hook_failed": EXIT_INTERNAL,
    "internal_error": EXIT_INTERNAL,
    "http_error": EXIT_INTERNAL,
    # 2: the command can never work as typed; fix it.
    "usage_error": 2,
    "unsupported": 2,
    "tool_name_taken": 2,
    "skill_name_taken": 2,
    "config_invalid": 2,
    "adapter_not_found": 2,
    "tool_not_found": 2,
    "profile_not_found": 2,
    "validation_error": 2,
    "bad_cursor": 2,
    "method_not_allowed": 2,
    "request_too_large": 2,
    "key_not_found": 2,
    "unsupported_media_type": 2,
    "invalid_address": 2,
    # 3: no such session (or no database at all).
    "session_not_found": 3,
    "source_not_found": 3,
    "store_not_found": 3,
    "not_found": 3,
    # 4: the fork point is refused; pick another seq or wait for the turn to end.
    "invalid_boundary": 4,
    "open_turn": 4,
    "fork_unavailable": 4,
    "split_rejected": 4,
    # 5: the id is taken.
    "session_exists": 5,
    "child_exists": 5,
    # 6: someone else is writing; retry.
    "seq_conflict": 6,
    "store_locked": 6,
    "turn_cancelled": 6,
    # 75 (sysexits EX_TEMPFAIL): another writer holds the session; retry later.
    "session_busy": 75,
    "lease_lost": 75,
    "too_many_streams": 75,
    "request_timeout": 75,
    # 7: the database schema does not match this stellate.
    "schema_too_new": 7,
    "schema_behind": 7,
    # 8: data that is not valid stellate data.
    "bad_format": 8,
    "unknown_event_type": 8,
    "invariant_violation": 8,
    # 9: the model call failed.
    "llm_error": 9,
    "provider_error": 9,
    "context_overflow": 9,
    "reply_unstorable": 9,
    "context_too_large": 9,
    "output_invalid": 9,
    "compress_failed": 9,
    "consolidation_failed": 9,
    # 10: the session is read-only.
    "session_archived": 10,
    # 11: the store failed otherwise.
    "store_error": 11,
    "store_unavailable": 11,
    "store_closed": 11,
    # 74 (sysexits EX_IOERR): a file could not be read or written.
    "io_error": 74,
    # 69 (sysexits EX_UNAVAILABLE): the address to listen on is taken or refused; free it or pick another.
    "port_in_use": 69,
    "bind_refused": 69,
    # 78 (sysexits EX_CONFIG): something must be installed or configured first.
    "provider_not_configured": 78,
    "missing_extra": 78,
    "keys_required": 78,
    # 77 (sysexits EX_NOPERM): the API key is missing, unknown or may only read.
    "unauthorized": 77,
    "read_only_key": 77,
    "host_not_allowed": 77,
    "origin_not_allowed": 77,
    # 12: an erase would break sessions forked from it; choose --cascade or --keep.
    "has_dependents": 12,
    # 6 and 3 again: a turn waits for approvals (decide them), or the call to decide is gone.
    "approval_pending": 6,
    "approval_decided": 6,
    "approval_not_found": 3,
    # Images: a refused image is a mistake in the command (2), an unknown blob is not there (3), a model that
    # cannot see images failed the call (9).
    "not_an_image": 2,
    "image_too_large": 2,
    "image_path_refused": 2,
    "image_unreachable": 2,
    "blob_not_found": 3,
    "images_unsupported": 9,
}

# Most specific class first: the fallback for codes the table does not know.
_BY_CLASS: tuple[tuple[type[StellateError], int], ...] = (
    (UsageError, 2),
    (NotFoundError, 3),
    (ForkError, 4),
    (ConflictError, 6),
    (SchemaError, 7),
    (FormatError, 8),
    (InvariantError, 8),
    (LLMError, 9),
    (ArchivedError, 10),
    (StoreError, 11),
)


def exit_status(error: StellateError) -> int:
    """The exit status for ``error``: by its code, else by its class, else `EXIT_INTERNAL`."""
    status = EXIT_STATUS.get(error.code)
    if status is not None:
        return status
    return next((status for cls, status in _BY_CLASS if isinstance(error, cls)), EXIT_INTERNAL)


def error_line(error: StellateError) -> str:
    """``error`` as the single stderr line the command prints: message, then the code in brackets."""
    message = " ".join(error.message.split())
    return f"stellate: {message} [{error.code}]"
