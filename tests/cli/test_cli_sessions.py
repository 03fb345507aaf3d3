from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import Forest, Run, events_of, read_db, session_ids

from stellate.cli.console import PROGRESS_MIN_EVENTS
from stellate.cli.exit_codes import EXIT_STATUS
from stellate.log.events import make_event
from stellate.store import SessionId
from stellate.store.sqlite import SqliteStore


def _seq_of(db: Path, session_id: str, event_type: str, nth: int = 0) -> int:
    return [seq for seq, kind, _ in events_of(db, session_id) if kind == event_type][nth]


def test_tree_shows_every_session_under_its_parent(cli: Run, forest: Forest) -> None:
    result = cli("sessions", "tree")
    assert result.status == 0
    root_line = next(line for line in result.out.splitlines() if forest.root in line)
    child_line = next(line for line in result.out.splitlines() if forest.child in line)
    assert "Root" in root_line and "2 turns" in root_line
    assert "Child" in child_line and child_line.index("Child") > root_line.index("Root")


def test_tree_of_a_missing_database_says_so_and_creates_nothing(cli: Run, db: Path) -> None:
    result = cli("sessions", "tree")
    assert result.status == 0 and "no sessions yet" in result.out
    assert not db.exists()


def test_show_prints_the_digest_and_the_log_with_seqs(cli: Run, forest: Forest) -> None:
    result = cli("sessions", "show", forest.child)
    assert result.status == 0
    assert f"{forest.root} (fork at seq" in result.out
    assert "inherited from" in result.out and "user/message" in result.out and "three" in result.out


def test_export_then_import_under_a_new_id_copies_the_whole_log(
    cli: Run, forest: Forest, db: Path, tmp_path: Path
) -> None:
    target = tmp_path / "child.jsonl"
    exported = cli("sessions", "export", forest.child, str(target))
    assert exported.status == 0 and "exported" in exported.out
    imported = cli("sessions", "import", str(target), "--id", "copy")
    assert imported.status == 0 and "imported copy" in imported.out
    original = [(kind, data) for _, kind, data in events_of(db, forest.child)]
    assert [(kind, data) for _, kind, data in events_of(db, "copy")] == original


def test_import_into_a_taken_id_is_refused(cli: Run, forest: Forest, tmp_path: Path) -> None:
    target = tmp_path / "root.jsonl"
    assert cli("sessions", "export", forest.root, str(target)).status == 0
    result = cli("sessions", "import", str(target))
    assert result.status == EXIT_STATUS["session_exists"] and "[session_exists]" in result.err


def test_a_corrupt_import_names_the_line_and_writes_nothing(cli: Run, forest: Forest, db: Path, tmp_path: Path) -> None:
    target = tmp_path / "root.jsonl"
    assert cli("sessions", "export", forest.root, str(target)).status == 0
    lines = target.read_text().splitlines(keepends=True)
    lines[3] = '{"seq": 2, "type": "user/message", "time": 1, "data": \n'
    target.write_text("".join(lines))
    before = session_ids(db)
    result = cli("sessions", "import", str(target), "--id", "broken")
    assert result.status == EXIT_STATUS["bad_format"]
    assert result.err.count("\n") == 1 and "line 4" in result.err
    assert session_ids(db) == before


