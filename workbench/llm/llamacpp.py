"""``LlamaCpp``: the offline default, llama.cpp in-process (llama-cpp-python).

The model loads lazily on first call. Structured output uses llama.cpp's grammar-constrained
decoding (``response_format={"type": "json_object", "schema": ...}``), so the JSON is valid by
construction; its content can still be wrong. Calls are serialised: one context, 2 cores.

Context size: the context starts at ``n_ctx`` (16k, enough for every call except whole-conversation
prompts) and grows, once, up to the model's trained limit (``n_ctx_train``: 32k for Qwen2.5) when a
prompt needs it, so Full-Context over a whole LoCoMo conversation fits while ordinary runs keep the
smaller KV cache. A prompt that does not fit even the limit raises ``LLMError`` naming the sizes
(the harness records it as a failed question). ``max_ctx`` caps the growth (memory).

Prefix reuse: llama-cpp-python keeps the KV cache of the previous call and evaluates only the
tokens after the longest common prefix; ``state_cache_mb`` > 0 also keeps whole prefix states in
RAM (``LlamaRAMCache``) so an interleaved call does not throw a shared prefix away — for short
prompts only: llama-cpp-python copies the whole logits buffer (n_batch x vocabulary floats, ~311 MB
for Qwen2.5) into every saved state and its capacity does not count it, so a live LoCoMo recording
with a 1 GB cap grew to 24 GB and was OOM-killed. Long recordings order their calls instead
(``benchmarks/record_real_scale.py``: answers first, the judge in a second pass). Every call
adds to ``prefix_stats`` (prompt tokens sent vs. evaluated, per role), which
``benchmarks/bench_prefix_reuse.py`` reports.
"""
from __future__ import annotations

import os
import threading
from collections import defaultdict
from pathlib import Path

from .base import BaseLLM, Generation
from .errors import LLMError

#: chat-template tokens per message (role markers, separators) on top of the content's own tokens
TEMPLATE_TOKENS_PER_MESSAGE = 8
#: the reply cap of a call that names none (a cassette records ``max_tokens: null`` for it)
DEFAULT_MAX_TOKENS = 512


