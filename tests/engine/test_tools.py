"""Tools: schema from hints and docstrings, injection, threads, readable error results, the registry."""

from __future__ import annotations

import asyncio
import enum
import threading
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from stellate.engine.tools import (
    FunctionTool,
    Tool,
    ToolArgumentsError,
    ToolContext,
    ToolRegistry,
    ToolResult,
    to_tool_result,
    tool,
)
from stellate.errors import UsageError
from stellate.llm.types import ToolSpec
from stellate.log.messages import ToolCall


def make_context(call_id: str = "call-1") -> ToolContext:
    return ToolContext(session_id="s-1", call_id=call_id, agent=None, cancelled=asyncio.Event(), metadata={})


def make_call(name: str, arguments: str = "{}") -> ToolCall:
    return ToolCall(id="call-1", name=name, arguments=arguments)


class Place(BaseModel):
    city: str = Field(description="City name.")
    country: str | None = None


class Pace(enum.Enum):
    SLOW = "slow"
    FAST = "fast"


@tool
def plan_trip(place: Place, days: int, mode: Literal["train", "plane"] = "train", note: str | None = None) -> str:
    """Plan a trip to one place.

    Use it once per destination.

    Args:
        place: Where to go.
        days (int): How many days
            to stay there.
        mode: How to travel.

    Returns:
        A one-line plan.
    """
    return f"{days} days in {place.city} by {mode}"


@tool
def echo(text: str) -> str:
    """Repeat the text."""
    return text


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


# -- schema ---------------------------------------------------------------------------------------------------


def test_docstring_text_before_sections_becomes_the_description() -> None:
    assert plan_trip.description == "Plan a trip to one place.\n\nUse it once per destination."


