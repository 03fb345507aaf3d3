"""Structured output: the type a turn answers with, how the model is asked for it, and how its answer is checked.

Two ways to ask (`OutputContract.mode_for`): an adapter that is `NativeOutput` gets the JSON schema as
``LLMRequest.output`` (OpenAI's ``response_format``) and answers with JSON text; any other adapter is offered
one extra tool, ``final_result``, whose arguments are the answer. Either way the answer is validated with
pydantic; a failure is worded so the model can fix it on its next call.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeAlias, TypeVar

from pydantic import PydanticSchemaGenerationError, PydanticUserError, TypeAdapter, ValidationError

from stellate.errors import OutputValidationError, UsageError
from stellate.llm.types import LLMAdapter, NativeOutput, OutputSchema, ToolSpec
from stellate.session.types import SendResult

if TYPE_CHECKING:
    from stellate.session.turn import Turn

__all__ = [
    "DEFAULT_OUTPUT_RETRIES",
    "OUTPUT_TOOL_NAME",
    "InvalidOutput",
    "OutputContract",
    "OutputMode",
    "as_contract",
    "send_structured",
]

T = TypeVar("T")

OutputMode: TypeAlias = Literal["auto", "native", "tool"]
"""``native``: the provider's JSON-schema mode; ``tool``: a ``final_result`` tool call; ``auto``: native when
the adapter supports it."""

#: Invalid answers sent back to the model before a turn fails with `OutputValidationError`.
DEFAULT_OUTPUT_RETRIES = 2
#: Name of the tool the model calls to answer when the adapter has no native mode.
OUTPUT_TOOL_NAME = "final_result"

_WRAP_KEY = "result"  # providers want an object at the root: other types travel as {"result": ...}
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n\s*```\s*$", flags=re.DOTALL)
_NAME = re.compile(r"[^A-Za-z0-9_-]+")
_SHOWN_INPUT_CHARS = 80
_RECORDED_TEXT = "Final answer recorded."


class InvalidOutput(Exception):
    """An answer that does not fit the output type; ``problems`` has one line per invalid field."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


class OutputContract(Generic[T]):
    """The type a turn must answer with, and the rules for asking and checking.

    Args:
        output_type: Anything pydantic validates: a model, a dataclass, ``list[int]``...
        mode: ``auto`` (default), ``native`` or ``tool``.
        retries: Invalid answers sent back to the model before the turn fails.
        strict: Ask a native provider to enforce the schema exactly (OpenAI's strict mode).

    Raises:
        UsageError: the type cannot be described as JSON schema, or ``retries`` is negative.
    """

    def __init__(
        self,
        output_type: type[T],
        *,
        mode: OutputMode = "auto",
        retries: int = DEFAULT_OUTPUT_RETRIES,
        strict: bool = False,
    ) -> None:
        if retries < 0:
            raise UsageError("output retries must be >= 0")
        self.output_type = output_type
        self.mode: OutputMode = mode
        self.retries = retries
        self.strict = strict
        self.name = _NAME.sub("_", getattr(output_type, "__name__", "") or "output")[:64]
        try:
            self._adapter: TypeAdapter[T] = TypeAdapter(output_type)
            schema = self._adapter.json_schema()
        except (PydanticSchemaGenerationError, PydanticUserError) as exc:
            raise UsageError(f"output type {output_type!r} cannot be described as JSON schema ({exc})") from exc
        self.wrapped = schema.get("type") != "object"
        self.schema = _wrap(schema) if self.wrapped else schema
        self.description = (schema.get("description") or "").strip()

    def mode_for(self, llm: LLMAdapter) -> Literal["native", "tool"]:
        """How to ask ``llm``: natively when the contract allows it and the adapter supports it.

        Raises:
            UsageError: ``mode="native"`` with an adapter that has no native structured output.
        """
        native = isinstance(llm, NativeOutput) and llm.supports_native_output()
        if self.mode == "native" and not native:
            raise UsageError(f"the {llm.provider} adapter has no native structured output; use mode='auto' or 'tool'")
        return "native" if native and self.mode != "tool" else "tool"

    def request_schema(self) -> OutputSchema:
        """The schema sent to a native adapter."""
        return OutputSchema(name=self.name, schema=self.schema, description=self.description, strict=self.strict)

    def tool_spec(self) -> ToolSpec:
        """The ``final_result`` tool offered to adapters without a native mode."""
        text = "Give your final answer by calling this tool with the answer as its arguments."
        if self.description:
            text = f"{text} The answer: {self.description}"
        return ToolSpec(name=OUTPUT_TOOL_NAME, description=text, parameters=self.schema)

    def parse_text(self, text: str) -> T:
        """Validate a native answer (JSON text, possibly in a Markdown fence).

        Raises:
            InvalidOutput: not JSON, or not the output type.
        """
        fenced = _FENCE.match(text)
        raw = fenced.group(1) if fenced else text
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InvalidOutput([f"the answer is not valid JSON ({exc}); received: {_shorten(raw)}"]) from exc
        return self.parse_object(data)

    def parse_object(self, data: Any) -> T:
        """Validate a decoded answer (the ``final_result`` arguments, or parsed JSON text).

        Raises:
            InvalidOutput: the data does not fit the output type.
        """
        if self.wrapped:
            if not isinstance(data, dict) or _WRAP_KEY not in data:
                raise InvalidOutput([f"{_WRAP_KEY}: required but missing"])
            data = data[_WRAP_KEY]
        try:
            return self._adapter.validate_python(data)
        except ValidationError as exc:
            raise InvalidOutput(_describe(exc)) from exc

    def to_json(self, value: T) -> Any:
        """``value`` as plain JSON, the form recorded in the log."""
        return self._adapter.dump_python(value, mode="json")

    def retry_text(self, problems: list[str], mode: Literal["native", "tool"]) -> str:
        """The message that sends an invalid answer back to the model."""
        where = "your answer" if mode == "native" else f'the arguments of "{OUTPUT_TOOL_NAME}"'
        how = (
            "Answer again with only a JSON value that matches the required schema."
            if mode == "native"
            else f'Call "{OUTPUT_TOOL_NAME}" again with corrected arguments.'
        )
        return f"Validation failed for {where}: {'; '.join(problems)}. {how}"

    def missing_call_text(self) -> str:
        """The message sent when, in tool mode, the model answered with text instead of calling the tool."""
        return f'Give your final answer by calling the "{OUTPUT_TOOL_NAME}" tool; plain text is not accepted.'

    def failure(self, attempts: int, problems: list[str]) -> OutputValidationError:
        """The error that ends a turn whose answers stayed invalid."""
        return OutputValidationError(
            f"the model's output did not validate as {self.name} after {attempts} attempt(s): {'; '.join(problems)}",
            attempts=attempts,
            problems=problems,
            output_type=self.name,
        )


