"""What a run measures: one `Case` per (system, size), each run in a fresh process.

Sizes: B1/B5 in prior turns (H); B2 and B3 in events of stellate's log (N), peers getting the same number of
turns (N/6, stellate writes 6 events per plain turn); B4 in sessions (S).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

STELLATE = "stellate (durability=step, default)"
STELLATE_TURN = "stellate (durability=turn)"
STELLATE_REAL = "stellate, history from real turns"
STELLATE_FULL = "stellate (durability=step, synchronous=FULL)"
STELLATE_COLD = "stellate, cold: fresh store + Agent per turn"
LANGGRAPH_COLD = "LangGraph, cold: fresh connection + graph per turn"
AGENTS_COLD = "Agents SDK, cold: fresh SQLiteSession per turn"
RAW = "raw SQLite floor (6 rows, 1 txn)"
RAW_SHAPE = "raw: stellate's own SQL for a turn (diagnostic)"
LANGGRAPH = "LangGraph + SqliteSaver"
AGENTS = "Agents SDK + SQLiteSession"
RAW_PG = "raw PostgreSQL floor (6 rows, 1 txn)"
LANGGRAPH_PG = "LangGraph + PostgresSaver"
AGENTS_PG = "Agents SDK + SQLAlchemySession"

FORK_AGENT = "stellate fork_session(context=inherit)"
FORK_STORE = "stellate store fork (ForkRequest, Boundary)"
FORK_TURN = "stellate fork_session + 1 turn"
FORK_RAW_COPY = "raw floor: copy the N rows (naive)"
FORK_RAW_REF = "raw floor: one lineage row (by reference)"
FORK_LANGGRAPH = "LangGraph update_state on a past checkpoint"
FORK_LANGGRAPH_TURN = "LangGraph invoke from a past checkpoint (fork + 1 turn)"
FORK_AGENTS = "Agents SDK create_branch_from_turn"
FORK_AGENTS_TURN = "Agents SDK create_branch_from_turn + 1 turn"
FORK_COLD = "stellate fork_session, cold source (fresh store + Agent)"
FORK_COLD_TURN = "stellate child's first turn, cold (fresh store + Agent)"

B3_STELLATE = "stellate Session.load + messages()"
B3_NO_SEGMENTS = "stellate, fold segments deleted (full fold)"
B3_RAW = "raw floor: SELECT the N rows + json.loads"
B4_STELLATE = "stellate Agent.list_session_digests()"
B4_RAW = "raw floor: SELECT of the digest columns"

# -- B4-page (bench/forest_cases.py): the listing and the forest, paged, at 10× B4's sessions ------------------
B4_PAGE = {
    "first": "stellate first page of 100 digests",
    "middle": "stellate page of 100 after the middle session",
    "walk": "stellate whole listing in pages of 1,000",
    "topology": "stellate whole forest in /forest/nodes pages of 1,000",
    "http_first": "stellate GET /v1/sessions?limit=100 in-process (diagnostic)",
}
B4_PAGE_RAW = {key: f"raw floor: the same SELECT ({key})" for key in B4_PAGE}


def _b4_page(sizes: Sizes) -> list[Case]:
    params = {"sessions": sizes.b4_s * 10, "runs": sizes.runs}
    rows = {**B4_PAGE, **{f"{k}_raw": v for k, v in B4_PAGE_RAW.items()}}
    return [Case("B4-page", sizes.b4_s * 10, "forest.b4_page", params, rows, once=True)]


# -- end B4-page ----------------------------------------------------------------------------------------------

E2E = {
    "stellate": "stellate + OpenAIAdapter (streamed)",
    "httpx_floor": "bare httpx: the same body, stream read to its end",
    "langgraph": "LangGraph + ChatOpenAI",
    "agents": "Agents SDK + OpenAIChatCompletionsModel",
}

FRESH = {
    "stellate": "stellate: first turn of a fresh process",
    "langgraph": "LangGraph: first turn of a fresh process",
    "agents": "Agents SDK: first turn of a fresh process",
}
FRESH_IMPORTS = {
    "stellate": "stellate: its imports (Agent, SqliteStore)",
    "langgraph": "LangGraph: its imports (SqliteSaver, graph)",
    "agents": "Agents SDK: its imports (Runner, SQLiteSession)",
}
CLI_HELP = "stellate --help (whole process)"
CLI_LIST = "stellate sessions list (whole process)"
CLI_FLOOR = "floor: python -c 'import sqlite3, pydantic'"

SERVER_P50 = "p50 per-turn latency, ms"
SERVER_P99 = "p99 per-turn latency, ms"
SERVER_RATE = "throughput, turns/s"
STREAMS_OPEN = "open a stream, ms each"
STREAMS_P50 = "p50 delivery to all streams, ms"
STREAMS_P99 = "p99 delivery to all streams, ms"
STREAMS_HELD = "idle stream memory: server RSS growth per open stream, KiB"
STREAMS_CLOSED = "after they all close: RSS still grown per stream, KiB"
STREAMS_REOPENED = "N streams opened again: RSS growth per stream, KiB"

CAPACITY_P50 = "p50 added delay per chunk (model → client), ms"
CAPACITY_P99 = "p99 added delay per chunk (model → client), ms"
CAPACITY_ERRORS = "turns failed or cut short"
CAPACITY_CLIENT = "load generator's CPU, % of one core"
CAPACITY_SERVER = "server CPU per chunk delivered, µs"
CAPACITY_FIRST = "p99 wait for the first chunk, ms"
CAPACITY_PARTS = {
    "p50": CAPACITY_P50,
    "p99": CAPACITY_P99,
    "first": CAPACITY_FIRST,
    "errors": CAPACITY_ERRORS,
    "client_cpu": CAPACITY_CLIENT,
    "server_cpu": CAPACITY_SERVER,
}
"""The capacity cases' result parts and their rows (B10, B10-peer)."""
B10_PEER_LABELS = {"stellate": "stellate serve, SQLite", "langgraph": "langgraph dev (inmem)"}
SOAK_WARM = "server RSS after warm-up (first quarter of the rounds), MiB"
SOAK_END = "server RSS at the end, MiB"
SOAK_GROWTH = "RSS growth per round after warm-up, KiB"

