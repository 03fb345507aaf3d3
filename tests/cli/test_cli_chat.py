from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from cli_support import Forest, Run, events_of, run_process

from stellate.cli.exit_codes import EXIT_STATUS
from stellate.cli.slash import COMMANDS
from stellate.testing.mock_llm import MockFailure, MockLLMServer, MockReply


@pytest.fixture
def scripted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Drive chat with the hidden scripted provider; write replies to the returned file."""
    script = tmp_path / "script.json"
    script.write_text("[]")
    monkeypatch.setenv("STELLATE_PROVIDER", "scripted")
    monkeypatch.setenv("STELLATE_SCRIPT", str(script))
    return script


def _lines(*lines: str) -> str:
    return "".join(line + "\n" for line in lines)


def test_chat_without_a_provider_says_what_to_set_and_creates_nothing(cli: Run, db: Path) -> None:
    result = cli("chat", stdin="hello\n")
    assert result.status == EXIT_STATUS["provider_not_configured"]
    assert result.err.count("\n") == 1 and "STELLATE_PROVIDER" in result.err and "OPENAI_API_KEY" in result.err
    assert not db.exists()


def test_chat_streams_replies_and_shows_tool_calls_and_the_branches_they_open(cli: Run, scripted: Path) -> None:
    fork_call = {"name": "create_session", "arguments": {"label": "Visas", "profile": "researcher"}}
    scripted.write_text(json.dumps(["Hello there.", {"text": "Branching.", "tool_calls": [fork_call]}, "Done."]))
    result = cli("chat", stdin=_lines("hi", "plan visas", "/tree", "/quit"))
    assert result.status == 0, result.err
    assert "assistant › Hello there." in result.out
    assert "⚙ create_session" in result.out and "new branch 'Visas'" in result.out
    assert "↳ Created session" in result.out and "assistant › Done." in result.out
    tree = result.out.split("/tree", 1)[1]
    assert "Chat" in tree and "◀ current" in tree and "Visas" in tree


def test_chat_resumes_the_last_session(cli: Run, scripted: Path, db: Path) -> None:
    first = cli("chat", stdin=_lines("hi"))
    session = first.out.split()[1]
    assert (db.parent / "stellate.db.state.json").exists()
    second = cli("chat", stdin=_lines("again"))
    assert second.out.split()[1] == session and "1 turn" in second.out.splitlines()[0]
    assert [data for _, kind, data in events_of(db, session) if kind == "user/message"] == [
        {"content": "hi"},
        {"content": "again"},
    ]


def test_fork_switches_into_the_branch_and_switch_goes_back(cli: Run, scripted: Path, db: Path) -> None:
    result = cli("chat", stdin=_lines("hi", "/fork Side --at 2", "in the branch", "/quit"))
    assert result.status == 0, result.err
    sessions = [line.split()[1] for line in result.out.splitlines() if line.startswith("session ")]
    root, side = sessions
    assert "Side" in result.out and len(events_of(db, side)) > len(events_of(db, root))
    back = cli("chat", stdin=_lines(f"/switch {root}", "/quit"))
    assert back.out.splitlines()[0].split()[1] == side  # resumed in the branch
    assert f"session {root}" in back.out


def test_fork_names_the_branch_it_switched_to_without_a_stale_switch_hint(cli: Run, scripted: Path) -> None:
    result = cli("chat", stdin=_lines("hi", "/fork Side", "/quit"))
    assert result.status == 0, result.err
    assert "(/switch s-" not in result.out
    assert [line.split(" · ")[1] for line in result.out.splitlines() if line.startswith("session ")] == ["Chat", "Side"]


def test_a_branch_the_model_opens_is_announced_with_how_to_switch_to_it(cli: Run, scripted: Path) -> None:
    fork_call = {"name": "create_session", "arguments": {"label": "Visas"}}
    scripted.write_text(json.dumps([{"text": "Branching.", "tool_calls": [fork_call]}, "Done."]))
    result = cli("chat", stdin=_lines("branch off"))
    assert "new branch 'Visas'" in result.out and "(/switch s-" in result.out


def test_an_insight_reaches_the_next_call_and_context_shows_it(cli: Run, scripted: Path) -> None:
    result = cli(
        "chat",
        stdin=_lines("/insight Check the visa deadline", "hi", "/insight", "/context", "/memory noted", "/memory"),
    )
    assert result.status == 0, result.err
    assert "insight pending: Check the visa deadline" in result.out
    assert "insight pending: (none)" in result.out  # consumed by the successful call
    context = result.out.split("/context", 1)[1]
    assert "context of the model call" in context and "<insight>" in context and "Check the visa deadline" in context
    assert context.count("memory: noted") == 2


def test_consolidate_and_export(cli: Run, scripted: Path, tmp_path: Path) -> None:
    scripted.write_text(json.dumps(["Hi.", "The user said hi."]))
    target = tmp_path / "chat.jsonl"
    result = cli("chat", stdin=_lines("hi", "/consolidate", f"/export {target}", "/help"))
    assert result.status == 0, result.err
    assert "memory: The user said hi." in result.out and "exported" in result.out
    assert target.read_text().count("\n") > 5 and "/fork LABEL" in result.out


def test_a_failing_line_is_reported_and_the_chat_goes_on(cli: Run, scripted: Path) -> None:
    scripted.write_text(json.dumps([{"error": "the provider is down"}, "Back again."]))
    stdin = _lines("hi", "/bogus", "/switch s-nope", "/fork X --profile nope", "/fork", "hello")
    result = cli("chat", stdin=stdin)
    assert result.status == 0
    errors = result.err.splitlines()
    assert [line.rsplit("[", 1)[1] for line in errors] == [
        "provider_error]",
        "usage_error]",
        "session_not_found]",
        "profile_not_found]",
        "usage_error]",
    ]
    assert "assistant › Back again." in result.out


def test_chat_in_an_unknown_session_is_not_found(cli: Run, scripted: Path, forest: Forest, db: Path) -> None:
    result = cli("chat", "--session", "s-nope")
    assert result.status == EXIT_STATUS["session_not_found"] and result.err.count("\n") == 1
    fresh = cli("chat", "--session", "s-nope", "--db", "other.db")
    assert fresh.status == EXIT_STATUS["session_not_found"] and not Path("other.db").exists()


def test_the_provider_flag_beats_the_environment(cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STELLATE_PROVIDER", "openai")  # no key: would stop chat
    result = cli("chat", "--provider", "scripted", stdin="hi\n")
    assert result.status == 0 and "(scripted) you said: hi" in result.out


def test_chat_end_to_end_in_a_child_process(scripted: Path, forest: Forest) -> None:
    result = run_process("chat", "--session", forest.child, stdin=_lines("where am I?", "/quit"))
    assert result.status == 0, result.err
    assert f"session {forest.child} · Child" in result.out
    assert "(scripted) you said: where am I?" in result.out


# -- slash commands: real --help, flags never taken as text, several words -------------------------------------


def _memory_of(db: Path, session_id: str) -> list[object]:
    return [data for _, kind, data in events_of(db, session_id) if kind == "memory/put"]


def _current(out: str) -> str:
    return [line.split()[1] for line in out.splitlines() if line.startswith("session ")][-1]


def test_help_of_a_text_command_is_shown_and_never_stored(cli: Run, scripted: Path, db: Path) -> None:
    result = cli("chat", stdin=_lines("/memory --help", "/memory --bogus", "/memory -- --help is a flag"))
    assert result.status == 0
    assert "usage: /memory" in result.out and "rest of the line" in result.out
    assert "unrecognized arguments: --bogus" in result.err and "/memory -- TEXT" in result.err
    assert _memory_of(db, _current(result.out)) == [{"content": "--help is a flag"}]


def test_text_is_kept_as_typed_apostrophes_and_spacing_included(cli: Run, scripted: Path, db: Path) -> None:
    result = cli("chat", stdin=_lines('/insight Don\'t  book before "May"', "/insight"))
    assert result.status == 0, result.err
    assert 'insight pending: Don\'t  book before "May"' in result.out
    assert cli("chat", stdin=_lines("/insight --clear")).out.count("insight pending: (none)") == 1


@pytest.mark.parametrize("command", [name for name in COMMANDS if name != "exit"])  # /exit is /quit
def test_every_slash_command_has_help_that_names_it(cli: Run, scripted: Path, command: str) -> None:
    result = cli("chat", stdin=_lines(f"/{command} --help", f"/help {command}"))
    assert result.status == 0 and not result.err
    assert result.out.count(f"usage: /{command}") == 2


def test_fork_help_shows_its_options_instead_of_pointing_at_itself(cli: Run, scripted: Path) -> None:
    result = cli("chat", stdin=_lines("/fork --help"))
    assert "--profile P" in result.out and "--context" in result.out and "--at SEQ" in result.out
    assert not result.err


def test_a_label_of_several_words_needs_no_quotes(cli: Run, scripted: Path, db: Path) -> None:
    result = cli("chat", stdin=_lines("hi", "/fork Plan B --at 2", "/fork Plan C, the cheap one"))
    assert result.status == 0, result.err
    assert "· Plan B ·" in result.out and "· Plan C, the cheap one ·" in result.out


def test_an_unknown_profile_lists_the_profiles_there_are(cli: Run, scripted: Path) -> None:
    result = cli("chat", stdin=_lines("/fork X --profile nope"))
    assert "[profile_not_found]" in result.err and "(known: expert, researcher)" in result.err


def test_switch_takes_a_label_or_an_id_prefix(cli: Run, scripted: Path, forest: Forest) -> None:
    result = cli("chat", "--session", "Root", stdin=_lines("/switch child", f"/switch {forest.root[:-6]}"))
    assert result.status == 0, result.err
    assert [line.split()[1] for line in result.out.splitlines() if line.startswith("session ")] == [
        forest.root,
        forest.child,
        forest.root,
    ]


def test_sessions_lists_and_finds_and_rename_relabels(cli: Run, scripted: Path, forest: Forest, db: Path) -> None:
    result = cli("chat", "--session", "Child", stdin=_lines("/rename Budget  for Germany", "/sessions germany"))
    assert result.status == 0, result.err
    assert events_of(db, forest.child)[-1][1:] == ("label/set", {"label": "Budget  for Germany"})
    listing = result.out.split("/sessions germany", 1)[1]
    assert forest.child in listing and "◀ current" in listing and forest.root not in listing


# -- what a turn looks like -------------------------------------------------------------------------------------


def test_no_empty_speaker_line_before_tool_calls_or_errors(cli: Run, scripted: Path) -> None:
    tool_only = {"tool_calls": [{"name": "create_session", "arguments": {"label": "Side"}}]}
    scripted.write_text(json.dumps([tool_only, "Opened it.", {"error": "the provider is down"}]))
    result = cli("chat", stdin=_lines("branch off", "again"))
    lines = result.out.splitlines()
    assert "assistant › Opened it." in lines
    assert not [line for line in lines if line.strip() in ("assistant ›", "assistant")]
    assert lines[lines.index("you › again") + 1 :] == []  # the failure printed nothing on stdout


def test_piped_input_fails_when_every_turn_failed(cli: Run, scripted: Path) -> None:
    scripted.write_text(json.dumps([{"error": "down"}, {"error": "still down"}]))
    result = cli("chat", stdin=_lines("hi", "/tree", "hello"))
    assert result.status == EXIT_STATUS["provider_error"]
    assert result.err.count("[provider_error]") == 2


def test_piped_input_without_any_turn_succeeds(cli: Run, scripted: Path) -> None:
    assert cli("chat", stdin=_lines("/tree", "/bogus")).status == 0


async def test_a_streamed_context_overflow_shows_the_servers_error_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """As llama.cpp's server answers an overlong prompt: an empty 200 stream, a clear 400 when unstreamed."""
    async with MockLLMServer(handler=lambda request: MockFailure.context_overflow(window=2048)) as server:
        monkeypatch.setenv("STELLATE_BASE_URL", server.openai_base_url)
        result = await asyncio.to_thread(run_process, "chat", "--provider", "openai", stdin=_lines("hi"))
        requests = len(server.requests)
    assert result.status == EXIT_STATUS["context_overflow"]
    assert result.err.count("maximum context length is 2048 tokens") == 1 and "[context_overflow]" in result.err
    assert "retrying" not in result.out and "stream ended" not in result.err
    assert requests == 2  # the stream, then the same request unstreamed; no retries


