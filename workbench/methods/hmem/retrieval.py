"""H-Mem online retrieval (paper §3.3): the steps ``HMem._answer`` runs, as plain functions.

Each takes the built ``HMem`` as ``m`` and reads the structures ingestion left on it (``tree_``,
``kg_``, ``fragments_``, ``entities_``, ``profiles_``, ``fragment_leaves_``): plan sub-queries,
gather and score evidence, answer a sub-query, ask the missing-information follow-up, synthesise.
``HMemRetriever`` is the plain search MemR3 drives. The departures from the paper are listed on ``HMem``.
"""
from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import numpy as np

from ...llm.errors import LLMError
from ...trace import Hit
from ..answer_prompt import shared_prompt
from ..common import question_date_line
from .graph import SubQuery, order_subqueries, parse_plan
from .tree import (DAY, Candidate, candidate_from_node, candidate_from_unit, dedupe, format_evidence, parse_time_hint,
                   score_candidates)

SCOPE_FRAGMENTS, SCOPE_SUMMARIES = ("SHORT", "MIXED"), ("LONG", "MIXED")
NOT_FOUND = "Not mentioned in the conversation"


def plan_subqueries(m, question: str, t: datetime, steps: list) -> list[SubQuery]:
    with m.step(steps, "plan", "Decompose into sub-queries") as s:
        prompts = m.prompt_set
        prompt = prompts.PLAN.format(now_line=question_date_line(t), question=question, max_n=m.max_subqueries)
        try:
            raw = m.llm.complete(prompt, schema=prompts.PLAN_SCHEMA, role="hmem.plan").parsed["subqueries"]
        except LLMError as exc:
            raw, s.data["error"] = [], str(exc)
        subs = parse_plan(raw, t, max_n=m.max_subqueries, parse_hint=parse_time_hint)
        if not subs:  # fallback: the question itself, MIXED scope, hints read from its text
            subs = parse_plan([{"query": question, "scope": "MIXED", "time": question}], t, max_n=1,
                              parse_hint=parse_time_hint)
            s.data["fallback"] = "planner gave no usable sub-query: the question is the only sub-query"
        if m.scope_policy != "planner":
            subs = [replace(sq, scope=m.scope_policy.upper()) for sq in subs]
        plan, dropped = order_subqueries(subs)
        workflows = [str(x.get("workflow", "")) for x in raw if isinstance(x, dict) and x.get("workflow")]
        if workflows:  # paper profile: the planner's retrieval workflow per sub-query, recorded (not executed)
            s.data["workflows"] = workflows
        s.data.update(subqueries=[sq.to_dict() for sq in plan], order=[sq.id for sq in plan],
                      dropped_dependencies=dropped, scope_policy=m.scope_policy)
    return plan


def _seeds(m, query: str, names: tuple[str, ...], qv: np.ndarray) -> list[dict]:
    """Lexical (planner names, then names found in the query) and vector seeds."""
    seeds: dict[str, dict] = {}
    for name in names:
        found = m.kg_.find(name)
        if found:
            seeds.setdefault(found.node, {"entity": found.node, "how": f"lexical:{found.how}",
                                          "score": found.score, "matched": name})
    for node, key in m.kg_.lexical_matches(query):
        seeds.setdefault(node, {"entity": node, "how": "lexical:query", "score": 1.0, "matched": key})
    vectors = m.embedder(list(names)) if names else qv[None, :]
    for vec in vectors:
        for h in m.entities_.search_vector(vec, m.seed_k):
            if h.score >= m.seed_min_sim:
                seeds.setdefault(h.unit_id, {"entity": h.unit_id, "how": "vector", "score": round(h.score, 4),
                                             "matched": h.text})
    out = list(seeds.values())[:m.max_seeds]
    for seed in out:
        seed["name"] = m.kg_.graph.nodes[seed["entity"]]["name"]
    return out


def retrieve(m, sq: SubQuery, query: str, t: datetime, steps: list, title: str) -> list[Candidate]:
    with m.step(steps, "retrieve", title) as s:
        qv = m.embedder([query])[0]
        cands: dict[str, Candidate] = {}
        seeds, paths = [], []
        frag_ok = sq.scope in SCOPE_FRAGMENTS or not m.use_tree or m.retrieval == "flat"
        if m.use_graph and len(m.kg_) and m.retrieval == "hybrid":
            seeds = _seeds(m, query, sq.entities, qv)
            paths = m.kg_.expand([x["entity"] for x in seeds], hops=m.hops, fanout=m.fanout,
                                 max_entities=m.max_entities)
            _entity_evidence(m, paths, qv, frag_ok, cands, profiles=sq.scope in m.profile_scopes)
        _vector_evidence(m, qv, frag_ok, cands)
        if m.use_tree and m.retrieval == "hybrid" and sq.scope in SCOPE_SUMMARIES:
            _climb(m, cands)
        scored = score_candidates(list(cands.values()), qv, interval=sq.interval if m.use_temporal else None,
                                  now=t, theta=m.theta, lam=m.lam, eps=m.eps,
                                  tau=m.tau_days * DAY, eta=m.eta, use_robustness=m.use_robustness)
        unique, duplicates = dedupe(scored)
        reranked = rerank(m, query, unique, s.data) if getattr(m, "reranker", None) is not None else unique
        chain = reranked[:m.evidence_k]
        s.hits = [c.hit() for c in chain]
        s.data.update(subquery=sq.id, query=query, scope=sq.scope, interval=sq.interval_iso(),
                      seeds=seeds, expansion=[{**p, "name": m.kg_.graph.nodes[p["entity"]]["name"]}
                                              for p in paths],
                      candidates=[c.trace() for c in scored], duplicates=duplicates,
                      evidence_chain=[c.id for c in chain])
    return chain


