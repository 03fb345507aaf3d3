"""Tools the model can call: the `Tool` protocol, the `@tool` decorator and the `ToolRegistry`.

A failing tool is not an exception (STYLE.md, Errors): `ToolRegistry.call` turns an unknown name, malformed
JSON, arguments that do not fit the schema and a tool that raises into a `ToolResult` with ``is_error`` set,
worded so the model can correct itself on the next round. Only cancellation propagates.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import re
import sys
import typing
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import KW_ONLY, dataclass, field
from types import MappingProxyType
from typing import Annotated, Any, Generic, ParamSpec, Protocol, TypeVar, overload, runtime_checkable

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, PydanticUserError, ValidationError, create_model

from stellate import observability
from stellate.errors import UsageError
from stellate.llm.types import ToolSpec
from stellate.log.messages import ToolCall

__all__ = [
    "FunctionTool",
    "Tool",
    "ToolArgumentsError",
    "ToolContext",
    "ToolRegistry",
    "ToolResult",
    "tool",
    "to_tool_result",
]

P = ParamSpec("P")
R = TypeVar("R")

_logger = observability.get_logger(__name__)

# The strictest rule among providers (OpenAI function names); a name that passes it works everywhere.
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_ARG_SECTIONS = frozenset({"args", "arguments", "parameters", "params"})
_SECTION_HEADER = re.compile(r"^([A-Za-z][A-Za-z ]*):\s*$")
_ARG_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SHOWN_INPUT_CHARS = 80
_JSON_KINDS = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean"}


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolContext:
    """What a tool learns about the call it serves; a parameter annotated with it is injected."""

    session_id: str
    """The session whose turn made the call."""
    call_id: str
    """Provider id of the tool call being answered."""
    agent: Any = None
    """The `Agent` facade running the turn, typed loosely because the engine sits below the agent layer."""
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when the turn is cancelled; long-running tools, including sync ones in their thread, may poll it."""
    metadata: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    """Free-form data the application attached to the turn."""


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool call returns to the model."""

    content: str
    """Text fed back to the model."""
    _: KW_ONLY
    is_error: bool = False
    """Whether the call failed; the model reads ``content`` to correct itself."""
    images: tuple[bytes, ...] = ()
    """Images the tool returns (PNG, JPEG, GIF or WebP bytes), sent where the provider takes them in a result."""


# ``ToolContext | None = None`` lets a tool also be called directly, without a context.
_CONTEXT_HINTS = (ToolContext, ToolContext | None)


class ToolArgumentsError(Exception):
    """Raised by `Tool.run` for arguments that do not fit its schema; `ToolRegistry.call` reports it to the model.

    Args:
        problems: One short line per invalid field, such as ``"days: Input should be a valid integer"``.
    """

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(self.problems))


@runtime_checkable
class Tool(Protocol):
    """Something the model can call by name with a JSON object of arguments."""

    @property
    def name(self) -> str:
        """Name the model calls the tool by."""

    @property
    def description(self) -> str:
        """What the tool does and when to use it, written for the model."""

    @property
    def parameters(self) -> dict[str, Any]:
        """JSON schema of the arguments object."""

    def spec(self) -> ToolSpec:
        """The tool as offered to the model."""

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Run the tool; raise `ToolArgumentsError` for arguments that do not fit `parameters`."""


def to_tool_result(value: object) -> ToolResult:
    """Convert a tool function's return value: ``str`` and `ToolResult` as they are, anything else as JSON.

    Pydantic models, dataclasses, enums and dates serialise as pydantic does; an object pydantic cannot
    serialise is written as its ``str()`` rather than failing the call.
    """
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult(value)
    return ToolResult(pydantic_core.to_json(value, serialize_unknown=True).decode())


def _check_name(name: str) -> None:
    if not _TOOL_NAME.match(name):
        raise UsageError(f"tool name {name!r} must be 1-64 letters, digits, '_' or '-'", tool=name)