async def test_retries_are_shown_and_the_banner_names_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    steps = [MockFailure(status=503, retry_after=0.05), MockReply(text="Hello **there**.")]
    async with MockLLMServer(steps) as server:
        base_url = server.openai_base_url
        monkeypatch.setenv("STELLATE_BASE_URL", base_url)
        result = await asyncio.to_thread(run_process, "chat", "--provider", "openai", stdin=_lines("hi"))
    assert result.status == 0, result.err
    assert f"openai · gpt-4o-mini (default name; --model sets it) · at {base_url}" in result.out
    assert "↻ retrying in 0.1 s (HTTP 503, attempt 2 of 3)" in result.out
    assert "assistant › Hello **there**." in result.out  # piped: the raw text, not rendered
    assert [r.body["model"] for r in server.requests] == ["gpt-4o-mini", "gpt-4o-mini"]


def test_the_banner_names_a_chosen_model_without_a_default_mark(cli: Run, scripted: Path) -> None:
    result = cli("chat", "--model", "my-model", stdin="")
    assert "stellate chat · scripted · my-model · /help" in result.out


async def test_a_server_that_serves_one_model_is_talked_to_by_its_name() -> None:
    async with MockLLMServer([MockReply(text="Hi.")], models=["qwen2.5-7b"]) as server:
        base_url = server.openai_base_url
        result = await asyncio.to_thread(
            run_process, "chat", "--provider", "openai", "--base-url", base_url, stdin=_lines("hi")
        )
    assert result.status == 0, result.err
    assert f"stellate chat · openai · qwen2.5-7b · at {base_url} ·" in result.out
    assert [r.body["model"] for r in server.requests] == ["qwen2.5-7b"]


async def test_a_server_that_serves_several_models_is_named_in_the_banner() -> None:
    async with MockLLMServer([MockReply(text="Hi.")], models=["llama3", "mistral"]) as server:
        base_url = server.openai_base_url
        result = await asyncio.to_thread(
            run_process, "chat", "--provider", "openai", "--base-url", base_url, stdin=_lines("/quit")
        )
    assert "gpt-4o-mini (default name; the server lists llama3, mistral; --model picks one)" in result.out
