"""A word-overlap reranker (Okapi BM25 over the candidates of one call). Not any paper's component.

Why it exists: the rerank stage needs something deterministic and instant for tests, for the offline demo, and
for runs where no cross-encoder can be had, so that a method's reranking code path is exercised end to end. It
knows nothing of meaning ("car" does not match "automobile"), so results from it say nothing about a paper's
reranker; its name, ``lexical-bm25``, never matches a paper's, so a paper profile run with it lists the reranker
as a departure.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache
from typing import Sequence

import numpy as np

_WORD = re.compile(r"[a-z0-9]+")
# Function words carry no topic: without them a question's "what did she do" would reward every chatty line.
_STOP = frozenset("""a an and are as at be been but by did do does for from had has have he her hers him his how
i if in into is it its me my of on or our she so that the their them they this to was we were what when where
which who whom why will with would you your""".split())


def words(text: str) -> list[str]:
    """Lower-cased alphanumeric words of ``text`` without function words."""
    return [w for w in _WORD.findall(str(text).lower()) if w not in _STOP]


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return _porter().stem(word)


@lru_cache(maxsize=1)
def _porter():
    from nltk.stem.porter import PorterStemmer  # nltk is a dependency; the stemmer needs no data download

    return PorterStemmer()


def terms(text: str) -> list[str]:
    """The terms BM25 counts: ``words`` Porter-stemmed, so "plays" meets "play" and "camping" "camp"."""
    return [_stem(w) for w in words(text)]


class LexicalReranker:
    """Okapi BM25 score of ``query`` against each document, with the inverse document frequencies taken
    from the documents of the same call (the candidate pool is the only corpus a reranker sees).

    Deterministic and order-free: a document's score does not depend on where it stands in the list, but
    it does depend on its companions (through the IDF), so it is not ``pointwise`` and is never memoised
    by (query, document). ``k1``/``b`` are BM25's usual term-saturation and length-normalisation knobs."""

    name = "lexical-bm25"
    pointwise = False

    def __init__(self, *, k1: float = 1.2, b: float = 0.75):
        self.k1 = k1
        self.b = b

    def __call__(self, query: str, documents: Sequence[str]) -> np.ndarray:
        docs = [Counter(terms(d)) for d in documents]
        if not docs:
            return np.zeros(0, dtype=np.float64)
        wanted = set(terms(query))
        n = len(docs)
        lengths = np.array([sum(c.values()) for c in docs], dtype=np.float64)
        avg = float(lengths.mean()) or 1.0
        scores = np.zeros(n, dtype=np.float64)
        for term in sorted(wanted):  # a fixed order, so float sums are the same on every run
            df = sum(1 for c in docs if term in c)
            if df == 0:
                continue
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))  # the non-negative variant (Lucene's)
            tf = np.array([c[term] for c in docs], dtype=np.float64)
            scores += idf * tf * (self.k1 + 1) / (tf + self.k1 * (1 - self.b + self.b * lengths / avg))
        return scores

    def __repr__(self) -> str:
        return "LexicalReranker()" if (self.k1, self.b) == (1.2, 0.75) else \
            f"LexicalReranker(k1={self.k1}, b={self.b})"