def _parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its text before the first section and its ``Args`` entries."""
    description: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for line in inspect.cleandoc(doc or "").splitlines():
        header = _SECTION_HEADER.match(line)
        if header:
            section, current = header.group(1).lower(), None
        elif section is None:
            description.append(line)
        elif section in _ARG_SECTIONS and line.strip():
            current = _read_arg_line(line.strip(), current, params)
    return "\n".join(description).strip(), params


def _read_arg_line(line: str, current: str | None, params: dict[str, str]) -> str | None:
    entry = _ARG_ENTRY.match(line)
    if entry:
        params[entry.group(1)] = entry.group(2).strip()
        return entry.group(1)
    if current is not None:  # a continuation line of the entry above
        params[current] = f"{params[current]} {line}".strip()
    return current


def _strip_titles(node: Any) -> Any:
    """Drop pydantic's generated ``title`` keys: they repeat the field names and cost the model tokens."""
    if isinstance(node, list):
        return [_strip_titles(item) for item in node]
    if not isinstance(node, dict):
        return node
    stripped: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs"):  # keys here are field and model names, not keywords
            stripped[key] = {name: _strip_titles(sub) for name, sub in value.items()}
        elif key in ("default", "enum", "const", "examples"):
            stripped[key] = value
        else:
            stripped[key] = _strip_titles(value)
    return stripped


class _Signature:
    """A function's signature as an arguments model, plus the recipe to call the function with it."""

    def __init__(self, fn: Callable[..., Any], name: str, docs: Mapping[str, str], scope: Mapping[str, Any]) -> None:
        hints = _type_hints(fn, name, scope)
        # (parameter, passed positionally, model field or None for an injected ToolContext), in signature order
        self.params: list[tuple[str, bool, str | None]] = []
        fields: dict[str, Any] = {}
        for index, param in enumerate(inspect.signature(fn).parameters.values()):
            if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                raise UsageError(f"tool {name!r}: *args and **kwargs cannot be described to a model", tool=name)
            positional = param.kind is inspect.Parameter.POSITIONAL_ONLY
            hint = hints.get(param.name, Any)
            if hint in _CONTEXT_HINTS:
                self.params.append((param.name, positional, None))
                continue
            # Fields get neutral names and the parameter name as alias, so a parameter called ``json``,
            # ``schema`` or ``model_config`` cannot clash with BaseModel's own attributes.
            info = Field(alias=param.name, description=docs.get(param.name))
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[f"p{index}"] = (Annotated[hint, info], default)
            self.params.append((param.name, positional, f"p{index}"))
        self.model, self.schema = _arguments_model(name, fields)

    def bind(self, arguments: Mapping[str, Any], context: ToolContext) -> tuple[list[Any], dict[str, Any]]:
        """Validate ``arguments`` and return the positional and keyword arguments of the call.

        Raises:
            ToolArgumentsError: ``arguments`` do not fit the model.
        """
        try:
            values = self.model.model_validate(arguments)
        except ValidationError as exc:
            raise ToolArgumentsError(_describe_errors(exc)) from exc
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for param, positional, field_name in self.params:
            value = context if field_name is None else getattr(values, field_name)
            if positional:
                args.append(value)
            else:
                kwargs[param] = value
        return args, kwargs