PEERS = ("langgraph", "agents")


@dataclass(frozen=True)
class Case:
    """One process's work, and the table rows its result feeds (result key -> row label; "" = whole)."""

    bench: str
    x: int
    case: str
    params: dict[str, Any]
    rows: dict[str, str]
    needs: tuple[str, ...] = field(default=())
    """Optional parts it needs: ``peers`` (the bench extra), ``pg`` (the server)."""
    once: bool = False
    """Run in the first repetition only: the case repeats its measurement inside its process (B3, B4)."""

    def spec(self) -> dict[str, Any]:
        return {"case": self.case, "params": self.params}


@dataclass(frozen=True)
class Sizes:
    b1_h: tuple[int, ...]
    b2_n: tuple[int, ...]
    b3_n: int
    b4_s: int
    k_stellate: int
    k_peer: int
    k_peer_big: int
    """Timed turns for a peer at the largest H (a turn there takes about a second)."""
    k_raw: int
    forks: int
    peer_forks: int
    fork_turns: int
    runs: int
    """Timed repetitions inside the one process of each B3 and B4 case."""
    diagnostics: bool = True
    """Also the control and diagnostic rows (real-turn history, stellate's own SQL)."""
    b6_c: tuple[int, ...] = (1, 10, 100)
    """B6: concurrent sessions through HTTP."""
    b6_turns: int = 20
    """B6: timed turns per session."""
    b6_streams: tuple[int, ...] = (10, 100, 500)
    """B6: SSE streams held at once."""
    k_cold: int = 10
    """Cold turns (each on a freshly opened store) for stellate; peers get `k_cold_peer`."""
    k_cold_peer: int = 5
    b8_h: tuple[int, ...] = (100, 1000)
    k_e2e: int = 20
    b9_h: int = 100
    """B9: prior turns of the session a fresh process takes its first turn on."""
    k_fresh: int = 10
    """B9: fresh processes per case (each one first turn, or one CLI command of each kind)."""
    b10_n: tuple[int, ...] = (100, 250, 500, 750)
    """B10: concurrent streamed turns through one worker."""
    b10_chunks: int = 100
    b10_rate: float = 20.0
    """B10: the model's chunks per turn, and per second."""
    soak: tuple[int, int, int, int] = (20, 20, 1000, 100)
    """B10-soak: rounds, sessions, turns per round, stream opens and closes per round."""
    b10_peer_n: tuple[tuple[str, tuple[int, ...]], ...] = (
        ("stellate", (100, 250, 500, 750)),
        ("langgraph", (25, 50, 100, 250)),
    )
    """B10-peer: streamed turns at once through each system's server, the model over HTTP."""


