"""H-Mem graphs: the knowledge graph (entity resolution, de-duplicated relation edges, overlap repair,
multi-hop expansion) and the planner's sub-query dependency graph (ordering).

Yu et al., arXiv:2605.15701, §3.2 "Graph Construction" and App. A.2 "Entity extraction and
disambiguation". Pure: no LLM, no embedder. The graph is a ``networkx.MultiDiGraph`` whose edge key
is the relation label, so one (source, label, target) triple is one edge and repeats merge evidence.

Resolution (conservative, type-compatible): normalise -> exact key or alias match -> token overlap
or bounded fuzzy match (difflib) -> else a new node. Lemmatisation is rule-based singularisation
(no NLP dependency) and is not applied to person names ("Lucas" must not become "Luca").
"""
from __future__ import annotations

import difflib
import re
import unicodedata
from dataclasses import dataclass
from typing import Iterable, Sequence

import networkx as nx

ENTITY_TYPES = ("person", "organization", "location", "event", "product", "work", "date", "time", "other")
TYPE_ALIASES = {
    "per": "person", "people": "person", "human": "person", "character": "person", "speaker": "person",
    "org": "organization", "organisation": "organization", "company": "organization", "band": "organization",
    "group": "organization", "institution": "organization", "team": "organization", "school": "organization",
    "loc": "location", "place": "location", "city": "location", "country": "location", "gpe": "location",
    "facility": "location", "fac": "location", "address": "location",
    "activity": "event", "occasion": "event", "holiday": "event",
    "object": "product", "item": "product", "thing": "product", "brand": "product",
    "book": "work", "movie": "work", "film": "work", "song": "work", "album": "work", "art": "work",
    "work_of_art": "work", "painting": "work", "show": "work",
    "day": "date", "datetime": "date", "clock": "time",
}
_ARTICLES = ("the ", "a ", "an ")
_PUNCT = re.compile(r"[^\w\s'-]+")
_SPACE = re.compile(r"\s+")
_CAPS = re.compile(r"\b[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*")
_STOP_CAPS = {"i", "i'm", "i've", "i'll", "i'd", "the", "a", "an", "hi", "hello", "hey", "yes", "no", "oh", "wow",
              "thanks", "thank", "ok", "okay", "sure", "what", "how", "why", "when", "where", "who", "that", "this",
              "it", "my", "we", "you", "and", "but", "so", "great", "nice", "cool", "good", "aww", "congrats",
              "haha", "yeah", "well", "also", "just", "big", "fun", "cute", "session", "me", "he", "she", "they"}


def normalize_type(value: str | None) -> str:
    """Map a free-form type label into the paper's nine-type set (unknown -> ``other``)."""
    t = _SPACE.sub("_", str(value or "").strip().lower())
    return t if t in ENTITY_TYPES else TYPE_ALIASES.get(t, "other")


def normalize_name(name: str) -> str:
    """Lower-case, strip punctuation and possessives and a leading article, collapse whitespace."""
    text = unicodedata.normalize("NFKC", str(name)).lower().replace("’", "'")
    text = _SPACE.sub(" ", _PUNCT.sub(" ", text)).strip()
    text = re.sub(r"'s\b", "", text).replace("'", "").strip(" -")
    for art in _ARTICLES:
        if text.startswith(art) and len(text) > len(art):
            text = text[len(art):]
    return _SPACE.sub(" ", text).strip()


def singular(token: str) -> str:
    """Rule-based singularisation (the 'optional lemmatisation' of App. A.2, without an NLP library)."""
    if len(token) <= 3 or not token.isalpha():
        return token
    if token.endswith("ies") and len(token) > 4:
        return token[:-3] + "y"
    if token.endswith(("sses", "shes", "ches", "xes", "zes")):
        return token[:-2]
    if token.endswith("s") and not token.endswith(("ss", "us", "is", "ous")):
        return token[:-1]
    return token


def name_key(name: str, etype: str = "other") -> str:
    """The canonical matching key: normalised, and singularised unless the entity is a person."""
    norm = normalize_name(name)
    if etype == "person":
        return norm
    return " ".join(singular(t) for t in norm.split())


def compatible(a: str, b: str) -> bool:
    """Types agree, one side is ``other`` (types from a small LLM are noisy), or date vs time."""
    return a == b or "other" in (a, b) or {a, b} == {"date", "time"}


@dataclass(frozen=True)
class Resolution:
    node: str
    how: str  # exact | token | fuzzy | new
    score: float
    created: bool