def test_a_corrupt_import_into_a_new_database_leaves_no_file(cli: Run, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    result = cli("sessions", "import", str(bad), "--db", str(tmp_path / "new.db"))
    assert result.status == EXIT_STATUS["bad_format"] and "line 1" in result.err
    assert not (tmp_path / "new.db").exists()


def test_importing_a_missing_file_is_an_io_error(cli: Run, forest: Forest) -> None:
    result = cli("sessions", "import", "nowhere.jsonl")
    assert result.status == EXIT_STATUS["io_error"] and "nowhere.jsonl" in result.err


def test_fork_at_an_explicit_boundary_inherits_exactly_up_to_it(cli: Run, forest: Forest, db: Path) -> None:
    boundary = _seq_of(db, forest.root, "turn/end")
    result = cli("sessions", "fork", forest.root, "--label", "Early", "--boundary", str(boundary))
    assert result.status == 0 and f"at seq {boundary}" in result.out
    child = result.out.split()[1]
    assert [e[:2] for e in events_of(db, child)][: boundary + 1] == [e[:2] for e in events_of(db, forest.root)][
        : boundary + 1
    ]
    assert events_of(db, child)[boundary + 1][1] == "session/created"


def test_fork_at_a_boundary_inside_a_turn_is_refused_with_open_turn(cli: Run, forest: Forest, db: Path) -> None:
    inside = _seq_of(db, forest.root, "user/message")
    before = session_ids(db)
    result = cli("sessions", "fork", forest.root, "--label", "Bad", "--boundary", str(inside))
    assert result.status == EXIT_STATUS["open_turn"] and "[open_turn]" in result.err
    assert result.err.count("\n") == 1
    assert session_ids(db) == before


def test_fork_past_the_end_is_an_invalid_boundary(cli: Run, forest: Forest, db: Path) -> None:
    result = cli("sessions", "fork", forest.root, "--label", "Bad", "--boundary", "999")
    assert result.status == EXIT_STATUS["invalid_boundary"] and "[invalid_boundary]" in result.err


def test_fork_at_an_anchor_extends_to_the_end_of_its_turn(cli: Run, forest: Forest, db: Path) -> None:
    anchor = _seq_of(db, forest.root, "user/message")
    result = cli("sessions", "fork", forest.root, "--label", "Anchored", "--at", str(anchor))
    assert result.status == 0 and f"at seq {_seq_of(db, forest.root, 'turn/end')}" in result.out


def test_fork_of_an_unknown_session_is_not_found(cli: Run, forest: Forest, db: Path) -> None:
    before = session_ids(db)
    result = cli("sessions", "fork", "s-nope", "--label", "X")
    assert result.status == EXIT_STATUS["source_not_found"] and result.err.count("\n") == 1
    assert session_ids(db) == before


def test_unknown_ids_are_one_line_not_found(cli: Run, forest: Forest, tmp_path: Path) -> None:
    for argv in (("show", "s-nope"), ("export", "s-nope", str(tmp_path / "x.jsonl")), ("archive", "s-nope")):
        result = cli("sessions", *argv)
        assert result.status == EXIT_STATUS["session_not_found"], argv
        assert result.err.count("\n") == 1 and "s-nope" in result.err
    assert not (tmp_path / "x.jsonl").exists()


def test_commands_on_a_missing_database_create_nothing(cli: Run, db: Path) -> None:
    result = cli("sessions", "show", "s-nope")
    assert result.status == EXIT_STATUS["store_not_found"] and not db.exists()


def test_archive_makes_a_session_read_only(cli: Run, forest: Forest, db: Path) -> None:
    result = cli("sessions", "archive", forest.child)
    assert result.status == 0 and "archived" in result.out
    assert "no model provider" in result.err  # nothing to consolidate with, and it says so
    assert events_of(db, forest.child)[-1][1] == "session/archived"
    refused = cli("sessions", "fork", forest.child, "--label", "Late")
    assert refused.status == EXIT_STATUS["session_archived"]


def test_archive_consolidates_first_when_a_provider_is_configured(
    cli: Run, forest: Forest, db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["Child memory"]))
    monkeypatch.setenv("STELLATE_PROVIDER", "scripted")
    monkeypatch.setenv("STELLATE_SCRIPT", str(script))
    result = cli("sessions", "archive", forest.child)
    assert result.status == 0
    memory = [data for _, kind, data in events_of(db, forest.child) if kind == "memory/put"]
    assert memory and memory[-1]["content"] == "Child memory"  # type: ignore[index]


def _long_session(db: Path, events: int) -> str:
    async def build(store: SqliteStore) -> str:
        batch = [make_event("session/created", {"label": "Long"})]
        batch += [make_event("memory/put", {"content": f"m{i}"}) for i in range(events - 1)]
        return (await store.create_session(events=batch)).id

    session_id = read_db(db, build)
    assert isinstance(session_id, str)
    return session_id