#: [ours] how many of the best candidates by F the reranker reorders, in multiples of ``evidence_k``
RERANK_POOL = 3


def rerank(m, query: str, ranked: list[Candidate], data: dict) -> list[Candidate]:
    """Paper A.2 / Table 8: the reranker reorders the candidate evidence (digest §10.10). Our reading: F (eq. 3,
    with S the embedding cosine) ranks the de-duplicated candidates as before; the best ``RERANK_POOL *
    evidence_k`` of them go to ``m.reranker(query, texts)`` (each text as the reader would see it, date label
    included) and are reordered by its score (ties by F); the chain is then the top ``evidence_k``. The rest keep
    their F order below. Scores are recorded in the step's ``rerank``."""
    pool = ranked[:RERANK_POOL * m.evidence_k]
    if not pool:
        return ranked
    scores = np.asarray(m.reranker(query, [c.display() for c in pool]), dtype=float).reshape(-1)
    if scores.shape[0] != len(pool) or not np.all(np.isfinite(scores)):
        raise ValueError(f"reranker {getattr(m.reranker, 'name', type(m.reranker).__name__)!r} returned "
                         f"{scores.shape[0]} scores for {len(pool)} documents (or a non-finite score)")
    order = sorted(range(len(pool)), key=lambda i: (-scores[i], -pool[i].F, pool[i].id))
    data["rerank"] = {"reranker": getattr(m.reranker, "name", type(m.reranker).__name__), "pool": len(pool),
                      "scores": {pool[i].id: round(float(scores[i]), 4) for i in order},
                      "before": [c.id for c in pool[:m.evidence_k]]}
    return [pool[i] for i in order] + ranked[len(pool):]


def _entity_evidence(m, paths: list[dict], qv: np.ndarray, frag_ok: bool, cands: dict, *, profiles: bool) -> None:
    """Entities -> provenance fragments (top-k by similarity) -> their leaf events; plus their profiles when the
    sub-query's scope is one of ``m.profile_scopes``."""
    frag_ids = sorted({f for p in paths for f in m.kg_.graph.nodes[p["entity"]]["fragment_ids"]})
    ranked = sorted(frag_ids, key=lambda f: (-float(m.fragments_.vector(f) @ qv), f))[:m.top_k]
    for f in ranked:
        if frag_ok:
            _add(cands, candidate_from_unit(m.fragments_[f], m.fragments_.vector(f)), "entity")
        for leaf in m.fragment_leaves_.get(f, []) if m.use_tree else ():
            _add(cands, node_candidate(m, leaf), "entity")
    for p in paths if m.use_profiles and profiles else ():
        pid = f"profile:{p['entity']}"
        if pid in m.profiles_:
            prof = m.kg_.graph.nodes[p["entity"]]["profile"]
            _add(cands, candidate_from_unit(m.profiles_[pid], m.profiles_.vector(pid),
                                            kind="profile", n_m=prof["updates"] - 1), "entity")


def _vector_evidence(m, qv: np.ndarray, frag_ok: bool, cands: dict) -> None:
    """Vector top-k over leaf events (all tree nodes when flat); over fragments when the graph or the
    tree is switched off (or flat), so that every ablation still reaches the raw text."""
    if m.use_tree:
        levels = None if m.retrieval == "flat" else (1,)
        for node_id, _ in m.tree_.search(qv, m.top_k, levels=levels):
            _add(cands, node_candidate(m, node_id), "vector")
    if frag_ok and (not m.use_graph or not m.use_tree or m.retrieval == "flat"):
        for h in m.fragments_.search_vector(qv, m.top_k):
            _add(cands, candidate_from_unit(m.fragments_[h.unit_id],
                                            m.fragments_.vector(h.unit_id)), "vector")


def _climb(m, cands: dict) -> None:
    """Bottom-up tree search: the ancestors (L2..L_max summaries) of every candidate event."""
    for c in [c for c in cands.values() if c.kind == "event"]:
        for a in m.tree_.ancestors(c.id):
            _add(cands, node_candidate(m, a), f"parent of {c.id}")


def node_candidate(m, node_id: str) -> Candidate:
    node = m.tree_.nodes[node_id]
    return candidate_from_node(node, m.tree_.vectors[node_id], m.tree_.window_name(node.level))


