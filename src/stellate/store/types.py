"""Types shared by every store backend."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NewType, TypeAlias

from stellate.log.cursor import Cursor
from stellate.log.state import Slots

__all__ = [
    "Anchor",
    "Boundary",
    "Claim",
    "CompletedTurn",
    "ForkPoint",
    "ForkRequest",
    "Lease",
    "SessionId",
    "SessionRecord",
]

SessionId = NewType("SessionId", str)


@dataclass(frozen=True, slots=True, kw_only=True)
class Boundary:
    """Fork at an explicit, inclusive seq; refused (never adjusted) when it is not a safe boundary."""

    seq: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Anchor:
    """Fork at the turn holding ``at_seq`` (a message a person clicked); None means the latest completed turn."""

    at_seq: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CompletedTurn:
    """Fork at the source as stored: its whole log, or up to its last completed turn while a turn is open.

    For a fork without an anchor: from inside the source's own running turn (a tool), or beside a turn that
    another task, process or worker runs.
    """


ForkPoint: TypeAlias = Boundary | Anchor | CompletedTurn


@dataclass(frozen=True, slots=True, kw_only=True)
class ForkRequest:
    """Make the new session inherit a prefix of ``source_id``'s log by reference."""

    source_id: SessionId
    point: ForkPoint = field(default_factory=Anchor)


@dataclass(frozen=True, slots=True, kw_only=True)
class Lease:
    """One writer's claim on a session: while it is live, only its holder may run turns there.

    The holder renews it (moving ``expires_at``) while its turn runs and releases it when the turn ends; a
    holder that dies simply stops renewing, and after ``expires_at`` the next writer may take the session
    over. Every append of the holder carries the ``token``, so a holder whose lease lapsed and was taken
    can no longer write (fencing).
    """

    owner: str
    """Who holds it: host, process id and agent (for messages and the UI)."""
    token: str
    """Secret of this grant; a new grant gets a new token, even for the same owner."""
    acquired_at: int
    """Epoch ms of the grant."""
    expires_at: int
    """Epoch ms after which the lease lapses unless renewed."""

    def is_live(self, now: int) -> bool:
        """Whether the lease still holds at ``now`` (epoch ms)."""
        return self.expires_at > now


@dataclass(frozen=True, slots=True, kw_only=True)
class Claim:
    """A short-lived claim on a named piece of background work, so one process does it and the others skip it.

    Unlike a `Lease` it guards no writes: it only says "someone is on it" until ``expires_at`` or release.
    """

    key: str
    """What is claimed, e.g. ``consolidate:<session id>``."""
    owner: str
    token: str
    expires_at: int
    """Epoch ms after which the claim lapses (its holder died, or overran)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionRecord:
    """A session's identity, lineage and materialized state, read in O(1)."""

    id: SessionId
    parent_id: SessionId | None = None
    """Topology parent: where the node hangs in the forest."""
    source_id: SessionId | None = None
    """Session the history came from (may differ from the topology parent)."""
    fork_seq: int | None = None
    """Inclusive seq of the source at which this session forked (None: no inherited prefix)."""
    inherited: int = 0
    """Number of events read from the source by reference; the session's own events start at this seq."""
    created_at: int = 0
    slots: Slots = field(default_factory=Slots)
    cursor: Cursor = field(default_factory=Cursor)
    lease: Lease | None = None
    """The newest lease as stored (None once released); it may have lapsed: ask `Lease.is_live`."""

    @property
    def next_seq(self) -> int:
        """Length of the log: the seq the next event will get."""
        return self.cursor.next_seq

    @property
    def turn_count(self) -> int:
        """Number of turns started in the log, inherited ones included."""
        return self.cursor.last_turn

    @property
    def inherited_turns(self) -> int:
        """Turns read from the fork source (0 for a root, and for a fork stored before stores counted them)."""
        return self.cursor.inherited_turns

    @property
    def own_turns(self) -> int:
        """Turns of the session's own part of the log."""
        return self.cursor.last_turn - self.cursor.inherited_turns

    @property
    def label(self) -> str:
        """Current label."""
        return self.slots.label

    @property
    def status(self) -> str:
        """``active`` or ``archived``."""
        return self.slots.status
