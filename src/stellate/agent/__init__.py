"""The agent layer: the `Agent` facade over a forest of sessions, events, topology and reflection."""

from stellate.agent.agent import Agent
from stellate.agent.bus import EventBus, Hook
from stellate.agent.prices import Price
from stellate.agent.reflector import Reflection, Reflector
from stellate.agent.searching import SearchHit, SearchPage
from stellate.agent.topology import SessionDigest, TopologyNode
from stellate.agent.usage_report import UsageReport

__all__ = [
    "Agent",
    "EventBus",
    "Hook",
    "Reflection",
    "Reflector",
    "Price",
    "SearchHit",
    "SearchPage",
    "SessionDigest",
    "TopologyNode",
    "UsageReport",
]
