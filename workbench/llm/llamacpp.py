"""``LlamaCpp``: the offline default, llama.cpp in-process (llama-cpp-python).

The model loads lazily on first call. Structured output uses llama.cpp's grammar-constrained
decoding (``response_format={"type": "json_object", "schema": ...}``), so the JSON is valid by
construction; its content can still be wrong. Calls are serialised: one context, 2 cores.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path

from .base import BaseLLM, Generation
from .errors import LLMError


class LlamaCpp(BaseLLM):
    def __init__(self, model_path: str | os.PathLike, *, name: str | None = None, n_ctx: int = 16384,
                 n_threads: int | None = None, max_tokens: int = 512, flash_attn: bool = True, seed: int = 0):
        super().__init__()
        self.model_path = Path(model_path)
        self.model = name or self.model_path.stem
        self.n_ctx = n_ctx
        self.n_threads = n_threads or max(1, min(os.cpu_count() or 1, 8))
        self.max_tokens = max_tokens
        self.flash_attn = flash_attn
        self.seed = seed
        self._llama = None
        self._lock = threading.Lock()

    def _load(self):
        if self._llama is None:
            try:
                from llama_cpp import Llama
            except ImportError as exc:
                raise LLMError("llama-cpp-python is not installed: run `make demo` or scripts/setup_env.sh, "
                               "which build it with AMX-safe flags") from exc
            if not self.model_path.exists():
                raise LLMError(f"model file not found: {self.model_path}; run `workbench models install`")
            self._llama = Llama(model_path=str(self.model_path), n_ctx=self.n_ctx, n_threads=self.n_threads,
                                flash_attn=self.flash_attn, seed=self.seed, verbose=False)
        return self._llama

    def _generate(self, messages, *, schema, temperature, seed, max_tokens, role) -> Generation:
        with self._lock:
            llama = self._load()
            kw = {"messages": messages, "temperature": temperature, "max_tokens": max_tokens or self.max_tokens}
            if seed is not None:
                kw["seed"] = seed
            if schema is not None:
                kw["response_format"] = {"type": "json_object", "schema": schema}
            n_prompt = len(llama.tokenize("\n".join(m["content"] for m in messages).encode("utf-8")))
            if n_prompt + kw["max_tokens"] > self.n_ctx:
                raise LLMError(f"prompt of ~{n_prompt} tokens does not fit n_ctx={self.n_ctx} "
                               f"with {kw['max_tokens']} tokens to generate")
            out = llama.create_chat_completion(**kw)
        usage = out.get("usage", {})
        return Generation(out["choices"][0]["message"]["content"] or "", self.model,
                          usage.get("prompt_tokens"), usage.get("completion_tokens"))
