"""``stellate sessions search QUERY``: the messages whose text holds every word, with where they are."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from stellate.cli.invocation import Invocation
from stellate.cli.parsing import positive_int

if TYPE_CHECKING:
    from rich.table import Table
    from rich.text import Text

    from stellate.store.search import SearchHit

__all__ = ["MAX_SHOWN", "add_search_parser"]

#: The store's cap on one page of hits (`stellate.store.search.MAX_LIMIT`, which the parser does not import).
MAX_SHOWN = 100


def add_search_parser(
    actions: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register ``sessions search``."""
    parser = actions.add_parser(
        "search",
        parents=[common],
        help="find messages (yours and the model's) that hold every word given",
        description="Words may appear in any order and any case; parts of words and Chinese text match too.",
    )
    parser.add_argument("query", nargs="+", help="the words to find (several words need no quotes)")
    parser.add_argument("--archived", action="store_true", help="search archived sessions too")
    parser.add_argument("--limit", type=positive_int, default=20, metavar="N", help=f"show at most N (<= {MAX_SHOWN})")
    parser.set_defaults(handler=search)


async def search(inv: Invocation) -> int:
    """Print the hits: session, seq and turn, who wrote it, and the text around the match."""
    from rich.text import Text

    from stellate.store.search import MessageSearch, SearchQuery

    database, out, args = inv.database(), inv.consoles.out, inv.args
    if not database.exists():
        out.print(f"no sessions yet: {database.describe()} does not exist")
        return 0
    query = SearchQuery(text=" ".join(args.query), include_archived=args.archived, limit=min(args.limit, MAX_SHOWN))
    async with inv.open_store() as store:
        assert isinstance(store, MessageSearch)  # every store the command opens is one
        page = await store.search_messages(query)
    if not page.hits:
        out.print("no message matches")
        return 0
    out.print(_hit_table(page.hits))
    if page.next_offset is not None:
        out.print(Text("more matches (raise --limit)", "dim"))
    return 0


def _hit_table(hits: list[SearchHit]) -> Table:
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, pad_edge=False)
    for column in ("session", "label", "seq", "turn", "role"):
        table.add_column(column, no_wrap=column == "session")
    table.add_column("text", overflow="fold")
    for hit in hits:
        label = hit.label + (" (archived)" if hit.archived else "")
        table.add_row(hit.session_id, Text(label), str(hit.seq), str(hit.turn), hit.role, _marked(hit))
    return table


def _marked(hit: SearchHit) -> Text:
    """The snippet as plain text (model output is never markup), the matches in bold."""
    from rich.text import Text

    text = Text(hit.snippet)
    for start, end in hit.highlights:
        text.stylize("bold", start, end)
    return text