def fallback_entities(text: str, speakers: Sequence[str] = ()) -> list[dict]:
    """Best-effort entities when LLM extraction fails or finds none: the speakers (person) and runs of
    capitalised words (type ``other``). Stands in for the paper's spaCy NER fallback [ours]."""
    out = [{"name": s, "type": "person"} for s in speakers]
    seen = {normalize_name(s) for s in speakers}
    inner = {m.group(1) for m in re.finditer(r"[^.!?\s]\s+([A-Z][\w'-]*)", text)}  # capitalised mid-sentence
    for m in _CAPS.finditer(text):
        words = [w for w in m.group(0).split() if w.lower().strip("'") not in _STOP_CAPS]
        if len(words) == 1 and words[0] == m.group(0) and _sentence_start(text, m.start()) and words[0] not in inner:
            continue  # a lone sentence-initial capital is not evidence of a name
        norm = normalize_name(" ".join(words))
        if len(norm) > 1 and norm not in seen:
            seen.add(norm)
            out.append({"name": " ".join(words), "type": "other"})
    return out[:12]


def _sentence_start(text: str, pos: int) -> bool:
    before = text[:pos].rstrip()
    return not before or before[-1] in ".!?:\n"


def _tokens(key: str) -> set[str]:
    return set(key.split())


