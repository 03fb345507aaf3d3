"""Tools that need a person's approval: the policy, the pending calls of a paused turn, and the decisions.

A tool is marked by name (a Python tool, an MCP tool or a built-in such as ``create_session`` alike) with an
`Approval`: always, or when a predicate on its arguments says so. When the model calls such a tool, the turn
runner records a ``tool/approval_requested`` event per waiting call and parks the turn (DESIGN.md §8, a paused
turn is a state of the log): nothing of the step runs until every waiting call is decided. A decision —
approved (with the arguments as they are, or edited), denied (with a reason the model reads as the tool's
result), or made by a passed deadline — is a ``tool/approval_decided`` event; the last one resumes the same
turn's tool loop, on whatever process decides it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from stellate.errors import UsageError
from stellate.log.events import JsonObject, now_ms
from stellate.log.messages import ToolCall

__all__ = [
    "DEADLINE_APPROVER",
    "DENIED_TEXT",
    "TIMED_OUT_TEXT",
    "Approval",
    "ApprovalPolicy",
    "PendingApproval",
    "decision_data",
    "denial_text",
    "expired_decisions",
    "needs_approval",
    "pending_approvals",
    "resolve_calls",
]

DEADLINE_APPROVER = "deadline"
"""The ``by`` of a decision made because the request's deadline passed."""
DENIED_TEXT = "The user denied this call of {name}; it was not run."
DENIED_REASON_TEXT = "The user denied this call of {name}; it was not run. Their reason: {reason}"
TIMED_OUT_TEXT = "No one approved this call of {name} before its deadline; it was not run."


@dataclass(frozen=True, slots=True, kw_only=True)
class Approval:
    """When calls of one tool need a person's approval, and what a passed deadline decides.

    Args:
        when: Predicate on the call's arguments (the parsed JSON object); None asks for every call.
        timeout: Seconds a request waits before ``on_timeout`` decides it; None waits forever (days are fine:
            the pause lives in the log).
        on_timeout: What the deadline decides: ``deny`` (the default) or ``approve``.
    """

    when: Callable[[dict[str, Any]], bool] | None = None
    timeout: float | None = None
    on_timeout: Literal["approve", "deny"] = "deny"

    def __post_init__(self) -> None:
        if self.timeout is not None and self.timeout < 0:
            raise UsageError("an approval timeout must be >= 0 seconds (or None for no deadline)")
        if self.on_timeout not in ("approve", "deny"):
            raise UsageError(f"on_timeout must be 'approve' or 'deny', not {self.on_timeout!r}")

    def applies(self, call: ToolCall) -> bool:
        """Whether ``call`` needs approval (arguments that are not a JSON object never do: they fail anyway)."""
        if self.when is None:
            return True
        try:
            arguments = json.loads(call.arguments) if call.arguments.strip() else {}
        except json.JSONDecodeError:
            return False
        return isinstance(arguments, dict) and bool(self.when(arguments))


def needs_approval(
    *names: str,
    when: Callable[[dict[str, Any]], bool] | None = None,
    timeout: float | None = None,
    on_timeout: Literal["approve", "deny"] = "deny",
) -> dict[str, Approval]:
    """One `Approval` for each tool name, ready for ``Agent(approvals=...)`` (merge several with ``|``)."""
    approval = Approval(when=when, timeout=timeout, on_timeout=on_timeout)
    return {name: approval for name in names}