FULL = Sizes((100, 1000, 10000), (1000, 10000, 100000), 100000, 10000, 50, 20, 10, 200, 8, 5, 3, 5)
QUICK = Sizes(
    (100, 1000),
    (1000, 10000),
    10000,
    1000,
    20,
    5,
    5,
    100,
    5,
    3,
    2,
    2,
    diagnostics=False,
    b6_c=(1, 10),
    b6_turns=5,
    b6_streams=(10, 100),
    k_cold=5,
    k_cold_peer=3,
    k_e2e=5,
    k_fresh=5,
    b10_n=(50, 100),
    soak=(8, 10, 100, 20),
    b10_peer_n=(("stellate", (50, 100)), ("langgraph", (25, 50))),
)
SMOKE = Sizes(
    (3,),
    (60,),
    60,
    6,
    2,
    2,
    2,
    3,
    2,
    1,
    1,
    1,
    b6_c=(2,),
    b6_turns=2,
    b6_streams=(2,),
    k_cold=2,
    k_cold_peer=1,
    b8_h=(3,),
    k_e2e=2,
    b9_h=3,
    k_fresh=1,
    b10_n=(2,),
    b10_chunks=5,
    b10_rate=50.0,
    soak=(2, 2, 2, 2),
    b10_peer_n=(("stellate", (2,)), ("langgraph", (2,))),
)

#: B6's mock model answers after this many milliseconds.
B6_LATENCY_MS = 20

# -- B6 made real (issue 22, goal 1): each system's server in its own process, the mock model in another.
B6_LABELS = {
    "sqlite": "stellate serve, SQLite",
    "pg1": "stellate serve, PostgreSQL, 1 worker",
    "pg2": "stellate serve, PostgreSQL, 2 workers",
    "floor": "floor: minimal FastAPI app (same rows, same streamed call)",
    "langgraph": "langgraph dev (inmem)",
}
B6_SYSTEMS: dict[str, tuple[str, dict[str, Any]]] = {
    "sqlite": ("stellate", {}),
    "pg1": ("stellate", {"db": "pg", "workers": 1}),
    "pg2": ("stellate", {"db": "pg", "workers": 2}),
    "floor": ("floor", {}),
    "langgraph": ("langgraph", {}),
}
B6_LANGGRAPH_TURNS_AT_100 = 4
"""langgraph dev's turns per session at C = 100 (20 each did not end within the 900 s a case gets)."""
B6_PARTS = {"p50": SERVER_P50, "p99": SERVER_P99, "rate": SERVER_RATE, "cpu": "server CPU per turn, ms"}


