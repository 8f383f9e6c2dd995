"""Designed runs (issue #64): a method's ``paper`` profile replayed on reference replies written by hand.

A designed run is the gallery example (or a sample conversation's signature case) run through the method's real code
-- its embedder (the project's MiniLM), index, thresholds and control flow -- with one thing replaced: the LLM is a
``ReferenceLLM`` (``workbench.llm.reference``) answering each prompt from ``sample_data/reference/<method>.<id>.json``,
the replies a careful, capable model would give. Whether the mechanism then reaches its planted outcome is a property
of the method's code; where it does not on right replies, the code has a defect.

A designed run is labelled in its manifest (``scripted``: true, ``label``: "reference replies written by hand, not a
model", ``designed``: the file) and its LLM's model name says the same, so every view that names the run's LLM labels
it. It is written to its own directory (a new temporary one by default), never into a model run's directory: it is
never counted in any accuracy, census figure or chart of a model run.

    run = designed_run("ama")                 # -> DesignedRun; run.out is the run directory
    run.census["checked"], run.llm.misses     # the checked census entry; prompts the file did not cover (none)
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .data import SAMPLE_DIR

#: where the reference-replies files live
REFERENCE_DIR = SAMPLE_DIR / "reference"
#: the label a designed run carries in its manifest, census and every view that shows it
LABEL = "designed run: reference replies written by hand, not a model"


class UncoveredPrompts(RuntimeError):
    """The designed run asked prompts its reference file does not cover (each listed); its outputs are not a
    designed run."""


@dataclass
class DesignedRun:
    """A finished designed run: ``out`` (its run directory), ``llm`` (the ``ReferenceLLM``: ``misses``, ``unused()``),
    ``result`` (the harness's ``EvalResult``), ``census`` (the method's entry of the run's mechanism census)."""

    method: str
    conversation: str
    out: Path
    llm: Any
    result: Any
    census: dict

    @property
    def verdict(self) -> str:
        """The checked census's one word (``workbench.eval.annotations.checked_verdict``): "right" when every firing
        of the mechanism was right and nothing planted was missed."""
        from .eval.annotations import checked_verdict

        return checked_verdict(self.census.get("checked"))[0]


def reference_file(method_name: str, conversation_id: str) -> Path:
    """``sample_data/reference/<method>.<conversation>.json``."""
    return REFERENCE_DIR / f"{method_name}.{conversation_id}.json"


def _conversation(file: dict, path: Path):
    """The file's conversation, cut to the turns and questions it names (``turns``, ``questions``; all when absent),
    and the dataset it came from. A named turn or question the conversation lacks is an error naming the file."""
    from .data import Dataset, load_dataset
    from .data.types import Conversation

    data = load_dataset(file["data"])
    try:
        conv = data[file["conversation"]]
    except KeyError:
        raise ValueError(f"{path}: conversation {file['conversation']!r} is not in the {file['data']!r} data") from None
    keep, asks = file.get("turns"), file.get("questions")
    if keep is not None:
        unknown = sorted(set(keep) - {t.id for t in conv.turns})
        if unknown:
            raise ValueError(f"{path}: field 'turns' names turns {unknown} that {conv.id} does not have")
        sessions = tuple(replace(s, turns=tuple(t for t in s.turns if t.id in set(keep))) for s in conv.sessions)
        conv = Conversation(conv.id, conv.speakers, tuple(s for s in sessions if s.turns), conv.qa, conv.source)
    if asks is not None:
        unknown = sorted(set(asks) - {q.id for q in conv.qa})
        if unknown:
            raise ValueError(f"{path}: field 'questions' names questions {unknown} that {conv.id} does not have")
        conv = replace(conv, qa=tuple(q for q in conv.qa if q.id in set(asks)))
    return conv, Dataset(data.name, (conv,))


def _embedder():
    """The project's MiniLM (the gallery's embedder); a missing [local] extra is said, never replaced by another."""
    from .embed import embedder_from_spec

    try:
        return embedder_from_spec("minilm")
    except Exception as exc:  # an absent package or model file: said, the run does not go on with another embedder
        raise RuntimeError(f"a designed run needs the project's MiniLM embedder (the [local] extra): {exc}") from exc


def designed_run(method_name: str, gallery_id: str | None = None, *, out: str | Path | None = None,
                 replies: str | Path | None = None, reply_list: list[dict] | None = None, embedder=None,
                 allow_uncovered: bool = False) -> DesignedRun:
    """Replay ``method_name``'s paper profile on ``gallery_id`` (default: the method's gallery example) with the
    reference replies of ``replies`` (default ``reference_file(method_name, gallery_id)``) into run directory ``out``
    (default: a new temporary directory). ``reply_list`` replaces the file's replies (a test changing one reply);
    ``embedder`` replaces MiniLM (tests only). Raises ``UncoveredPrompts`` listing every prompt the file did not
    cover, unless ``allow_uncovered`` (then they are in ``run.llm.misses``)."""
    from .eval.judge import CheckerJudge
    from .eval.harness import evaluate
    from .eval.manifest import update_run_manifest
    from .eval.mechanisms import census, write_census
    from .eval.settings import build_method
    from .gallery import gallery_methods
    from .llm.reference import ReferenceLLM, load_reference
    from .methods import get_method

    cls = get_method(method_name)
    if gallery_id is None:
        gallery_id = gallery_methods([method_name])[method_name].how_it_works.gallery
    path = Path(replies) if replies is not None else reference_file(method_name, gallery_id)
    file = load_reference(path)
    if file["method"] != method_name or file["conversation"] != gallery_id:
        raise ValueError(f"{path}: written for {file['method']} on {file['conversation']}, not {method_name} on "
                         f"{gallery_id}")
    conv, dataset = _conversation(file, path)
    llm = ReferenceLLM(path, conv, replies=reply_list)
    own = getattr(getattr(cls, "how_it_works", None), "gallery", None) == gallery_id
    params = {**(cls.how_it_works.gallery_params if own else {}), **file.get("params", {}), "profile": "paper"}
    setup = build_method(method_name, llm=llm, embedder=embedder or _embedder(), params=params, data=file["data"],
                         calibration="off", bounded=False, warn=False)
    out = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix=f"designed-{method_name}-"))
    if out.exists() and any(out.iterdir()):  # a resumed run would ask no prompt: "0 uncovered" would mean nothing
        raise ValueError(f"{out}: a designed run needs an empty directory (it is never resumed or mixed with a "
                         "model run)")
    out.mkdir(parents=True, exist_ok=True)
    where = path.relative_to(SAMPLE_DIR.parent) if path.is_relative_to(SAMPLE_DIR.parent) else path.name
    label = {"scripted": True, "label": LABEL,
             "designed": {"replies": str(where), "conversation": conv.id, "turns": len(conv.turns),
                          "questions": len(conv.qa)}}
    res = evaluate(setup.method, dataset, judge=CheckerJudge(conv.speakers), store=out / "results.jsonl",
                   progress=False, save_memories_dir=out, extra_manifest={**setup.manifest(), **label})
    update_run_manifest(out, res.manifest, **label)  # top level too: the census and the views read it there
    write_census(out)
    if llm.misses and not allow_uncovered:
        lines = [f"- {m['role']} about {m['about']}: {m['why']}; prompt starts {m['prompt_start'][:120]!r}"
                 for m in llm.misses]
        raise UncoveredPrompts(f"{path.name}: {len(llm.misses)} prompt(s) not covered by the reference replies "
                               f"(run kept in {out}):\n" + "\n".join(lines))
    entry = census(out)["methods"].get(setup.method.name, {})
    return DesignedRun(method_name, conv.id, out, llm, res, entry)
