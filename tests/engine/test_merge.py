"""The four-layer merge chain and the seed's profile examples (seed 000)."""

from __future__ import annotations

import pytest

from stellate.engine import ForkOptions, ForkProfile, SessionConfig, merge_config, plan_fork
from stellate.errors import ForkError
from stellate.llm.scripted import ScriptedLLM

DEFAULT_LLM = ScriptedLLM(model="default")
PROFILE_LLM = ScriptedLLM(model="profile")
OPTIONS_LLM = ScriptedLLM(model="options")


def opts(**kw: object) -> ForkOptions:
    return ForkOptions(label="child", **kw)  # type: ignore[arg-type]


def test_empty_layers_merge_to_empty() -> None:
    assert merge_config(SessionConfig(), SessionConfig(), None, opts()) == SessionConfig()


def test_later_layer_wins_and_none_never_overrides() -> None:
    merged = merge_config(
        SessionConfig(llm=DEFAULT_LLM, system_prompt="d"),
        SessionConfig(system_prompt="p"),
        ForkProfile(llm=PROFILE_LLM),
        opts(),
    )
    assert merged.llm is PROFILE_LLM and merged.system_prompt == "p"
    assert (
        merge_config(
            SessionConfig(llm=DEFAULT_LLM), SessionConfig(), ForkProfile(llm=PROFILE_LLM), opts(llm=OPTIONS_LLM)
        ).llm
        is OPTIONS_LLM
    )


def test_profile_without_prompt_falls_back_to_parent_then_defaults() -> None:
    parent = SessionConfig(system_prompt="parent prompt")
    assert (
        merge_config(SessionConfig(system_prompt="d"), parent, ForkProfile(), opts()).system_prompt == "parent prompt"
    )
    assert merge_config(SessionConfig(system_prompt="d"), SessionConfig(), ForkProfile(), opts()).system_prompt == "d"


def test_no_profile_is_plain_later_wins_for_the_prompt() -> None:
    merged = merge_config(
        SessionConfig(system_prompt="d"), SessionConfig(system_prompt="p"), None, opts(system_prompt="o")
    )
    assert merged.system_prompt == "o"


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("preset", "PROFILE"), ("prepend", "PROFILE\n\nTASK"), ("append", "TASK\n\nPROFILE")],
)
def test_system_prompt_modes(mode: str, expected: str) -> None:
    profile = ForkProfile(system_prompt="PROFILE", system_prompt_mode=mode)  # type: ignore[arg-type]
    merged = merge_config(SessionConfig(system_prompt="d"), SessionConfig(), profile, opts(system_prompt="TASK"))
    assert merged.system_prompt == expected


def test_prepend_with_only_one_side_uses_that_side() -> None:
    profile = ForkProfile(system_prompt_mode="prepend")
    assert merge_config(SessionConfig(), SessionConfig(), profile, opts(system_prompt="TASK")).system_prompt == "TASK"
    profile = ForkProfile(system_prompt="P")
    assert merge_config(SessionConfig(), SessionConfig(), profile, opts()).system_prompt == "P"


def test_preset_with_nothing_falls_back_and_ignores_options() -> None:
    profile = ForkProfile(system_prompt_mode="preset")
    merged = merge_config(
        SessionConfig(system_prompt="d"), SessionConfig(system_prompt="p"), profile, opts(system_prompt="o")
    )
    assert merged.system_prompt == "p"


def test_system_prompt_fn_wins_over_static_prompt() -> None:
    profile = ForkProfile(system_prompt="static", system_prompt_fn=lambda v: f"expert on {v['region']}")
    merged = merge_config(SessionConfig(), SessionConfig(), profile, opts(profile_vars={"region": "Europe"}))
    assert merged.system_prompt == "expert on Europe"


def test_skills_are_replaced_and_empty_list_is_a_value() -> None:
    lower = SessionConfig(skills=["a", "b"])
    assert merge_config(lower, SessionConfig(), None, opts(skills=[])).skills == []
    assert merge_config(lower, SessionConfig(), None, opts()).skills == ["a", "b"]
    assert merge_config(lower, SessionConfig(skills=["c"]), None, opts(skills=["d"])).skills == ["d"]
    assert merge_config(SessionConfig(), SessionConfig(), None, opts()).skills is None


def test_parent_layer_passes_through_prompt_and_skills() -> None:
    merged = merge_config(SessionConfig(), SessionConfig(system_prompt="p", skills=["s"]), None, opts())
    assert (merged.system_prompt, merged.skills) == ("p", ["s"])


# -- the seed's examples -------------------------------------------------------------------------