def _add(cands: dict, cand: Candidate, via: str) -> None:
    if cand.id not in cands:
        cands[cand.id] = cand
    if via not in cands[cand.id].via:
        cands[cand.id].via.append(via)


def sub_answer(m, sq: SubQuery, chain: list[Candidate], answers: dict, by_id: dict, t: datetime,
               steps: list) -> tuple[str, bool]:
    with m.step(steps, "subanswer", f"Answer sub-query {sq.id}") as s:
        prior = "".join(f"- {by_id[d].text} -> {answers[d]}\n" for d in sq.depends_on if d in answers)
        prompts = m.prompt_set
        prompt = prompts.SUB_ANSWER.format(now_line=question_date_line(t), evidence=format_evidence(chain),
                                           query=sq.text,
                                           prior=prompts.PRIOR_ANSWERS.format(answers=prior) if prior else "")
        try:
            parsed = m.llm.complete(prompt, schema=prompts.SUB_ANSWER_SCHEMA, role="hmem.subanswer").parsed
            text, missing = str(parsed["answer"]).strip() or NOT_FOUND, bool(parsed["missing_info"])
        except LLMError as exc:
            text, missing, s.data["error"] = NOT_FOUND, False, str(exc)
        s.data.update(subquery=sq.id, query=sq.text, answer=text, missing_info=missing,
                      prerequisites={str(d): answers[d] for d in sq.depends_on if d in answers})
    return text, missing


def follow_up(m, sq: SubQuery, chain: list[Candidate], answer: str, steps: list) -> str | None:
    with m.step(steps, "followup", f"Missing-information query for sub-query {sq.id}") as s:
        prompt = m.prompt_set.MISSING_INFO.format(query=sq.text, answer=answer, evidence=format_evidence(chain))
        try:
            query = " ".join(str(m.llm.complete(prompt, schema=m.prompt_set.MISSING_INFO_SCHEMA,
                                                role="hmem.missing").parsed["query"]).split())
        except LLMError as exc:
            query, s.data["error"] = "", str(exc)
        s.data.update(subquery=sq.id, query=query)
        if not query or query.lower() == sq.text.lower():
            s.data["skipped"] = "no follow-up query, or a mere repeat of the sub-query"
            return None
    return query


def synthesize(m, question: str, plan: list[SubQuery], answers: dict, t: datetime, steps: list) -> str:
    with m.step(steps, "synthesize", "Synthesise the sub-answers") as s:
        s.data["sub_answers"] = [{"id": sq.id, "query": sq.text, "answer": answers[sq.id]} for sq in plan]
        shared = getattr(m, "answer_prompt", "native") == "shared"
        if len(plan) == 1 and not shared:
            s.data.update(answer=answers[plan[0].id], skipped="single sub-query: its answer is final")
            return answers[plan[0].id]
        lines = "\n".join(f"{i}. {sq.text} -> {answers[sq.id]}" for i, sq in enumerate(plan, 1))
        if shared:  # fair arena: the sub-questions and their answers are the memory shown
            prompt = shared_prompt(f"Sub-questions and their answers:\n{lines}", question, t)
            s.data["answer_prompt"] = "shared"
        else:
            prompt = m.prompt_set.SYNTHESIZE.format(now_line=question_date_line(t), question=question, answers=lines)
        try:
            text = m.llm.complete(prompt, role="hmem.synthesize").text.strip() or NOT_FOUND
        except LLMError as exc:
            text, s.data["error"] = "; ".join(answers[sq.id] for sq in plan), str(exc)
        s.data["answer"] = text
    return text


class HMemRetriever:
    """Cosine search over the hybrid structure's text units: fragments and all tree nodes.

    A tree node whose text repeats a better hit or an excluded unit (single-child parents copy
    their child's text) is skipped, so a masking caller (MemR3) never sees the same text twice.
    """

    def __init__(self, method):
        self.method = method
        self.name = "hmem"

    def _text(self, unit_id: str) -> str | None:
        m = self.method
        node = m.tree_.nodes.get(unit_id)
        text = node.text if node else (m.fragments_[unit_id].text if unit_id in m.fragments_ else None)
        return " ".join(text.lower().split()) if text else None

    def search(self, query: str, k: int, exclude: frozenset = frozenset()) -> list[Hit]:
        m = self.method
        if k <= 0:
            return []
        qv = m.embedder([query])[0]
        fetched = m.tree_.search(qv, k * m.tree_.l_max, exclude=exclude)
        hits = m.fragments_.search_vector(qv, k, exclude) + [node_candidate(m, i).hit(s) for i, s in fetched]
        seen = {self._text(i) for i in exclude} - {None}
        out = []
        for h in sorted(hits, key=lambda h: (-h.score, h.unit_id)):
            if self._text(h.unit_id) not in seen:
                seen.add(self._text(h.unit_id))
                out.append(h)
        return out[:k]
