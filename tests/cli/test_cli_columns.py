"""Piped `stellate sessions list` prints plain aligned columns (no rich), the same cells as the terminal's table."""

from __future__ import annotations

from tests.cli.cli_support import Forest, Run

from stellate.cli.columns import session_columns
from stellate.cli.search import MAX_SHOWN
from stellate.log.state import Slots
from stellate.store import SessionId, SessionRecord
from stellate.store.search import MAX_LIMIT


def test_piped_list_has_a_header_and_one_aligned_row_per_session(cli: Run, forest: Forest) -> None:
    out = cli("sessions", "list").out
    header, *rows = out.splitlines()
    assert header.split()[:3] == ["id", "label", "status"]
    assert {row.split()[0] for row in rows} == {forest.root, forest.child}
    label_column = header.index("label")
    assert all(row[label_column - 2 : label_column] == "  " for row in rows)  # cells start where their header does
    assert {row[label_column:].split()[0] for row in rows} == {"Root", "Child"}


def test_the_memory_column_gives_way_to_the_width_with_an_ellipsis() -> None:
    records = [SessionRecord(id=SessionId("s-1"), slots=Slots(label="A", memory="word " * 30, last_activity=0))]
    wide = session_columns(records, current=None, width=200).splitlines()[1]
    narrow = session_columns(records, current=None, width=60).splitlines()[1]
    assert wide.endswith("…") and len(wide) < 200  # clipped to 40 characters as in the table
    assert len(narrow) == 60 and narrow.endswith("…")


def test_the_current_session_is_marked() -> None:
    records = [SessionRecord(id=SessionId(sid), slots=Slots(label=sid, last_activity=0)) for sid in ("s-1", "s-2")]
    lines = session_columns(records, current="s-2", width=120).splitlines()
    assert "◀ current" in lines[2] and "◀ current" not in lines[1]


def test_model_text_is_printed_as_it_is_never_as_markup(cli: Run, forest: Forest) -> None:
    assert cli("sessions", "rename", "Child", "[bold]x[/bold]").status == 0
    assert "[bold]x[/bold]" in cli("sessions", "list").out


def test_the_search_commands_cap_is_the_stores() -> None:
    assert MAX_SHOWN == MAX_LIMIT