class LlamaCpp(BaseLLM):
    def __init__(self, model_path: str | os.PathLike, *, name: str | None = None, n_ctx: int = 16384,
                 max_ctx: int | None = None, n_threads: int | None = None, max_tokens: int = DEFAULT_MAX_TOKENS,
                 flash_attn: bool = True, seed: int = 0, state_cache_mb: int = 0):
        super().__init__()
        self.model_path = Path(model_path)
        self.model = name or self.model_path.stem
        self.n_ctx = n_ctx
        self.max_ctx = max_ctx
        self.n_threads = n_threads or max(1, min(os.cpu_count() or 1, 8))
        self.max_tokens = max_tokens
        self.flash_attn = flash_attn
        self.seed = seed
        self.state_cache_mb = state_cache_mb
        self.prefix_stats: dict[str, dict] = defaultdict(lambda: {"calls": 0, "sent": 0, "evaluated": 0})
        self._llama = None
        self._lock = threading.Lock()
        self._prompt_eval: list[int] = []  # tokens handed to the first eval of the current call

    def _load(self, n_ctx: int | None = None):
        if self._llama is None or (n_ctx is not None and n_ctx != self._llama.n_ctx()):
            try:
                from llama_cpp import Llama
            except ImportError as exc:
                raise LLMError("llama-cpp-python is not installed: run `make demo` or scripts/setup_env.sh, "
                               "which build it with AMX-safe flags") from exc
            if not self.model_path.exists():
                raise LLMError(f"model file not found: {self.model_path}; run `workbench models install`")
            if self._llama is not None:
                self._llama.close()
                self._llama = None
            llama = Llama(model_path=str(self.model_path), n_ctx=n_ctx or self.n_ctx, n_threads=self.n_threads,
                          flash_attn=self.flash_attn, seed=self.seed, verbose=False)
            if self.state_cache_mb > 0:
                from llama_cpp import LlamaRAMCache

                llama.set_cache(LlamaRAMCache(capacity_bytes=self.state_cache_mb << 20))
            self._count_prompt_evals(llama)
            self._llama = llama
        return self._llama

    def _count_prompt_evals(self, llama) -> None:
        """Wrap ``llama.eval``: its first call in a completion receives the prompt tokens not in the KV cache."""
        inner = llama.eval

        def counting_eval(tokens):
            if self._prompt_eval and self._prompt_eval[-1] < 0:
                self._prompt_eval[-1] = len(tokens)
            return inner(tokens)

        llama.eval = counting_eval

    def trained_context_cheaply(self) -> int | None:
        """The context this backend can grow to, read from the GGUF metadata with the vocabulary only
        (no weights), so an estimate can check a prompt's size without loading the model. None when
        the file is missing or says nothing."""
        if self.max_ctx:
            return int(self.max_ctx)
        if self._llama is not None:
            return self.context_limit()
        if not Path(self.model_path).is_file():
            return None
        from llama_cpp import Llama

        try:
            return trained_context(Llama(model_path=str(self.model_path), vocab_only=True, verbose=False))
        except (LLMError, ValueError, OSError):
            return None

    def context_limit(self) -> int:
        """The largest context this model may use: its trained context, capped by ``max_ctx``."""
        limit = trained_context(self._load())
        return min(limit, self.max_ctx) if self.max_ctx else limit

    def _fit(self, messages, max_tokens: int):
        """The loaded model with a context large enough for this prompt, or ``LLMError`` naming the sizes."""
        llama = self._load()
        n_prompt = sum(len(llama.tokenize(m["content"].encode("utf-8"), add_bos=False)) + TEMPLATE_TOKENS_PER_MESSAGE
                       for m in messages)
        need = n_prompt + max_tokens
        if need <= llama.n_ctx():
            return llama
        limit = self.context_limit()
        if need > limit:
            raise LLMError(f"prompt of ~{n_prompt} tokens does not fit the model's context of {limit} tokens "
                           f"with {max_tokens} tokens to generate (context now {llama.n_ctx()})")
        return self._load(limit)

    def _generate(self, messages, *, schema, temperature, seed, max_tokens, role) -> Generation:
        with self._lock:
            kw = {"messages": messages, "temperature": temperature, "max_tokens": max_tokens or self.max_tokens}
            if seed is not None:
                kw["seed"] = seed
            if schema is not None:
                kw["response_format"] = {"type": "json_object", "schema": schema}
            llama = self._fit(messages, kw["max_tokens"])
            self._prompt_eval.append(-1)
            try:
                out = llama.create_chat_completion(**kw)
            finally:
                evaluated = self._prompt_eval.pop()
        usage = out.get("usage", {})
        sent = usage.get("prompt_tokens")
        if sent is not None:
            stats = self.prefix_stats[role or ""]
            stats["calls"] += 1
            stats["sent"] += sent
            stats["evaluated"] += max(evaluated, 0)
        return Generation(out["choices"][0]["message"]["content"] or "", self.model,
                          sent, usage.get("completion_tokens"))


def trained_context(llama) -> int:
    """The context length the model was trained with (llama-cpp-python 0.3 keeps it on the inner model;
    the GGUF metadata ``<arch>.context_length`` says the same)."""
    for get in (getattr(llama, "n_ctx_train", None), getattr(getattr(llama, "_model", None), "n_ctx_train", None)):
        if callable(get) and int(get()) > 0:  # 0 when only the vocabulary is loaded
            return int(get())
    meta = getattr(llama, "metadata", {}) or {}
    arch = meta.get("general.architecture", "")
    if f"{arch}.context_length" in meta:
        return int(meta[f"{arch}.context_length"])
    raise LLMError("cannot tell the model's trained context length; pass max_ctx")
