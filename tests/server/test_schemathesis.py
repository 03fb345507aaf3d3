"""Schemathesis over the app's own OpenAPI, on a SQLite store: every operation, then stateful sequences.

Generated requests never get a 5xx, and every response conforms to the documented schema: status codes,
content types, headers and bodies. The stateful phase follows the links schemathesis infers (a created
session's ``id`` into every ``{session_id}`` route), so routes are also exercised on sessions that exist.
Both phases are bounded: a few examples per operation, a few steps per sequence.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

try:
    import schemathesis
    from schemathesis.checks import positive_data_acceptance
except ImportError:  # the dev extra has it; CI must run this
    if os.environ.get("CI", "").lower() == "true":
        raise
    pytest.skip('schemathesis is not installed (pip install -e ".[dev]")', allow_module_level=True)

from stellate import Agent
from stellate.llm.scripted import ScriptedLLM
from stellate.server import create_app
from stellate.server.spaces import Spaces
from stellate.server.state import ServerState

DB = Path(tempfile.mkdtemp(prefix="stellate-schemathesis-")) / "fuzz.db"
# Schemathesis calls the app as host "testserver": a deployment's name, allowed as one would be.
app = create_app(Agent(f"sqlite:///{DB}", llm=ScriptedLLM(default="ok")), allowed_hosts=["testserver"])
# A body over the server's size limit is refused with 413 before its schema is looked at.
config = schemathesis.config.SchemathesisConfig.from_dict(
    {
        "checks": {
            "negative_data_rejection": {
                "expected-statuses": [
                    "400",
                    "401",
                    "403",
                    "404",
                    "405",
                    "406",
                    "409",
                    "413",
                    "415",
                    "422",
                    "428",
                    "429",
                ]
            }
        }
    }
)
schema = schemathesis.openapi.from_asgi("/openapi.json", app, config=config)
# Streams without end (the space's events, a session's live tail) cannot be fuzzed request by request.
schema = schema.exclude(path_regex=r"(/v1/events$|/events/stream$)")
# Schema-valid but meaningless values (a cursor this server never made, an anchor past a log's end...)
# are rightly refused: positive data acceptance does not hold for opaque tokens.
EXCLUDED = [positive_data_acceptance]


@schema.parametrize()
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
def test_generated_requests_get_documented_answers(case: schemathesis.Case) -> None:
    case.call_and_validate(excluded_checks=EXCLUDED)


class Workflow(schema.as_state_machine()):  # type: ignore[misc]
    def setup(self) -> None:
        # Each scenario on an empty forest: what a step creates must not depend on earlier scenarios, or
        # hypothesis sees the same choices lead to different sequences (FlakyStrategyDefinition).
        state: ServerState = app.state.stellate
        state.spaces = Spaces(Agent("memory://", llm=ScriptedLLM(default="ok")))

    def validate_response(self, response: object, case: schemathesis.Case, **kwargs: object) -> None:
        case.validate_response(response, excluded_checks=EXCLUDED, transport_kwargs=kwargs)  # type: ignore[arg-type]


def test_stateful_sequences_get_documented_answers() -> None:
    Workflow.run(
        settings=settings(
            max_examples=25, stateful_step_count=6, deadline=None, suppress_health_check=list(HealthCheck)
        )
    )
