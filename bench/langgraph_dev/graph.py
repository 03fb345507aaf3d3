"""B6's graph for ``langgraph dev``: one node calling a ``ChatOpenAI`` pointed at the mock ($MOCK_BASE_URL)."""

import os
from typing import Annotated, Any, TypedDict

from langchain_core.messages import BaseMessage
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages


class State(TypedDict):
    messages: Annotated[list[BaseMessage], add_messages]


model = ChatOpenAI(model="mock", base_url=os.environ["MOCK_BASE_URL"], api_key="bench")


async def chat(state: State) -> dict[str, Any]:
    return {"messages": [await model.ainvoke(state["messages"])]}


builder = StateGraph(State)
builder.add_node("chat", chat)
builder.add_edge(START, "chat")
builder.add_edge("chat", END)
graph = builder.compile()
