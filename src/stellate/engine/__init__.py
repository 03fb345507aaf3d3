"""The engine: tool loop, tools, skills, fork orchestration."""

from stellate.engine.approval import Approval, ApprovalPolicy, PendingApproval, needs_approval
from stellate.engine.builtins import ActivateSkillTool, CreateSessionTool
from stellate.engine.config import ForkOptions, ForkProfile, SessionConfig, SystemPromptMode
from stellate.engine.events import AgentEvent, TurnEvent, TurnResult
from stellate.engine.forks import ForkPlan, SplitGuard, plan_fork
from stellate.engine.mcp import MCPHTTP, MCPServers, MCPServerSpec, MCPStdio, MCPTool
from stellate.engine.merge import merge_config, resolve_profile_prompt
from stellate.engine.runner import DEFAULT_MAX_ROUNDS, TurnRunner
from stellate.engine.skills import Skill, SkillSet, load_skills
from stellate.engine.tools import Tool, ToolContext, ToolRegistry, ToolResult, tool

__all__ = [
    "Approval",
    "ApprovalPolicy",
    "PendingApproval",
    "needs_approval",
    "DEFAULT_MAX_ROUNDS",
    "ActivateSkillTool",
    "AgentEvent",
    "CreateSessionTool",
    "ForkOptions",
    "ForkPlan",
    "ForkProfile",
    "MCPHTTP",
    "MCPServerSpec",
    "MCPServers",
    "MCPStdio",
    "MCPTool",
    "SessionConfig",
    "Skill",
    "SkillSet",
    "SplitGuard",
    "SystemPromptMode",
    "Tool",
    "ToolContext",
    "ToolRegistry",
    "ToolResult",
    "TurnEvent",
    "TurnResult",
    "TurnRunner",
    "load_skills",
    "merge_config",
    "plan_fork",
    "resolve_profile_prompt",
    "tool",
]
