"""JSON bodies of the branching routes (edit, regenerate, replay): pydantic models at the HTTP boundary."""

from __future__ import annotations

from pydantic import Field

from stellate.server.models import MAX_SEQ, _Body

__all__ = ["EditBody", "RegenerateBody", "ReplayBody"]

_TURN = Field(ge=1, le=MAX_SEQ)


class EditBody(_Body):
    """Run a past turn again with a new user message, in a new branch."""

    turn: int = _TURN
    """The turn to edit (1-based, inherited turns included)."""
    content: str = Field(min_length=1, max_length=1_000_000)
    label: str | None = Field(None, min_length=1, max_length=500)
    """The branch's label (default: the source's, with ``· edit N``)."""


class RegenerateBody(_Body):
    """Run a past turn again with its own user message, in a new branch."""

    turn: int | None = Field(None, ge=1, le=MAX_SEQ)
    """The turn to regenerate (default: the last)."""
    label: str | None = Field(None, min_length=1, max_length=500)


class ReplayBody(_Body):
    """Run a session's user messages from a turn on again, in a new branch with other settings."""

    from_turn: int = _TURN
    llm: str | None = None
    """A named model of the server (see ``GET /v1/capabilities``)."""
    system_prompt: str | None = Field(None, max_length=100_000)
    profile: str | None = None
    label: str | None = Field(None, min_length=1, max_length=500)