POET = ForkProfile(system_prompt="You are a poet; answer in verse.", system_prompt_mode="preset")
REGION = ForkProfile(
    system_prompt_fn=lambda v: f"You are a study-abroad expert for {v['region']}.",
    system_prompt_mode="preset",
    skills=["search", "summarize"],
)
RESEARCHER = ForkProfile(system_prompt="You are a research assistant.", system_prompt_mode="prepend", context="inherit")
PROFILES = {"poet": POET, "region-expert": REGION, "researcher": RESEARCHER}


def test_poet_preset_ignores_the_callers_prompt() -> None:
    result = plan_fork(
        source_id="s",
        defaults=SessionConfig(),
        parent=SessionConfig(),
        profiles=PROFILES,
        options=opts(profile="poet", system_prompt="be a lawyer"),
    )
    assert result.config.system_prompt == POET.system_prompt


def test_region_expert_builds_its_prompt_from_vars_and_sets_skills() -> None:
    result = plan_fork(
        source_id="s",
        defaults=SessionConfig(),
        parent=SessionConfig(skills=["other"]),
        profiles=PROFILES,
        options=opts(profile="region-expert", profile_vars={"region": "North America"}),
    )
    assert result.config.system_prompt == "You are a study-abroad expert for North America."
    assert result.config.skills == ["search", "summarize"]


def test_researcher_prepends_and_inherits_context_by_default() -> None:
    result = plan_fork(
        source_id="s",
        defaults=SessionConfig(),
        parent=SessionConfig(),
        profiles=PROFILES,
        options=opts(profile="researcher", system_prompt="Topic: tuition in the Netherlands."),
    )
    assert result.config.system_prompt == "You are a research assistant.\n\nTopic: tuition in the Netherlands."
    assert result.context == "inherit"
    overridden = plan_fork(
        source_id="s",
        defaults=SessionConfig(),
        parent=SessionConfig(),
        profiles=PROFILES,
        options=opts(profile="researcher", context="none"),
    )
    assert overridden.context == "none"


def test_topology_parent_defaults_to_the_source() -> None:
    assert (
        plan_fork(
            source_id="s", defaults=SessionConfig(), parent=SessionConfig(), profiles={}, options=opts()
        ).topology_parent_id
        == "s"
    )
    other = plan_fork(
        source_id="s",
        defaults=SessionConfig(),
        parent=SessionConfig(),
        profiles={},
        options=opts(topology_parent_id="root"),
    )
    assert other.topology_parent_id == "root"


def test_unknown_profile_is_a_fork_error() -> None:
    with pytest.raises(ForkError) as info:
        plan_fork(
            source_id="s",
            defaults=SessionConfig(),
            parent=SessionConfig(),
            profiles=PROFILES,
            options=opts(profile="ghost"),
        )
    assert info.value.code == "profile_not_found"


def test_prompt_from_options_wins_over_profile() -> None:
    profile = ForkProfile(prompt="profile opening")
    result = plan_fork(
        source_id="s",
        defaults=SessionConfig(),
        parent=SessionConfig(),
        profiles={"p": profile},
        options=opts(profile="p"),
    )
    assert result.prompt == "profile opening"
    result = plan_fork(
        source_id="s",
        defaults=SessionConfig(),
        parent=SessionConfig(),
        profiles={"p": profile},
        options=opts(profile="p", prompt="mine"),
    )
    assert result.prompt == "mine"


def test_sources_name_the_layer_each_setting_came_from() -> None:
    from stellate.engine.merge import config_sources

    defaults = SessionConfig(system_prompt="d", llm="base")
    parent = SessionConfig(system_prompt="p", skills=["a"])
    assert config_sources(defaults, parent, None, opts(tools=["t"])) == {
        "system_prompt": "parent",
        "llm": "defaults",
        "tools": "options",
        "skills": "parent",
    }
    profile = ForkProfile(system_prompt="prof", system_prompt_mode="prepend", llm="fast")
    both = config_sources(defaults, parent, profile, opts(system_prompt="mine", skills=[]))
    assert both == {"system_prompt": "profile+options", "llm": "profile", "skills": "options"}
    appended = ForkProfile(system_prompt="prof", system_prompt_mode="append")
    assert config_sources(defaults, parent, appended, opts(system_prompt="m"))["system_prompt"] == "options+profile"
    silent = ForkProfile(system_prompt_mode="preset")
    assert config_sources(defaults, parent, silent, opts(system_prompt="ignored"))["system_prompt"] == "parent"


def test_a_plan_records_its_sources_and_a_compressed_context() -> None:
    profiles = {"sum": ForkProfile(context="compress")}
    plan = plan_fork(
        source_id="s", defaults=SessionConfig(), parent=SessionConfig(system_prompt="p"), profiles=profiles,
        options=opts(profile="sum"),
    )  # fmt: skip
    assert plan.sources == {"system_prompt": "parent+compressed parent"}