class EntityGraph:
    """Entities (nodes ``ent<n>``) and relations over a ``networkx.MultiDiGraph``.

    Node attributes: ``name, key, type, aliases, source_ids, fragment_ids, mentions, first_time,
    last_time, profile``. Edge attributes: ``relation, kind (relation|overlap), source_ids,
    fragment_ids, confidence, count, time, last_time``.
    """

    def __init__(self, *, fuzzy_threshold: float = 0.9, token_overlap: float = 0.5):
        self.fuzzy_threshold = fuzzy_threshold
        self.token_overlap = token_overlap
        self.graph = nx.MultiDiGraph()
        self._keys: dict[str, list[str]] = {}  # name or alias key -> node ids
        self._by_token: dict[str, set[str]] = {}
        self._next = 0

    def __len__(self) -> int:
        return self.graph.number_of_nodes()

    # -- resolution -------------------------------------------------------------------------------
    def _index(self, node: str, key: str) -> None:
        if node not in self._keys.setdefault(key, []):
            self._keys[key].append(node)
        for tok in _tokens(key):
            self._by_token.setdefault(tok, set()).add(node)

    def _node_keys(self, node: str) -> list[str]:
        attrs = self.graph.nodes[node]
        return [attrs["key"]] + [name_key(a, attrs["type"]) for a in attrs["aliases"]]

    def _best_partial(self, key: str, etype: str) -> tuple[str | None, str, float]:
        """Token-overlap (Jaccard, both names multi-token) or difflib ratio against names and aliases."""
        best: tuple[str | None, str, float] = (None, "", 0.0)
        toks = _tokens(key)
        for node in sorted(set().union(*(self._by_token.get(t, set()) for t in toks)) if toks else ()):
            if not compatible(etype, self.graph.nodes[node]["type"]):
                continue
            for other in self._node_keys(node):
                ot = _tokens(other)
                if len(toks) > 1 and len(ot) > 1:
                    jac = len(toks & ot) / len(toks | ot)
                    if jac >= self.token_overlap and jac > best[2]:
                        best = (node, "token", jac)
        if best[0] is not None:
            return best
        matcher = difflib.SequenceMatcher(None)
        matcher.set_seq2(key)  # difflib caches the analysis of seq2
        for other, nodes in self._keys.items():
            if 2 * min(len(key), len(other)) < self.fuzzy_threshold * (len(key) + len(other)):
                continue  # the ratio's upper bound from the lengths alone
            matcher.set_seq1(other)
            if matcher.quick_ratio() < self.fuzzy_threshold:
                continue
            ratio = matcher.ratio()
            for node in nodes:
                if ratio >= self.fuzzy_threshold and ratio > best[2] and \
                        compatible(etype, self.graph.nodes[node]["type"]):
                    best = (node, "fuzzy", ratio)
        return best

    def find(self, name: str, etype: str = "other") -> Resolution | None:
        """Resolve without creating: exact key/alias match, then token overlap, then fuzzy."""
        etype = normalize_type(etype)
        key = name_key(name, etype)
        if not key:
            return None
        for node in self._keys.get(key, []) + self._keys.get(name_key(name, "person"), []):
            if compatible(etype, self.graph.nodes[node]["type"]):
                return Resolution(node, "exact", 1.0, False)
        node, how, score = self._best_partial(key, etype)
        return Resolution(node, how, round(score, 4), False) if node else None

    def resolve(self, name: str, etype: str = "other", *, time: str | None = None) -> Resolution | None:
        """Resolve a surface name to a node, creating one when nothing matches (None for empty names)."""
        etype = normalize_type(etype)
        found = self.find(name, etype)
        if found is not None:
            attrs = self.graph.nodes[found.node]
            surface = " ".join(str(name).split())
            if attrs["type"] == "other" and etype != "other":
                attrs["type"] = etype  # a typed mention refines an untyped node
            if normalize_name(surface) != normalize_name(attrs["name"]) and surface not in attrs["aliases"]:
                attrs["aliases"].append(surface)
                self._index(found.node, name_key(surface, attrs["type"]))
            return found
        key = name_key(name, etype)
        if not key:
            return None
        node = f"ent{self._next}"
        self._next += 1
        self.graph.add_node(node, name=" ".join(str(name).split()), key=key, type=etype, aliases=[],
                            source_ids=[], fragment_ids=[], mentions=0, first_time=time, last_time=time,
                            profile=None)
        self._index(node, key)
        return Resolution(node, "new", 0.0, True)

    def link(self, node: str, fragment_id: str, source_ids: Iterable[str], time: str | None) -> None:
        """Entity -> source fragment provenance link."""
        attrs = self.graph.nodes[node]
        attrs["mentions"] += 1
        if fragment_id not in attrs["fragment_ids"]:
            attrs["fragment_ids"].append(fragment_id)
        attrs["source_ids"] += [s for s in source_ids if s not in attrs["source_ids"]]
        if time is not None:
            attrs["first_time"] = min(attrs["first_time"] or time, time)
            attrs["last_time"] = max(attrs["last_time"] or time, time)

    # -- edges --------------------------------------------------------------------------------------
    def add_relation(self, u: str, label: str, v: str, *, fragment_id: str, source_ids: Sequence[str],
                     time: str | None, confidence: float = 1.0, kind: str = "relation") -> bool:
        """Insert (u, label, v) or merge its evidence into the existing edge; True when new."""
        label = " ".join(str(label).lower().split())
        if self.graph.has_edge(u, v, key=label):
            e = self.graph.edges[u, v, label]
            e["count"] += 1
            e["confidence"] = max(e["confidence"], confidence)
            e["source_ids"] += [s for s in source_ids if s not in e["source_ids"]]
            if fragment_id not in e["fragment_ids"]:
                e["fragment_ids"].append(fragment_id)
            e["last_time"] = time or e["last_time"]
            return False
        self.graph.add_edge(u, v, key=label, relation=label, kind=kind, source_ids=list(source_ids),
                            fragment_ids=[fragment_id], confidence=confidence, count=1, time=time, last_time=time)
        return True

    def overlap_candidates(self, node: str) -> list[str]:
        """Graph repair (App. A.2): a short single-token or nickname-like name that is a prefix or
        suffix of another type-compatible node's name. Never merges; only proposes an edge."""
        attrs = self.graph.nodes[node]
        key = attrs["key"]
        out = []
        for other, oattrs in self.graph.nodes(data=True):
            okey = oattrs["key"]
            if other == node or okey == key or not compatible(attrs["type"], oattrs["type"]):
                continue
            short, long_ = sorted((key, okey), key=len)
            if " " in short or len(short) < 3:
                continue
            words = long_.split()
            if words[0] == short or words[-1] == short or (len(words) == 1 and long_.startswith(short)):
                out.append(other)
        return out

    # -- retrieval helpers --------------------------------------------------------------------------
    def lexical_matches(self, text: str) -> list[tuple[str, str]]:
        """Entities whose name or alias key occurs as a whole phrase in ``text`` (normalised, and
        singularised): the paper's NLP-based lexical entity matching."""
        norm = normalize_name(text)
        variants = (f" {norm} ", " " + " ".join(singular(t) for t in norm.split()) + " ")
        out: dict[str, str] = {}
        for key, nodes in self._keys.items():
            if len(key) < 2 or key in _STOP_CAPS:
                continue
            if any(f" {key} " in v for v in variants):
                for node in nodes:
                    out.setdefault(node, key)
        return sorted(out.items())

    def neighbours(self, node: str) -> list[tuple[str, str, dict]]:
        """Undirected neighbourhood: (other node, relation, edge attrs), strongest edges first."""
        rows = [(v, k, d) for _, v, k, d in self.graph.out_edges(node, keys=True, data=True)]
        rows += [(u, k, d) for u, _, k, d in self.graph.in_edges(node, keys=True, data=True)]
        return sorted(rows, key=lambda r: (-r[2]["count"], -r[2]["confidence"], r[0], r[1]))

    def expand(self, seeds: Sequence[str], *, hops: int = 2, fanout: int = 10,
               max_entities: int = 50) -> list[dict]:
        """Breadth-first multi-hop expansion over relation and overlap edges.

        Returns one path record per reached entity: ``{entity, from, relation, hop}`` (seeds hop 0).
        """
        reached = {s: {"entity": s, "from": None, "relation": None, "hop": 0} for s in seeds}
        frontier = list(seeds)
        for hop in range(1, hops + 1):
            nxt = []
            for node in frontier:
                for other, rel, _ in self.neighbours(node)[:fanout]:
                    if other in reached or len(reached) >= max_entities:
                        continue
                    reached[other] = {"entity": other, "from": node, "relation": rel, "hop": hop}
                    nxt.append(other)
            frontier = nxt
        return list(reached.values())

    def is_salient(self, node: str, *, types: Sequence[str], min_links: int) -> bool:
        """[ours] salient = an important type and at least ``min_links`` linked fragments."""
        attrs = self.graph.nodes[node]
        return attrs["type"] in types and len(attrs["fragment_ids"]) >= min_links