def as_contract(output_type: type[T] | OutputContract[T] | None) -> OutputContract[T] | None:
    """``output_type`` as a contract with the default rules (a contract is returned as it is)."""
    if output_type is None or isinstance(output_type, OutputContract):
        return output_type
    return OutputContract(output_type)


async def send_structured(turn: Turn, contract: OutputContract[T]) -> SendResult:
    """One model call that must answer with ``contract``'s type (``Session.send`` with ``output_type``).

    A single call leaves no room for retries: an invalid answer ends the turn with an error.

    Raises:
        OutputValidationError: the answer does not validate.
    """
    mode = contract.mode_for(turn.session.runtime.llm)
    if mode == "native":
        result = await turn.step(output=contract.request_schema())
        answer: Any = result.content
    else:
        result = await turn.step([contract.tool_spec()])
        answer = next((c.arguments for c in result.tool_calls if c.name == OUTPUT_TOOL_NAME), None)
    try:
        if answer is None:
            raise InvalidOutput([contract.missing_call_text()])
        value = contract.parse_text(answer)
    except InvalidOutput as exc:
        await _answer_calls(turn, result, contract.retry_text(exc.problems, mode), is_error=True)
        raise contract.failure(1, exc.problems) from exc
    await _answer_calls(turn, result, _RECORDED_TEXT, is_error=False)
    turn.record_output(contract.name, mode, contract.to_json(value))
    return dataclasses.replace(result, output=value)


async def _answer_calls(turn: Turn, result: SendResult, text: str, *, is_error: bool) -> None:
    if result.tool_calls:
        await turn.record_tool_results(
            [
                (call, text if call.name == OUTPUT_TOOL_NAME else "Not run: only the answer was expected.", is_error)
                for call in result.tool_calls
            ]
        )


def _wrap(schema: dict[str, Any]) -> dict[str, Any]:
    inner = dict(schema)
    defs = inner.pop("$defs", None)
    wrapped: dict[str, Any] = {"type": "object", "properties": {_WRAP_KEY: inner}, "required": [_WRAP_KEY]}
    if defs is not None:
        wrapped["$defs"] = defs
    return wrapped


def _describe(exc: ValidationError) -> list[str]:
    problems = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "(answer)"
        if error["type"] == "missing":
            problems.append(f"{where}: required but missing")
        else:
            problems.append(f"{where}: {error['msg']} (got {_shorten(json.dumps(error['input'], default=str))})")
    return problems


def _shorten(text: str) -> str:
    return text if len(text) <= _SHOWN_INPUT_CHARS else text[: _SHOWN_INPUT_CHARS - 3] + "..."