def _b1(bench: str, db: str, sizes: Sizes) -> list[Case]:
    pg = ("pg",) if db == "pg" else ()
    peers = {"langgraph": LANGGRAPH, "agents": AGENTS}
    if pg:
        peers = {"langgraph": LANGGRAPH_PG, "agents": AGENTS_PG}
    cases: list[Case] = []
    for h in sizes.b1_h:
        base = {"h": h, "db": db, "k": sizes.k_stellate}
        cases += [
            Case(bench, h, "stellate.b1", base, {"": STELLATE}, needs=pg),
            Case(bench, h, "stellate.b1", {**base, "durability": "turn"}, {"": STELLATE_TURN}, needs=pg),
            Case(bench, h, "raw.b1", {"h": h, "db": db, "k": sizes.k_raw}, {"": RAW_PG if pg else RAW}, needs=pg),
        ]
        if not pg:
            cases.append(Case(bench, h, "raw.b1_shape", {"h": h, "k": sizes.k_raw}, {"": RAW_SHAPE}))
            if h <= 1000:
                cases.append(Case(bench, h, "stellate.b1", {**base, "real": True}, {"": STELLATE_REAL}))
        k = sizes.k_peer_big if h >= 10000 else sizes.k_peer
        for peer, label in peers.items():
            cases.append(Case(bench, h, f"{peer}.b1", {"h": h, "db": db, "k": k}, {"": label}, needs=("peers", *pg)))
        if not pg:
            cases += _b1_sqlite_only(bench, h, sizes)
    return cases


def _b1_sqlite_only(bench: str, h: int, sizes: Sizes) -> list[Case]:
    """stellate at synchronous=FULL (the peers' setting), and a cold turn for every system."""
    full = {"h": h, "db": "sqlite", "k": sizes.k_stellate, "synchronous": "FULL"}
    cold, peer_cold = {"h": h, "k": sizes.k_cold}, {"h": h, "k": sizes.k_cold_peer}
    return [
        Case(bench, h, "stellate.b1", full, {"": STELLATE_FULL}),
        Case(bench, h, "stellate.b1_cold", cold, {"": STELLATE_COLD}),
        Case(bench, h, "langgraph.b1_cold", peer_cold, {"": LANGGRAPH_COLD}, needs=("peers",)),
        Case(bench, h, "agents.b1_cold", peer_cold, {"": AGENTS_COLD}, needs=("peers",)),
    ]


def _b2(bench: str, db: str, sizes: Sizes) -> list[Case]:
    pg = ("pg",) if db == "pg" else ()
    cases: list[Case] = []
    for n in sizes.b2_n:
        forks = {"n": n, "db": db, "forks": sizes.forks, "fork_turns": sizes.fork_turns}
        rows = {"agent": FORK_AGENT, "agent_turn": FORK_TURN, "store": FORK_STORE}
        cases.append(Case(bench, n, "stellate.b2", forks, rows, needs=pg))
        if not pg:
            cold_rows = {"fork": FORK_COLD, "turn": FORK_COLD_TURN}
            cases.append(Case(bench, n, "stellate.b2_cold", forks, cold_rows))
        peer_forks = {**forks, "forks": sizes.peer_forks}
        lg_rows = {"fork": FORK_LANGGRAPH, "fork_turn": FORK_LANGGRAPH_TURN}
        cases.append(Case(bench, n, "langgraph.b2", peer_forks, lg_rows, needs=("peers", *pg)))
        if not pg:  # create_branch_from_turn exists only in AdvancedSQLiteSession
            rows = {"fork": FORK_AGENTS, "fork_turn": FORK_AGENTS_TURN}
            cases.append(Case(bench, n, "agents.b2", peer_forks, rows, needs=("peers",)))
            raw = {"copy": FORK_RAW_COPY, "reference": FORK_RAW_REF}
            cases.append(Case(bench, n, "raw.b2", {"n": n, "forks": sizes.forks}, raw))
    return cases