# -- the planner's sub-query dependency graph -----------------------------------------------------
SCOPES = ("SHORT", "LONG", "MIXED")


@dataclass(frozen=True)
class SubQuery:
    """One planned sub-query (paper §3.3 step 1): text, dependencies, scope and temporal interval."""

    id: int
    text: str
    depends_on: tuple[int, ...] = ()
    scope: str = "MIXED"
    time_hint: str = ""
    interval: tuple | None = None  # (start, end) datetimes parsed from the hint
    entities: tuple[str, ...] = ()

    def interval_iso(self) -> list[str] | None:
        return [self.interval[0].isoformat(), self.interval[1].isoformat()] if self.interval else None

    def to_dict(self) -> dict:
        return {"id": self.id, "query": self.text, "depends_on": list(self.depends_on), "scope": self.scope,
                "time_hint": self.time_hint, "interval": self.interval_iso(), "entities": list(self.entities)}


def parse_plan(raw: Sequence, now, *, max_n: int, parse_hint) -> list[SubQuery]:
    """Planner JSON -> sub-queries. Ids are the planner's 1-based positions; unknown scopes become
    MIXED; dependencies on unknown ids or on itself are dropped; ``parse_hint(text, now)`` gives I_k."""
    items = [(i, x) for i, x in enumerate(raw, start=1)
             if isinstance(x, dict) and " ".join(str(x.get("query", "")).split())][:max_n]
    ids = {i for i, _ in items}
    out = []
    for i, x in items:
        deps = x.get("depends_on") or []
        deps = tuple(sorted({d for d in deps if isinstance(d, int) and not isinstance(d, bool) and d in ids
                             and d != i}))
        scope = str(x.get("scope", "")).strip().upper()
        hint = " ".join(str(x.get("time") or "").split())
        names = tuple(str(n).strip() for n in (x.get("entities") or []) if str(n).strip())[:5]
        out.append(SubQuery(i, " ".join(str(x["query"]).split()), deps, scope if scope in SCOPES else "MIXED",
                            hint, parse_hint(hint, now) if hint else None, names))
    return out


def order_subqueries(subs: Sequence[SubQuery]) -> tuple[list[SubQuery], list[list[int]]]:
    """Dependency (topological) order, stable in planner order. A cycle is broken by releasing the
    earliest waiting sub-query; the dependencies dropped to do so are returned as [id, dep] pairs."""
    deps = {s.id: [d for d in s.depends_on if d != s.id] for s in subs}
    done: set[int] = set()
    order, dropped = [], []
    while len(order) < len(subs):
        ready = [s for s in subs if s.id not in done and all(d in done for d in deps[s.id])]
        if not ready:
            s = next(s for s in subs if s.id not in done)
            dropped += [[s.id, d] for d in deps[s.id] if d not in done]
            deps[s.id] = [d for d in deps[s.id] if d in done]
            ready = [s]
        s = ready[0]
        order.append(SubQuery(s.id, s.text, tuple(deps[s.id]), s.scope, s.time_hint, s.interval, s.entities))
        done.add(s.id)
    return order, dropped
