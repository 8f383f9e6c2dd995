"""Which embedder and reranker a run gives each method: ``--embedder auto`` / ``--reranker auto`` resolved.

``auto`` means "the paper's component where it can be reached, else the offline default, and say so":

- an API model as the LLM (``openai:<model>[@url]``): a method's paper embedder (``cls.components``) through
  the LLM's own endpoint when OpenAI's API serves it (text-embedding-3-*: no URL, or the LLM's URL), through
  ``--embedder-url`` when it is an open model (the Qwen3 embedders, served by vLLM or llama.cpp); without that
  URL, the offline default, noted;
- a local, GGUF or replayed LLM: the offline default (MiniLM), which is what every recorded cassette here used;
- a baseline (no paper of its own): the offline default, or the paper embedder of the run's single paper method,
  so that a paper method and the baselines it is compared with embed alike, as each paper's baselines did.

A reranker under ``auto``: the paper's through ``--reranker-url`` (a ``/rerank`` endpoint); else, with an API
LLM, a local cross-encoder when one is installed that is the paper's model; else none. Whatever is used, the
method's departures (``MemoryMethod.departures``) compare it with the paper's, so the header, report and
manifest say when it is not the paper's. Choices are plain strings (specs), so a Ray worker rebuilds the same.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field

OFFLINE_EMBEDDER = "minilm"


@dataclass(frozen=True)
class ComponentChoice:
    """The specs a method is run with (``embedder_from_spec`` / ``reranker_from_spec`` build them) and, in
    words, why each was chosen when it is not the paper's (``notes``)."""

    embedder: str
    reranker: str = "none"
    notes: tuple[str, ...] = field(default_factory=tuple)


def api_url(llm_spec: str | None) -> tuple[bool, str | None]:
    """(whether the LLM is an API model (``openai:``), its base URL or None for OpenAI's own)."""
    kind, _, rest = (llm_spec or "").partition(":")
    if kind != "openai" or not rest:
        return False, None
    _, _, url = rest.partition("@")
    return True, url or None


def _takes_reranker(cls) -> bool:
    return cls is not None and "reranker" in cls._param_names()


def choose_components(method: str, *, llm_spec: str | None, embedder: str = "auto", embedder_url: str | None = None,
                      reranker: str = "auto", reranker_url: str | None = None,
                      run_methods: tuple[str, ...] = ()) -> ComponentChoice:
    """The embedder and reranker specs for ``method`` in a run with LLM ``llm_spec`` (see the module docstring).

    An explicit ``embedder``/``reranker`` spec (anything but ``auto``) is used as given; ``run_methods``: every
    method of the run, so that baselines embed like the run's one paper method."""
    from ..methods.registry import get_method
    from ..methods.base import method_base

    cls = get_method(method_base(method))
    api, llm_url = api_url(llm_spec)
    notes: list[str] = []
    paper = getattr(cls, "components", None)
    if paper is None and embedder == "auto":  # a baseline: like the run's one paper method, if it has one
        others = {getattr(get_method(method_base(m)), "components", None) for m in run_methods}
        others.discard(None)
        if len(others) == 1:
            paper = next(iter(others))
    emb = embedder
    if embedder == "auto":
        emb = OFFLINE_EMBEDDER
        if paper is not None and api:
            if embedder_url:
                emb = f"openai:{paper.embedder_served}@{embedder_url}"
            elif paper.embedder_on_openai:
                emb = f"openai:{paper.embedder_served}" + (f"@{llm_url}" if llm_url else "")
            else:
                notes.append(f"{paper.embedder} is an open model that OpenAI's API does not serve: give "
                             f"--embedder-url (a vLLM or llama.cpp server of {paper.embedder_served}); "
                             f"embedding with the offline {OFFLINE_EMBEDDER} instead")
    rr = reranker
    if reranker == "auto":
        rr = "none"
        wanted = getattr(getattr(cls, "components", None), "reranker", None)
        if wanted and _takes_reranker(cls):
            served = cls.components.reranker_served or wanted
            if reranker_url:
                rr = f"endpoint:{served}@{reranker_url}"
            elif api:
                rr = _local_cross_encoder(wanted) or "none"
                if rr == "none":
                    notes.append(f"no {wanted} here: give --reranker-url (a /rerank endpoint serving {served}); "
                                 "running without a reranker")
    elif reranker != "none" and not _takes_reranker(cls):
        notes.append(f"{cls.name} reranks nothing: --reranker {reranker} is not used for it")
        rr = "none"
    return ComponentChoice(emb, rr, tuple(notes))


def _local_cross_encoder(model: str) -> str | None:
    """A ``crossencoder:`` spec when an installed local cross-encoder is ``model`` itself (not a smaller one)."""
    try:
        from ..rerank import local_cross_encoders  # the models a registry package installed here
    except ImportError:
        return None
    from ..methods.components import same_model

    for name in local_cross_encoders():
        if same_model(name, model):
            return f"crossencoder:{name}"
    return None


def build_reranker(spec: str | None):
    """The reranker a ``ComponentChoice.reranker`` spec names (None for ``none``)."""
    if not spec or spec == "none":
        return None
    from ..rerank import reranker_from_spec

    return reranker_from_spec(spec)


def add_component_arguments(parser) -> None:
    """``--embedder``/``--reranker`` (``auto``: each method's paper component where it can be reached, see
    ``workbench.eval.components``) and the URLs of servers that serve the open models."""
    parser.add_argument("--embedder", default="auto", help="auto (each paper's embedder with an API LLM, else the "
                        "offline minilm) | minilm | hash | openai:<model>[@url]")
    parser.add_argument("--embedder-url", default=None, metavar="URL",
                        help="an OpenAI-compatible /embeddings server (vLLM, llama.cpp) for papers whose embedder "
                             "OpenAI's API does not serve (the Qwen3 embedders)")
    parser.add_argument("--reranker", default="auto", help="auto (the paper's reranker where one is reachable, else "
                        "none) | none | lexical | crossencoder[:<model>] | endpoint:<model>@<url>")
    parser.add_argument("--reranker-url", default=None, metavar="URL",
                        help="a /rerank server (vLLM, llama.cpp) serving the paper's reranker")


def component_choices(args, names: list[str]) -> dict:
    """``method -> ComponentChoice`` for a command line's methods (``components.choose_components``); each
    note on a component that is not the paper's is printed once."""
    out = {}
    for name in names:
        out[name] = choose_components(name, llm_spec=getattr(args, "llm", None),
                                      embedder=getattr(args, "embedder", "auto") or "auto",
                                      embedder_url=getattr(args, "embedder_url", None),
                                      reranker=getattr(args, "reranker", "auto") or "auto",
                                      reranker_url=getattr(args, "reranker_url", None), run_methods=tuple(names))
        for note in out[name].notes:
            print(f"note: {name}: {note}", file=sys.stderr)
    return out


class Components:
    """The embedders and rerankers of one command line, built once per spec and shared by the methods that
    name the same one (an embedder's cache then serves them all)."""

    def __init__(self, choices: dict):
        self.choices = choices
        self._built: dict = {}

    def _get(self, kind: str, spec: str):
        from ..embed import embedder_from_spec
        from .components import build_reranker

        if (kind, spec) not in self._built:
            self._built[kind, spec] = embedder_from_spec(spec) if kind == "embedder" else build_reranker(spec)
        return self._built[kind, spec]

    def embedder(self, name: str):
        return self._get("embedder", self.choices[name].embedder)

    def reranker(self, name: str):
        return self._get("reranker", self.choices[name].reranker)