def _b3(sizes: Sizes) -> list[Case]:
    n, params, peers = sizes.b3_n, {"n": sizes.b3_n, "runs": sizes.runs}, ("peers",)
    repair = {**params, "repair": True}
    return [
        Case("B3", n, "stellate.b3", params, {"": B3_STELLATE}, once=True),
        Case("B3", n, "stellate.b3", {**params, "segments": False}, {"": B3_NO_SEGMENTS}, once=True),
        Case("B3", n, "stellate.b3", repair, {"": "stellate, open turn at the end (repair)"}, once=True),
        Case("B3", n, "raw.b3", params, {"": B3_RAW}, once=True),
        Case("B3", n, "langgraph.b3", params, {"": "LangGraph get_state (N/6 turns)"}, needs=peers, once=True),
        Case("B3", n, "agents.b3", params, {"": "Agents SDK get_items (N/6 turns)"}, needs=peers, once=True),
    ]


def _b4(sizes: Sizes) -> list[Case]:
    params = {"sessions": sizes.b4_s, "runs": sizes.runs}
    return [
        Case("B4", sizes.b4_s, "stellate.b4", params, {"": B4_STELLATE}, once=True),
        Case("B4", sizes.b4_s, "raw.b4", params, {"": B4_RAW}, once=True),
    ]


def _b6(sizes: Sizes) -> list[Case]:
    out = []
    for c in sizes.b6_c:
        for key, (system, extra) in B6_SYSTEMS.items():
            turns = (
                min(sizes.b6_turns, B6_LANGGRAPH_TURNS_AT_100) if system == "langgraph" and c >= 100 else sizes.b6_turns
            )
            params = {"system": system, "sessions": c, "turns": turns, "latency_ms": B6_LATENCY_MS, **extra}
            needs = ("pg",) if extra.get("db") == "pg" else ("langgraph-dev",) if system == "langgraph" else ()
            rows = {part: f"{B6_LABELS[key]}: {what}" for part, what in B6_PARTS.items()}
            out.append(Case("B6", c, "serve.turns", params, rows, needs=needs))
    rows = {
        "open": STREAMS_OPEN,
        "p50": STREAMS_P50,
        "p99": STREAMS_P99,
        "held": STREAMS_HELD,
        "closed": STREAMS_CLOSED,
        "reopened": STREAMS_REOPENED,
    }
    streams = [
        Case("B6-streams", n, "server.b6_streams", {"streams": n, "events": 20, "latency_ms": B6_LATENCY_MS}, rows)
        for n in sizes.b6_streams
    ]
    return out + streams


def _b8(sizes: Sizes) -> list[Case]:
    """End to end against the loopback mock: wall and CPU time per turn, each system with its real client."""
    cases = []
    for h in sizes.b8_h:
        for system, label in E2E.items():
            needs = ("peers",) if system in PEERS else ()
            rows = {"wall": f"{label} (wall)", "cpu": f"{label} (CPU)"}
            cases.append(Case("B8", h, f"e2e.{system}", {"h": h, "k": sizes.k_e2e}, rows, needs=needs))
    return cases


def _b9(sizes: Sizes) -> list[Case]:
    """A fresh process: each system's first turn at H, and the CLI's start (issue 22)."""
    h, params = sizes.b9_h, {"h": sizes.b9_h, "k": sizes.k_fresh}
    cases = []
    for system, label in FRESH.items():
        needs = ("peers",) if system in PEERS else ()
        rows = {"first": label, "imports": FRESH_IMPORTS[system]}
        cases.append(Case("B9", h, f"fresh.{system}", params, rows, needs=needs))
    cli_rows = {"help": CLI_HELP, "list": CLI_LIST, "floor": CLI_FLOOR}
    return [*cases, Case("B9", h, "fresh.cli", params, cli_rows)]