def _type_hints(fn: Callable[..., Any], name: str, scope: Mapping[str, Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn, localns=dict(scope), include_extras=True)
    except NameError as exc:
        raise UsageError(f"tool {name!r}: cannot resolve its type hints ({exc})", tool=name) from exc


def _arguments_model(name: str, fields: dict[str, Any]) -> tuple[type[BaseModel], dict[str, Any]]:
    """Build the arguments model and its schema now, so an unsupported hint fails at decoration time."""
    try:
        model = create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
        schema = _strip_titles(model.model_json_schema())
    except PydanticUserError as exc:
        raise UsageError(
            f"tool {name!r}: its parameters cannot be described as JSON schema ({exc})", tool=name
        ) from exc
    return model, schema


def _describe_errors(exc: ValidationError) -> list[str]:
    problems = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "(arguments)"
        if error["type"] == "missing":
            problems.append(f"{where}: required but missing")
        elif error["type"] == "extra_forbidden":
            problems.append(f"{where}: not a parameter of this tool; remove it")
        else:
            problems.append(f"{where}: {error['msg']} (got {_shorten(error['input'])})")
    return problems


def _shorten(value: Any, *, raw: bool = False) -> str:
    text = value if raw else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _SHOWN_INPUT_CHARS else text[: _SHOWN_INPUT_CHARS - 3] + "..."


class FunctionTool(Generic[P, R]):
    """A Python function offered to the model; built by `tool`, still callable like the function.

    Args:
        fn: The function, sync or async. Sync functions run in a worker thread so they never block the loop.
        name: Name the model calls it by; the function's name when omitted.
        description: Text for the model; the docstring's text before its sections when omitted.
        scope: Extra names for resolving string annotations, such as a model defined inside a function.
    """

    __wrapped__: Callable[P, R]
    __name__: str

    def __init__(
        self,
        fn: Callable[P, R],
        *,
        name: str | None = None,
        description: str | None = None,
        scope: Mapping[str, Any] | None = None,
    ) -> None:
        functools.update_wrapper(self, fn)
        self.name: str = name or fn.__name__
        _check_name(self.name)
        summary, docs = _parse_docstring(fn.__doc__)
        self.description: str = summary if description is None else description
        self._fn = fn
        self._is_async = inspect.iscoroutinefunction(fn)
        self._signature = _Signature(fn, self.name, docs, scope or {})
        self.parameters: dict[str, Any] = self._signature.schema

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Call the function directly, without validation or injection."""
        return self._fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<FunctionTool {self.name!r}>"

    def spec(self) -> ToolSpec:
        """The tool as offered to the model."""
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Validate ``arguments``, call the function and convert its return value with `to_tool_result`.

        Raises:
            ToolArgumentsError: ``arguments`` do not fit `parameters`.
        """
        args, kwargs = self._signature.bind(arguments, context)
        if self._is_async:
            value = await typing.cast(Callable[..., Awaitable[object]], self._fn)(*args, **kwargs)
        else:
            # A thread cannot be interrupted: on cancellation the turn moves on and the thread finishes alone.
            value = await asyncio.to_thread(self._fn, *args, **kwargs)
        return to_tool_result(value)


class _ToolDecorator(Protocol):
    """What ``tool(name=...)`` returns: a decorator generic in the function it receives."""

    def __call__(self, fn: Callable[P, R], /) -> FunctionTool[P, R]: ...


@overload
def tool(fn: Callable[P, R], /) -> FunctionTool[P, R]: ...
@overload
def tool(*, name: str | None = None, description: str | None = None) -> _ToolDecorator: ...
def tool(
    fn: Callable[..., Any] | None = None, /, *, name: str | None = None, description: str | None = None
) -> FunctionTool[..., Any] | _ToolDecorator:
    """Turn a function into a `Tool`, bare (``@tool``) or with options (``@tool(name=...)``).

    The arguments schema comes from the type hints (anything pydantic validates) and the docstring's ``Args:``
    entries; a parameter annotated `ToolContext` is injected and left out of the schema.

    Raises:
        UsageError: The name is invalid, or a parameter cannot be described as JSON schema.
    """
    # With postponed annotations, a model defined in the caller's function is only a name in a string; the
    # caller's locals resolve it (pydantic does the same for models defined inside functions).
    scope = dict(sys._getframe(1).f_locals)
    if fn is not None:
        return FunctionTool(fn, name=name, description=description, scope=scope)

    def decorate(inner: Callable[P, R]) -> FunctionTool[P, R]:
        return FunctionTool(inner, name=name, description=description, scope=scope)

    return decorate


class ToolRegistry:
    """Tools by name, in registration order.

    Args:
        tools: Tools to register at once, as `register` would.
    """

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for item in tools:
            self.register(item)

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def register(self, tool: Tool, *, replace: bool = False) -> None:
        """Add ``tool``; with ``replace=True`` a tool of the same name is replaced in its position.

        Raises:
            UsageError: ``tool_name_taken`` when the name is registered and ``replace`` is false.
        """
        _check_name(tool.name)
        if tool.name in self._tools and not replace:
            raise UsageError(
                f"a tool named {tool.name!r} is already registered; pass replace=True to override it",
                code="tool_name_taken",
                tool=tool.name,
            )
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or None."""
        return self._tools.get(name)

    def names(self) -> list[str]:
        """Registered names in registration order."""
        return list(self._tools)

    def specs(self, names: Iterable[str] | None = None) -> list[ToolSpec]:
        """Specs of all tools, or of those in ``names``, in registration order.

        Raises:
            UsageError: ``tool_not_found`` when a name is not registered.
        """
        return [item.spec() for item in self._select(names)]

    def subset(self, names: Iterable[str]) -> ToolRegistry:
        """A new registry holding only the tools in ``names``, in registration order.

        Raises:
            UsageError: ``tool_not_found`` when a name is not registered.
        """
        return ToolRegistry(self._select(names))

    def merge(self, other: ToolRegistry, *, replace: bool = False) -> ToolRegistry:
        """A new registry: these tools, then ``other``'s; on a shared name ``other`` wins only with ``replace``.

        Raises:
            UsageError: ``tool_name_taken`` on a shared name when ``replace`` is false.
        """
        merged = ToolRegistry(self)
        for item in other:
            merged.register(item, replace=replace)
        return merged

    def _select(self, names: Iterable[str] | None) -> list[Tool]:
        if names is None:
            return list(self._tools.values())
        wanted = set(names)
        unknown = sorted(wanted.difference(self._tools))
        if unknown:
            raise UsageError(
                f"no tool named {', '.join(map(repr, unknown))}; registered: {', '.join(self._tools) or 'none'}",
                code="tool_not_found",
                tools=unknown,
            )
        return [item for name, item in self._tools.items() if name in wanted]

    async def call(self, call: ToolCall, context: ToolContext) -> ToolResult:
        """Run ``call`` and return its result; every mistake of the model becomes an error result.

        An unknown name, malformed JSON, arguments that do not fit and a tool that raises all give a
        `ToolResult` with ``is_error`` set. `asyncio.CancelledError` propagates.
        """
        found = self._tools.get(call.name)
        if found is None:
            return ToolResult(self._unknown_tool_text(call.name), is_error=True)
        arguments = _parse_arguments(call)
        if isinstance(arguments, ToolResult):
            return arguments
        try:
            return await found.run(arguments, context)
        except ToolArgumentsError as exc:
            problems = "; ".join(exc.problems)
            text = f'Invalid arguments for tool "{call.name}": {problems}. Fix them and call "{call.name}" again.'
            return ToolResult(text, is_error=True)
        except Exception as exc:  # CancelledError is a BaseException, so cancellation still propagates
            _logger.warning("tool %r raised (call %s)", call.name, call.id, exc_info=True)
            return ToolResult(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__, is_error=True)

    def _unknown_tool_text(self, name: str) -> str:
        if not self._tools:
            return f'There is no tool named "{name}": no tools are available here. Answer without calling tools.'
        available = ", ".join(f'"{known}"' for known in self._tools)
        return f'There is no tool named "{name}". Available tools: {available}. Call one of them by its exact name.'


def _parse_arguments(call: ToolCall) -> dict[str, Any] | ToolResult:
    """The arguments object of ``call``, or an error result the model can act on."""
    if not call.arguments.strip():  # some providers send "" for a call without arguments
        return {}
    try:
        arguments = json.loads(call.arguments)
    except json.JSONDecodeError as exc:
        received = _shorten(call.arguments, raw=True)
        text = (
            f'The arguments for tool "{call.name}" are not valid JSON ({exc}); received: {received}. '
            "Send the arguments as one JSON object matching the tool's parameters."
        )
        return ToolResult(text, is_error=True)
    if arguments is None:  # ``null`` means no arguments as well
        return {}
    if not isinstance(arguments, dict):
        kind = _JSON_KINDS.get(type(arguments), "value")
        text = f'The arguments for tool "{call.name}" must be a JSON object, not {kind}: {_shorten(arguments)}.'
        return ToolResult(text, is_error=True)
    return arguments