class ApprovalPolicy:
    """The tools that need approval, by name.

    Args:
        approvals: An `Approval` per tool name (``True`` for an `Approval` with its defaults).
    """

    def __init__(self, approvals: Mapping[str, Approval | bool] | None = None) -> None:
        self._by_name: dict[str, Approval] = {}
        for name, value in (approvals or {}).items():
            if value is True:
                self._by_name[name] = Approval()
            elif isinstance(value, Approval):
                self._by_name[name] = value
            elif value is not False:
                raise UsageError(f"approvals[{name!r}] must be an Approval or a bool, not {type(value).__name__}")

    def __bool__(self) -> bool:
        return bool(self._by_name)

    def get(self, name: str) -> Approval | None:
        """The approval rule of tool ``name``, if it has one."""
        return self._by_name.get(name)

    def requests(self, calls: Iterable[ToolCall], *, turn: int, step: int, now: int | None = None) -> list[JsonObject]:
        """The ``tool/approval_requested`` data for each of ``calls`` that needs approval (empty: none does)."""
        stamp = now_ms() if now is None else now
        out: list[JsonObject] = []
        for call in calls:
            rule = self._by_name.get(call.name)
            if rule is None or not rule.applies(call):
                continue
            deadline = None if rule.timeout is None else stamp + int(rule.timeout * 1000)
            out.append(
                {
                    "turn": turn,
                    "step": step,
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": call.arguments,
                    "deadline": deadline,
                    "on_timeout": rule.on_timeout,
                }
            )
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingApproval:
    """A tool call of a paused turn that waits for a decision."""

    session_id: str
    turn: int
    step: int
    call_id: str
    name: str
    arguments: str
    """The arguments the model gave (JSON text)."""
    deadline: int | None
    """Epoch ms when ``on_timeout`` decides, or None."""
    on_timeout: Literal["approve", "deny"]


def pending_approvals(session_id: str, approvals: Mapping[str, Mapping[str, JsonObject]]) -> list[PendingApproval]:
    """The undecided requests among a step's ``approvals`` (as `History.approvals` keeps them), in call order."""
    return [
        PendingApproval(
            session_id=session_id,
            turn=entry["request"]["turn"],
            step=entry["request"]["step"],
            call_id=call_id,
            name=entry["request"]["name"],
            arguments=entry["request"]["arguments"],
            deadline=entry["request"]["deadline"],
            on_timeout=entry["request"]["on_timeout"],
        )
        for call_id, entry in approvals.items()
        if "decision" not in entry
    ]


def decision_data(
    pending: PendingApproval, *, approve: bool, by: str, arguments: str | None = None, reason: str | None = None
) -> JsonObject:
    """The ``tool/approval_decided`` data of one decision.

    Raises:
        UsageError: edited ``arguments`` on a denial, or edited arguments that are not a JSON object.
    """
    data: JsonObject = {"call_id": pending.call_id, "decision": "approved" if approve else "denied", "by": by}
    if arguments is not None:
        if not approve:
            raise UsageError("edited arguments only go with an approval")
        try:
            parsed = json.loads(arguments)
        except json.JSONDecodeError as exc:
            raise UsageError(f"the edited arguments are not JSON ({exc}); send one JSON object") from exc
        if not isinstance(parsed, dict):
            raise UsageError("the edited arguments must be one JSON object")
        data["arguments"] = arguments
    if reason is not None:
        data["reason"] = reason
    return data


def expired_decisions(pending: Sequence[PendingApproval], *, now: int | None = None) -> list[JsonObject]:
    """Decisions for the requests whose deadline has passed, as each request's ``on_timeout`` says."""
    stamp = now_ms() if now is None else now
    return [
        decision_data(p, approve=p.on_timeout == "approve", by=DEADLINE_APPROVER)
        for p in pending
        if p.deadline is not None and p.deadline <= stamp
    ]


def denial_text(name: str, decision: Mapping[str, Any]) -> str:
    """What the model reads as the result of a denied call."""
    if decision.get("by") == DEADLINE_APPROVER:
        return TIMED_OUT_TEXT.format(name=name)
    reason = decision.get("reason")
    return DENIED_REASON_TEXT.format(name=name, reason=reason) if reason else DENIED_TEXT.format(name=name)


def resolve_calls(
    calls: Sequence[ToolCall], approvals: Mapping[str, Mapping[str, JsonObject]]
) -> tuple[list[ToolCall], dict[str, str]]:
    """The calls of a resumed step as they run (approved ones with their edited arguments), and denials' texts.

    Returns:
        Every call in order (edited where an approver edited it), and the denied call ids with the text the
        model reads as their result.
    """
    resolved: list[ToolCall] = []
    denied: dict[str, str] = {}
    for call in calls:
        decision = approvals.get(call.id, {}).get("decision")
        if decision is not None and decision["decision"] == "denied":
            denied[call.id] = denial_text(call.name, decision)
        elif decision is not None and decision.get("arguments") is not None:
            call = ToolCall(id=call.id, name=call.name, arguments=decision["arguments"])
        resolved.append(call)
    return resolved, denied
