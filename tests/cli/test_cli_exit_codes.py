from __future__ import annotations

import pytest

from stellate.cli.exit_codes import EXIT_INTERNAL, EXIT_STATUS, error_line, exit_status
from stellate.errors import (
    ERROR_CODES,
    ConflictError,
    ForkError,
    NotFoundError,
    StellateError,
    StoreError,
    UsageError,
)


def test_every_library_error_code_has_an_exit_status() -> None:
    missing = sorted(set(ERROR_CODES) - set(EXIT_STATUS))
    assert missing == []


def test_only_unnamed_failures_share_the_internal_status() -> None:
    generic = {code for code, status in EXIT_STATUS.items() if status == EXIT_INTERNAL}
    assert generic == {"stellate_error", "unexpected_error", "hook_failed", "internal_error", "http_error"}
    assert 0 not in EXIT_STATUS.values()


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (ForkError("x", code="open_turn"), EXIT_STATUS["open_turn"]),
        (NotFoundError("x"), EXIT_STATUS["session_not_found"]),
        (ConflictError("x", code="store_locked"), EXIT_STATUS["store_locked"]),
        (UsageError("x", code="provider_not_configured"), 78),
    ],
)
def test_codes_map_through_the_table(error: StellateError, status: int) -> None:
    assert exit_status(error) == status


def test_an_unknown_code_falls_back_to_its_error_class() -> None:
    assert exit_status(StoreError("x", code="brand_new_store_code")) == EXIT_STATUS["store_error"]
    assert exit_status(UsageError("x", code="brand_new_usage_code")) == EXIT_STATUS["usage_error"]
    assert exit_status(StellateError("x", code="brand_new")) == EXIT_INTERNAL


def test_the_error_line_is_one_line_naming_the_code() -> None:
    line = error_line(ForkError("boundary 3\nends inside   open turn 1", code="open_turn"))
    assert line == "stellate: boundary 3 ends inside open turn 1 [open_turn]"
