"""Structured output in the tool loop: ask for the answer, check it, send failures back, record the result.

A turn with an output type ends when the model gives a valid answer: JSON text in native mode, a call of
the ``final_result`` tool otherwise. Each invalid answer (text that does not validate, bad tool arguments,
or plain text where a tool call was required) is sent back to the model; past the contract's ``retries``
the turn fails with `OutputValidationError`. The valid answer is recorded as an ``output/validated`` event
after the step that produced it, so the log (and everything derived from it) keeps it.
"""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeVar

from stellate.engine.tools import ToolArgumentsError, ToolContext, ToolRegistry, ToolResult
from stellate.errors import OutputValidationError
from stellate.llm.types import LLMAdapter, OutputSchema, ToolSpec
from stellate.session.output import OUTPUT_TOOL_NAME, InvalidOutput, OutputContract
from stellate.session.turn import Turn
from stellate.session.types import SendResult

__all__ = ["OutputTool", "OutputTurn"]

T = TypeVar("T")

_RECORDED_TEXT = "Final answer recorded."


class OutputTool(Generic[T]):
    """The ``final_result`` tool: validates its arguments as the output type and keeps the last valid value."""

    def __init__(self, contract: OutputContract[T]) -> None:
        self._contract = contract
        self._spec = contract.tool_spec()
        self.value: T | None = None
        self.found = False
        self.problems: list[str] = []
        """Problems of the most recent invalid call."""
        self.failures = 0

    @property
    def name(self) -> str:
        """``final_result``."""
        return OUTPUT_TOOL_NAME

    @property
    def description(self) -> str:
        """What the model reads about the tool."""
        return self._spec.description

    @property
    def parameters(self) -> dict[str, Any]:
        """The output type's schema."""
        return self._spec.parameters

    def spec(self) -> ToolSpec:
        """The tool as offered to the model."""
        return self._spec

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Validate the answer; invalid arguments go back to the model as an error result."""
        try:
            value = self._contract.parse_object(arguments)
        except InvalidOutput as exc:
            self.failures += 1
            self.problems = exc.problems
            raise ToolArgumentsError(exc.problems) from exc
        self.value, self.found = value, True
        return ToolResult(_RECORDED_TEXT)


class OutputTurn(Generic[T]):
    """One turn's pursuit of a valid answer.

    Args:
        contract: The output type and its rules.
        llm: The session's adapter (decides native or tool mode).
    """

    def __init__(self, contract: OutputContract[T], llm: LLMAdapter) -> None:
        self.contract = contract
        self.mode: Literal["native", "tool"] = contract.mode_for(llm)
        self.tool = OutputTool(contract) if self.mode == "tool" else None
        self.value: T | None = None
        self.found = False
        self._failures = 0
        self._tool_failures_seen = 0
        self._problems: list[str] = ["the model gave no answer"]

    def request_schema(self) -> OutputSchema | None:
        """What a native model call carries in ``LLMRequest.output``."""
        return self.contract.request_schema() if self.mode == "native" else None

    def tools(self, registry: ToolRegistry) -> ToolRegistry:
        """The turn's tools, plus ``final_result`` in tool mode.

        Raises:
            UsageError: ``tool_name_taken`` when a registered tool is already called ``final_result``.
        """
        return registry if self.tool is None else registry.merge(ToolRegistry([self.tool]))

    def check_reply(self, turn: Turn, result: SendResult) -> bool:
        """Judge a reply that called no tools; True when it holds the answer (then recorded).

        Raises:
            OutputValidationError: the answer is invalid and the retries are used up.
        """
        if self.mode == "tool":
            self._fail(turn, [self.contract.missing_call_text()], self.contract.missing_call_text())
            return False
        try:
            value = self.contract.parse_text(result.content)
        except InvalidOutput as exc:
            self._fail(turn, exc.problems, self.contract.retry_text(exc.problems, "native"))
            return False
        self._accept(turn, value)
        return True

    def check_tools(self, turn: Turn) -> bool:
        """After a round of tool calls: True when ``final_result`` got a valid answer (then recorded).

        Raises:
            OutputValidationError: ``final_result`` was called with bad arguments once too often.
        """
        tool = self.tool
        if tool is None:
            return False
        if tool.found:
            self._accept(turn, tool.value)
            return True
        if tool.failures > self._tool_failures_seen:
            self._tool_failures_seen = tool.failures
            self._count(tool.problems)  # the error result already told the model what to fix
        return False

    def exhausted(self) -> OutputValidationError:
        """The error for a turn that ended (its round limit) without a valid answer."""
        return self.contract.failure(self._failures, self._problems)

    def _accept(self, turn: Turn, value: Any) -> None:
        self.value, self.found = value, True
        turn.record_output(self.contract.name, self.mode, self.contract.to_json(value))

    def _fail(self, turn: Turn, problems: list[str], correction: str) -> None:
        self._count(problems)
        turn.add_message(correction)

    def _count(self, problems: list[str]) -> None:
        self._failures += 1
        self._problems = problems
        if self._failures > self.contract.retries:
            raise self.contract.failure(self._failures, problems)