def test_long_copies_draw_a_progress_bar_on_a_terminal(
    cli: Run, forest: Forest, db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    long_id = _long_session(db, PROGRESS_MIN_EVENTS + 500)
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich treats the captured stderr as a terminal
    target = tmp_path / "long.jsonl"
    exported = cli("sessions", "export", long_id, str(target))
    assert exported.status == 0 and f"exporting {long_id}" in exported.err
    imported = cli("sessions", "import", str(target), "--id", "long-copy")
    assert imported.status == 0 and "importing long.jsonl" in imported.err
    assert len(events_of(db, "long-copy")) == PROGRESS_MIN_EVENTS + 500


def test_short_copies_and_pipes_draw_no_bar(
    cli: Run, forest: Forest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    piped = cli("sessions", "export", forest.root, str(tmp_path / "r.jsonl"))
    assert piped.status == 0 and piped.err == ""
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    short = cli("sessions", "export", forest.root, str(tmp_path / "r.jsonl"))
    assert short.status == 0 and "exporting" not in short.err


def test_an_import_that_is_not_utf8_is_bad_format_and_writes_nothing(
    cli: Run, forest: Forest, db: Path, tmp_path: Path
) -> None:
    target = tmp_path / "root.jsonl"
    assert cli("sessions", "export", forest.root, str(target)).status == 0
    lines = target.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b'"data":{', b'"data":{"note":"caf\xe9",')
    target.write_bytes(b"".join(lines))
    before = session_ids(db)
    result = cli("sessions", "import", str(target), "--id", "latin1")
    assert result.status == EXIT_STATUS["bad_format"] == 8
    assert "line 3" in result.err and "[bad_format]" in result.err
    assert session_ids(db) == before


# -- naming sessions by prefix or label, listing, renaming --------------------------------------------------------


def test_a_label_or_a_unique_id_prefix_names_a_session(cli: Run, forest: Forest) -> None:
    by_label = cli("sessions", "show", "  child ")
    by_prefix = cli("sessions", "show", forest.child[:-4])
    assert by_label.status == by_prefix.status == 0
    assert f"id             {forest.child}" in by_label.out and by_label.out == by_prefix.out


def test_a_reference_that_fits_several_sessions_lists_them_and_picks_none(cli: Run, forest: Forest, db: Path) -> None:
    assert cli("sessions", "fork", "Root", "--label", "child").status == 0  # a second "Child", other case
    result = cli("sessions", "export", "Child", "out.jsonl")
    assert result.status == EXIT_STATUS["usage_error"] and "[usage_error]" in result.err
    assert "matches 2 sessions" in result.err and forest.child in result.err
    assert not Path("out.jsonl").exists()


def test_a_reference_that_fits_nothing_is_session_not_found(cli: Run, forest: Forest) -> None:
    result = cli("sessions", "archive", "Nobody")
    assert result.status == EXIT_STATUS["session_not_found"] and "[session_not_found]" in result.err


def test_list_shows_recent_sessions_first_and_filters_them(cli: Run, forest: Forest, db: Path) -> None:
    async def note(store: SqliteStore) -> None:
        await store.append(SessionId(forest.root), [make_event("memory/put", {"content": "Visa deadlines in May"})])

    read_db(db, note)
    everything = cli("sessions", "list")
    assert everything.status == 0
    rows = [line for line in everything.out.splitlines() if line.startswith("s-")]
    assert [row.split()[0] for row in rows] == [forest.root, forest.child]  # the root was active last
    assert "Visa deadlines in May" in everything.out
    found = cli("sessions", "list", "--search", "MAY visa")
    assert forest.root in found.out and forest.child not in found.out
    assert forest.child in cli("sessions", "list", "--under", "Child").out
    assert forest.root not in cli("sessions", "list", "--under", "Child").out
    assert forest.child not in cli("sessions", "list", "--roots").out
    assert "no session matches" in cli("sessions", "list", "--status", "archived").out


def test_rename_takes_several_words_and_the_log_records_it(cli: Run, forest: Forest, db: Path) -> None:
    result = cli("sessions", "rename", "Child", "Budget", "for", "Germany")
    assert result.status == 0 and "'Budget for Germany'" in result.out
    assert events_of(db, forest.child)[-1][1:] == ("label/set", {"label": "Budget for Germany"})
    assert "Budget for Germany" in cli("sessions", "show", "budget FOR germany").out


@pytest.mark.parametrize("limit", ["-1", "0", "two"])
def test_a_limit_below_one_is_refused_not_taken_as_all_but_one(cli: Run, forest: Forest, limit: str) -> None:
    result = cli("sessions", "list", "--limit", limit)
    assert result.status == EXIT_STATUS["usage_error"]
    assert f"must be a whole number of 1 or more, not '{limit}'" in result.err
    assert result.out == ""


def test_a_limit_shows_that_many_and_counts_the_rest(cli: Run, forest: Forest) -> None:
    result = cli("sessions", "list", "--limit", "1")
    assert result.status == 0 and "1 more (raise --limit)" in result.out
    assert (forest.child in result.out) != (forest.root in result.out)