def _b10(sizes: Sizes) -> list[Case]:
    """One worker: streamed turns at once (issue 22, goal 2), and a bounded soak (goal 7)."""
    rows = {part: label for part, label in CAPACITY_PARTS.items() if part != "first"}  # no first-chunk wait here
    chunks = {"chunks": sizes.b10_chunks, "rate": sizes.b10_rate}
    cases = [Case("B10", n, "streaming.capacity", {"turns": n, **chunks}, rows) for n in sizes.b10_n]
    rounds, sessions, turns, streams = sizes.soak
    params = {"rounds": rounds, "sessions": sessions, "turns": turns, "streams": streams}
    rows = {"warm": SOAK_WARM, "end": SOAK_END, "growth": SOAK_GROWTH}
    return [*cases, Case("B10-soak", rounds * turns, "streaming.soak", params, rows, once=True)]


def _b10_peer(sizes: Sizes) -> list[Case]:
    """Goal 2 beside a peer: streamed turns at once through each system's server, the paced model over HTTP."""
    cases = []
    for system, ns in sizes.b10_peer_n:
        needs = ("langgraph-dev",) if system == "langgraph" else ()
        rows = {part: f"{B10_PEER_LABELS[system]}: {what}" for part, what in CAPACITY_PARTS.items()}
        params = {"system": system, "chunks": sizes.b10_chunks, "rate": sizes.b10_rate}
        cases += [Case("B10-peer", n, "stream_peers.capacity", {**params, "turns": n}, rows, needs=needs) for n in ns]
    return cases


# -- B11: big sessions (issue 22, goal 6) --
B11_ROWS = {
    "export": "stellate export_session (JSONL file)",
    "export_floor": "floor: bare SELECT written as JSON lines (stdlib)",
    "import": "stellate import_session (into a fresh store)",
    "import_floor": "floor: the lines decoded + bare executemany INSERT (1 txn)",
    "ctx_early": "cold context_at, first model call",
    "ctx_middle": "cold context_at, middle model call",
    "ctx_last": "cold context_at, last model call",
    "record": "cold record read (get_session)",
    "load": "cold Session.load (whole session)",
}
B11_N = {"full": (1000, 10000, 100000), "quick": (1000, 10000), "smoke": (60,)}
B11_RUNS = {"full": 5, "quick": 3, "smoke": 1}


def _b11(sizes: Sizes) -> list[Case]:
    kind = "smoke" if sizes is SMOKE else "quick" if sizes is QUICK else "full"
    params = {"runs": B11_RUNS[kind]}
    return [Case("B11", n, "session_io.b11", {**params, "n": n}, B11_ROWS, once=True) for n in B11_N[kind]]


def _diagnostic(case: Case) -> bool:
    return case.case == "raw.b1_shape" or bool(case.params.get("real"))


def cases(sizes: Sizes, benches: set[str]) -> list[Case]:
    """Every case of the selected benchmarks, in run order."""
    makers: list[tuple[set[str], Any]] = [
        ({"B1"}, lambda: _b1("B1", "sqlite", sizes)),
        ({"B2"}, lambda: _b2("B2", "sqlite", sizes)),
        ({"B3"}, lambda: _b3(sizes)),
        ({"B4"}, lambda: _b4(sizes)),
        ({"B4", "B4-PAGE"}, lambda: _b4_page(sizes)),
        ({"B8"}, lambda: _b8(sizes)),
        ({"B9"}, lambda: _b9(sizes)),
        ({"B5", "B5-TURN"}, lambda: _b1("B5-turn", "pg", sizes)),
        ({"B5", "B5-FORK"}, lambda: _b2("B5-fork", "pg", sizes)),
        ({"B6"}, lambda: _b6(sizes)),
        ({"B10"}, lambda: _b10(sizes)),
        ({"B10", "B10-PEER"}, lambda: _b10_peer(sizes)),
        ({"B11"}, lambda: _b11(sizes)),
    ]
    out: list[Case] = []
    for names, make in makers:
        if names & benches:
            out += make()
    return out if sizes.diagnostics else [c for c in out if not _diagnostic(c)]