def test_schema_lists_parameters_with_docstring_descriptions_and_required_fields() -> None:
    schema = plan_trip.parameters
    assert schema["type"] == "object"
    assert schema["required"] == ["place", "days"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["days"] == {"type": "integer", "description": "How many days to stay there."}
    assert schema["properties"]["place"]["description"] == "Where to go."


def test_schema_describes_a_nested_model() -> None:
    place = plan_trip.parameters["$defs"]["Place"]
    assert place["required"] == ["city"]
    assert place["properties"]["city"] == {"type": "string", "description": "City name."}


def test_literal_parameter_becomes_an_enum_with_its_default() -> None:
    mode = plan_trip.parameters["properties"]["mode"]
    assert mode == {"type": "string", "enum": ["train", "plane"], "default": "train", "description": "How to travel."}


def test_optional_parameter_accepts_null_and_defaults_to_none() -> None:
    note = plan_trip.parameters["properties"]["note"]
    assert note == {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}


def test_enum_list_and_dict_parameters_are_described() -> None:
    @tool
    def tag(pace: Pace, labels: list[str], weights: dict[str, float] | None = None) -> None:
        """Tag things."""

    props = tag.parameters["properties"]
    assert tag.parameters["$defs"]["Pace"] == {"type": "string", "enum": ["slow", "fast"]}
    assert props["labels"] == {"type": "array", "items": {"type": "string"}}
    assert props["weights"]["anyOf"][0] == {"type": "object", "additionalProperties": {"type": "number"}}


def test_schema_has_no_generated_titles() -> None:
    assert "title" not in repr(plan_trip.parameters)


def test_a_property_named_title_is_kept() -> None:
    @tool
    def rename(title: str) -> str:
        """Rename."""
        return title

    assert rename.parameters["properties"] == {"title": {"type": "string"}}


async def test_tool_context_parameter_is_injected_and_left_out_of_the_schema() -> None:
    seen: list[ToolContext] = []

    @tool
    def whoami(question: str, ctx: ToolContext) -> str:
        """Tell the session id."""
        seen.append(ctx)
        return ctx.session_id

    assert list(whoami.parameters["properties"]) == ["question"]
    context = make_context()
    assert await whoami.run({"question": "?"}, context) == ToolResult("s-1")
    assert seen == [context]


async def test_tool_context_is_passed_whatever_the_parameter_is_called() -> None:
    @tool
    async def whoami(info: ToolContext, question: str) -> str:
        """Tell the session id and call id."""
        return f"{info.session_id}/{info.call_id}/{question}"

    assert whoami.parameters["required"] == ["question"]
    result = await whoami.run({"question": "q"}, make_context("c-9"))
    assert result == ToolResult("s-1/c-9/q")


async def test_an_optional_tool_context_is_injected_too() -> None:
    @tool
    def where(ctx: ToolContext | None = None) -> str:
        """Tell the session id, if any."""
        return ctx.session_id if ctx else "direct"

    assert where.parameters["properties"] == {}
    assert where() == "direct"
    assert (await where.run({}, make_context())).content == "s-1"


async def test_pydantic_field_constraints_are_described_and_enforced() -> None:
    @tool
    def repeat(times: Annotated[int, Field(ge=1)], word: str = Field("hi", description="What to repeat.")) -> str:
        """Repeat."""
        return word * times

    props = repeat.parameters["properties"]
    assert props["times"] == {"type": "integer", "minimum": 1}
    assert props["word"] == {"type": "string", "default": "hi", "description": "What to repeat."}
    assert (await repeat.run({"times": 2}, make_context())).content == "hihi"
    with pytest.raises(ToolArgumentsError, match="times: Input should be greater than or equal to 1"):
        await repeat.run({"times": 0}, make_context())


async def test_parameters_named_like_basemodel_attributes_work() -> None:
    @tool
    def store(json: str, schema: int, model_config: bool = False) -> str:
        """Store."""
        return f"{json}{schema}{model_config}"

    assert store.parameters["required"] == ["json", "schema"]
    assert (await store.run({"json": "j", "schema": 2}, make_context())).content == "j2False"


async def test_positional_only_parameters_are_passed_positionally() -> None:
    @tool
    def add(a: int, b: int, /) -> int:
        """Add."""
        return a + b

    assert (await add.run({"a": 1, "b": 2}, make_context())).content == "3"


def test_options_override_name_and_description() -> None:
    @tool(name="search_web", description="Search the web.")
    def search(query: str) -> str:
        """Ignored docstring."""
        return query

    assert search.spec() == ToolSpec(name="search_web", description="Search the web.", parameters=search.parameters)


def test_decorated_function_is_still_callable_and_a_tool() -> None:
    assert plan_trip(Place(city="Oslo"), 2) == "2 days in Oslo by train"
    assert plan_trip.__name__ == "plan_trip"
    assert isinstance(plan_trip, Tool)
    assert isinstance(plan_trip, FunctionTool)


async def test_decorated_async_function_is_still_awaitable() -> None:
    @tool
    async def double(n: int) -> int:
        """Double."""
        return 2 * n

    assert await double(4) == 8


def test_invalid_tool_name_is_refused() -> None:
    with pytest.raises(UsageError, match="1-64 letters"):
        tool(name="has space")(echo.__wrapped__)


def test_var_args_are_refused() -> None:
    def spread(*items: str) -> str:
        """Spread."""
        return ""

    with pytest.raises(UsageError, match=r"\*args and \*\*kwargs"):
        tool(spread)


async def test_a_model_defined_inside_a_function_resolves() -> None:
    class Point(BaseModel):
        x: int

    @tool
    def norm(point: Point) -> int:
        """Norm."""
        return abs(point.x)

    assert norm.parameters["$defs"]["Point"]["required"] == ["x"]
    assert (await norm.run({"point": {"x": -3}}, make_context())).content == "3"


def test_unresolvable_hint_is_refused_at_decoration() -> None:
    def take(thing: Missing) -> str:  # type: ignore[name-defined]  # noqa: F821
        """Take."""
        return ""

    with pytest.raises(UsageError, match="cannot resolve its type hints"):
        tool(take)


def test_parameter_pydantic_cannot_describe_is_refused_at_decoration() -> None:
    class Opaque:
        pass

    def take(thing: Opaque) -> str:
        """Take."""
        return ""

    with pytest.raises(UsageError, match="cannot be described as JSON schema"):
        tool(take)


# -- running --------------------------------------------------------------------------------------------------


async def test_sync_tool_runs_in_a_worker_thread() -> None:
    @tool
    def thread_id() -> int:
        """Report the thread."""
        return threading.get_ident()

    result = await ToolRegistry([thread_id]).call(make_call("thread_id"), make_context())
    assert int(result.content) != threading.get_ident()


async def test_sync_tool_does_not_block_the_loop() -> None:
    released = threading.Event()

    @tool
    def wait_for_release() -> str:
        """Block until released."""
        return "released" if released.wait(timeout=5) else "timed out"

    async def release_soon() -> None:
        await asyncio.sleep(0.01)  # runs only if the loop is free while the tool blocks
        released.set()

    result, _ = await asyncio.gather(wait_for_release.run({}, make_context()), release_soon())
    assert result.content == "released"


async def test_arguments_are_validated_into_models_before_the_call() -> None:
    result = await ToolRegistry([plan_trip]).call(
        make_call("plan_trip", '{"place": {"city": "Oslo"}, "days": "3", "mode": "plane"}'), make_context()
    )
    assert result == ToolResult("3 days in Oslo by plane")


@pytest.mark.parametrize(
    ("value", "content"),
    [
        ("text", "text"),
        (ToolResult("failed", is_error=True), "failed"),
        ({"a": [1, 2]}, '{"a":[1,2]}'),
        (Place(city="Oslo"), '{"city":"Oslo","country":null}'),
        (Pace.FAST, '"fast"'),
        (None, "null"),
        (3.5, "3.5"),
    ],
)
def test_return_values_are_converted_to_text(value: object, content: str) -> None:
    assert to_tool_result(value).content == content


# -- error results --------------------------------------------------------------------------------------------


async def test_invalid_arguments_give_an_error_result_naming_each_field() -> None:
    result = await ToolRegistry([plan_trip]).call(
        make_call("plan_trip", '{"days": "three", "mode": "car", "speed": 3}'), make_context()
    )
    assert result.is_error
    assert result.content == (
        'Invalid arguments for tool "plan_trip": place: required but missing; '
        'days: Input should be a valid integer, unable to parse string as an integer (got "three"); '
        "mode: Input should be 'train' or 'plane' (got \"car\"); "
        'speed: not a parameter of this tool; remove it. Fix them and call "plan_trip" again.'
    )


async def test_invalid_nested_field_is_named_by_its_path() -> None:
    result = await ToolRegistry([plan_trip]).call(
        make_call("plan_trip", '{"place": {"city": 5}, "days": 1}'), make_context()
    )
    assert "place.city: Input should be a valid string (got 5)" in result.content


async def test_unknown_tool_gives_an_error_result_listing_available_tools() -> None:
    result = await ToolRegistry([echo, ping]).call(make_call("search"), make_context())
    assert result == ToolResult(
        'There is no tool named "search". Available tools: "echo", "ping". Call one of them by its exact name.',
        is_error=True,
    )


async def test_unknown_tool_in_an_empty_registry_says_no_tools_exist() -> None:
    result = await ToolRegistry().call(make_call("search"), make_context())
    assert result.is_error
    assert "no tools are available" in result.content


async def test_malformed_json_gives_an_error_result_quoting_the_parse_error() -> None:
    result = await ToolRegistry([echo]).call(make_call("echo", '{"text": "hi"'), make_context())
    assert result.is_error
    assert result.content == (
        "The arguments for tool \"echo\" are not valid JSON (Expecting ',' delimiter: line 1 column 14 (char 13)); "
        'received: {"text": "hi". Send the arguments as one JSON object matching the tool\'s parameters.'
    )


async def test_arguments_that_are_not_an_object_give_an_error_result() -> None:
    result = await ToolRegistry([echo]).call(make_call("echo", '["hi"]'), make_context())
    assert result == ToolResult(
        'The arguments for tool "echo" must be a JSON object, not an array: ["hi"].', is_error=True
    )


@pytest.mark.parametrize("arguments", ["", "  ", "null"])
async def test_empty_or_null_arguments_mean_no_arguments(arguments: str) -> None:
    assert await ToolRegistry([ping]).call(make_call("ping", arguments), make_context()) == ToolResult("pong")


async def test_a_raising_tool_gives_its_exception_type_and_message() -> None:
    @tool
    async def explode(reason: str) -> str:
        """Fail."""
        raise ValueError(reason)

    result = await ToolRegistry([explode]).call(make_call("explode", '{"reason": "no fuel"}'), make_context())
    assert result == ToolResult("ValueError: no fuel", is_error=True)


async def test_a_raising_sync_tool_gives_its_exception_type() -> None:
    @tool
    def explode() -> str:
        """Fail."""
        raise KeyError

    assert await ToolRegistry([explode]).call(make_call("explode"), make_context()) == ToolResult(
        "KeyError", is_error=True
    )


async def test_a_custom_tool_reports_bad_arguments_with_tool_arguments_error() -> None:
    class Strict:
        name = "strict"
        description = "Needs x."
        parameters: dict[str, Any] = {"type": "object"}

        def spec(self) -> ToolSpec:
            return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

        async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
            raise ToolArgumentsError(["x: required but missing"])

    assert isinstance(Strict(), Tool)
    result = await ToolRegistry([Strict()]).call(make_call("strict"), make_context())
    assert result == ToolResult(
        'Invalid arguments for tool "strict": x: required but missing. Fix them and call "strict" again.', is_error=True
    )


# -- cancellation ---------------------------------------------------------------------------------------------


async def test_cancelling_a_call_propagates_cancelled_error() -> None:
    started = asyncio.Event()

    @tool
    async def wait_forever() -> str:
        """Never finish."""
        started.set()
        await asyncio.Event().wait()
        return "unreachable"

    task = asyncio.create_task(ToolRegistry([wait_forever]).call(make_call("wait_forever"), make_context()))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_cancelled_error_raised_by_a_tool_is_not_converted() -> None:
    @tool
    async def give_up() -> str:
        """Cancel itself."""
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await ToolRegistry([give_up]).call(make_call("give_up"), make_context())


async def test_cancelling_a_sync_tool_does_not_wait_for_its_thread() -> None:
    started, released = threading.Event(), threading.Event()

    @tool
    def block() -> str:
        """Block until released."""
        started.set()
        released.wait(timeout=5)
        return "done"

    task = asyncio.create_task(ToolRegistry([block]).call(make_call("block"), make_context()))
    await asyncio.to_thread(started.wait, 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    released.set()


# -- registry -------------------------------------------------------------------------------------------------


def test_registry_keeps_registration_order() -> None:
    registry = ToolRegistry([ping, echo])
    registry.register(plan_trip)
    assert registry.names() == ["ping", "echo", "plan_trip"]
    assert [spec.name for spec in registry.specs()] == ["ping", "echo", "plan_trip"]
    assert list(registry) == [ping, echo, plan_trip]


def test_specs_and_subset_of_names_follow_registration_order() -> None:
    registry = ToolRegistry([ping, echo, plan_trip])
    assert [spec.name for spec in registry.specs(["plan_trip", "ping"])] == ["ping", "plan_trip"]
    assert registry.subset(["plan_trip", "ping"]).names() == ["ping", "plan_trip"]
    assert registry.specs([]) == []


def test_specs_of_an_unknown_name_are_refused() -> None:
    with pytest.raises(UsageError, match="no tool named 'nope'") as caught:
        ToolRegistry([ping]).subset(["ping", "nope"])
    assert caught.value.code == "tool_not_found"


def test_registering_a_taken_name_is_refused() -> None:
    registry = ToolRegistry([echo])
    with pytest.raises(UsageError, match="already registered") as caught:
        registry.register(tool(name="echo")(ping.__wrapped__))
    assert caught.value.code == "tool_name_taken"
    assert registry.get("echo") is echo


def test_replace_swaps_the_tool_in_its_position() -> None:
    other_echo = tool(name="echo")(ping.__wrapped__)
    registry = ToolRegistry([echo, ping])
    registry.register(other_echo, replace=True)
    assert registry.names() == ["echo", "ping"]
    assert registry.get("echo") is other_echo


def test_merge_with_a_shared_name_is_refused_without_replace() -> None:
    with pytest.raises(UsageError) as caught:
        ToolRegistry([echo]).merge(ToolRegistry([tool(name="echo")(ping.__wrapped__)]))
    assert caught.value.code == "tool_name_taken"


def test_merge_with_replace_lets_the_later_registry_win_in_place() -> None:
    other_echo = tool(name="echo")(ping.__wrapped__)
    base = ToolRegistry([echo, ping])
    merged = base.merge(ToolRegistry([plan_trip, other_echo]), replace=True)
    assert merged.names() == ["echo", "ping", "plan_trip"]
    assert merged.get("echo") is other_echo
    assert base.get("echo") is echo and len(base) == 2


def test_get_of_an_unknown_name_is_none() -> None:
    assert ToolRegistry().get("echo") is None
    assert "echo" not in ToolRegistry()
