"""``stellate sessions search``: the hits of a query in the database, with where each one is."""

from __future__ import annotations

from pathlib import Path

from cli_support import Forest, Run


def test_search_lists_each_message_once_with_its_session_and_seq(cli: Run, forest: Forest) -> None:
    result = cli("sessions", "search", "three")
    assert result.status == 0, result.err
    lines = [line for line in result.out.splitlines() if forest.child in line]
    assert lines and all("Child" in line for line in lines)
    assert forest.root not in result.out  # the child's own turn; nothing inherited is repeated
    assert any(" user " in line and "three" in line for line in lines)


def test_inherited_messages_are_listed_at_their_owner(cli: Run, forest: Forest) -> None:
    result = cli("sessions", "search", "one")
    assert result.status == 0 and forest.root in result.out and forest.child not in result.out


def test_search_without_a_match_or_a_database_says_so(cli: Run, db: Path, forest: Forest) -> None:
    assert cli("sessions", "search", "zebra").out.strip() == "no message matches"
    db.unlink()
    missing = cli("sessions", "search", "one")
    assert missing.status == 0 and "no sessions yet" in missing.out and not db.exists()


def test_limit_cuts_and_says_more(cli: Run, forest: Forest) -> None:
    result = cli("sessions", "search", "ok", "--limit", "1")
    assert result.status == 0 and "more matches (raise --limit)" in result.out


def test_an_unusable_query_exits_with_the_usage_status(cli: Run, forest: Forest) -> None:
    result = cli("sessions", "search", "a b c d e f g h i")
    assert result.status == 2 and "[usage_error]" in result.err
