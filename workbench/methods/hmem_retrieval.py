"""H-Mem online retrieval (paper §3.3): planning, evidence retrieval, sub-answers and synthesis.

A mixin for ``hmem.HMem`` (it reads the structures built at ingestion: ``tree_``, ``kg_``,
``fragments_``, ``entities_``, ``profiles_``, ``fragment_leaves_``), the ``HMemRetriever`` that
MemR3 drives, and ``summary_stats`` over saved traces. Kept apart from the indexing code so that each
module holds one half of the method; the departures from the paper are listed on ``HMem``.
"""
from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import numpy as np

from ..llm.errors import LLMError
from ..trace import Answer, Hit
from . import hmem_prompts as P
from .answer_prompt import shared_prompt
from .common import question_date_line
from .hmem_graph import SubQuery, order_subqueries, parse_plan
from .hmem_tree import (DAY, EPOCH, Candidate, candidate_from_node, candidate_from_unit, dedupe,
                        format_evidence, naive, parse_time_hint, score_candidates)

SCOPE_FRAGMENTS, SCOPE_SUMMARIES = ("SHORT", "MIXED"), ("LONG", "MIXED")
NOT_FOUND = "Not mentioned in the conversation"


class HMemRetrieval:
    """Question answering over the hybrid structure (mixed into ``HMem``)."""

    # -- answering ------------------------------------------------------------------------------
    def _answer(self, question: str, *, now: datetime | None) -> Answer:
        t = naive(now) if now else (self.last_time_ or EPOCH)
        steps: list = []
        if self.retrieval == "flat":
            chain = self._retrieve(SubQuery(1, question), question, t, steps, "Flat retrieval (one query)")
            sq = SubQuery(1, question)
            text, _ = self._sub_answer(sq, chain, {}, {}, t, steps)
            if getattr(self, "answer_prompt", "native") == "shared":
                text = self._synthesize(question, [sq], {1: text}, t, steps)
            return Answer(question, text, tuple(steps), tuple(c.hit() for c in chain))
        plan = self._plan(question, t, steps)
        answers: dict[int, str] = {}
        context: dict[str, Hit] = {}
        for sq in plan:
            # [ours] prerequisite answers also join the retrieval query (the paper uses them when answering)
            known = [answers[d] for d in sq.depends_on if answers.get(d, NOT_FOUND) != NOT_FOUND]
            query = " ".join([sq.text, *known])
            chain = self._retrieve(sq, query, t, steps, f"Evidence for sub-query {sq.id} ({sq.scope})")
            text, missing = self._sub_answer(sq, chain, answers, {s.id: s for s in plan}, t, steps)
            for _ in range(self.max_followups if self.use_missing_info and missing else 0):
                follow = self._follow_up(sq, chain, text, steps)
                if not follow:
                    break
                seen = {c.id for c in chain}
                extra = self._retrieve(sq, follow, t, steps, f"Follow-up evidence for sub-query {sq.id}")
                chain = chain + [c for c in extra if c.id not in seen]
                text, missing = self._sub_answer(sq, chain, answers, {s.id: s for s in plan}, t, steps)
                if not missing:
                    break
            answers[sq.id] = text
            for c in chain:
                context.setdefault(c.id, c.hit())
        final = self._synthesize(question, plan, answers, t, steps)
        return Answer(question, final, tuple(steps), tuple(context.values()))

    def _plan(self, question: str, t: datetime, steps: list) -> list[SubQuery]:
        with self.step(steps, "plan", "Decompose into sub-queries") as s:
            prompt = P.PLAN.format(now_line=question_date_line(t), question=question, max_n=self.max_subqueries)
            try:
                raw = self.llm.complete(prompt, schema=P.PLAN_SCHEMA, role="hmem.plan").parsed["subqueries"]
            except LLMError as exc:
                raw, s.data["error"] = [], str(exc)
            subs = parse_plan(raw, t, max_n=self.max_subqueries, parse_hint=parse_time_hint)
            if not subs:  # fallback: the question itself, MIXED scope, hints read from its text
                subs = parse_plan([{"query": question, "scope": "MIXED", "time": question}], t, max_n=1,
                                  parse_hint=parse_time_hint)
                s.data["fallback"] = "planner gave no usable sub-query: the question is the only sub-query"
            if self.scope_policy != "planner":
                subs = [replace(sq, scope=self.scope_policy.upper()) for sq in subs]
            plan, dropped = order_subqueries(subs)
            s.data.update(subqueries=[sq.to_dict() for sq in plan], order=[sq.id for sq in plan],
                          dropped_dependencies=dropped, scope_policy=self.scope_policy)
        return plan

    def _seeds(self, query: str, names: tuple[str, ...], qv: np.ndarray) -> list[dict]:
        """Lexical (planner names, then names found in the query) and vector seeds."""
        seeds: dict[str, dict] = {}
        for name in names:
            found = self.kg_.find(name)
            if found:
                seeds.setdefault(found.node, {"entity": found.node, "how": f"lexical:{found.how}",
                                              "score": found.score, "matched": name})
        for node, key in self.kg_.lexical_matches(query):
            seeds.setdefault(node, {"entity": node, "how": "lexical:query", "score": 1.0, "matched": key})
        vectors = self.embedder(list(names)) if names else qv[None, :]
        for vec in vectors:
            for h in self.entities_.search_vector(vec, self.seed_k):
                if h.score >= self.seed_min_sim:
                    seeds.setdefault(h.unit_id, {"entity": h.unit_id, "how": "vector", "score": round(h.score, 4),
                                                 "matched": h.text})
        out = list(seeds.values())[:self.max_seeds]
        for seed in out:
            seed["name"] = self.kg_.graph.nodes[seed["entity"]]["name"]
        return out

    def _retrieve(self, sq: SubQuery, query: str, t: datetime, steps: list, title: str) -> list[Candidate]:
        with self.step(steps, "retrieve", title) as s:
            qv = self.embedder([query])[0]
            cands: dict[str, Candidate] = {}
            seeds, paths = [], []
            frag_ok = sq.scope in SCOPE_FRAGMENTS or not self.use_tree or self.retrieval == "flat"
            if self.use_graph and len(self.kg_) and self.retrieval == "hybrid":
                seeds = self._seeds(query, sq.entities, qv)
                paths = self.kg_.expand([x["entity"] for x in seeds], hops=self.hops, fanout=self.fanout,
                                        max_entities=self.max_entities)
                self._entity_evidence(paths, qv, frag_ok, cands)
            self._vector_evidence(qv, frag_ok, cands)
            if self.use_tree and self.retrieval == "hybrid" and sq.scope in SCOPE_SUMMARIES:
                self._climb(cands)
            scored = score_candidates(list(cands.values()), qv, interval=sq.interval if self.use_temporal else None,
                                      now=t, theta=self.theta, lam=self.lam, eps=self.eps,
                                      tau=self.tau_days * DAY, eta=self.eta, use_robustness=self.use_robustness)
            unique, duplicates = dedupe(scored)
            chain = unique[:self.evidence_k]
            s.hits = [c.hit() for c in chain]
            s.data.update(subquery=sq.id, query=query, scope=sq.scope, interval=sq.interval_iso(),
                          seeds=seeds, expansion=[{**p, "name": self.kg_.graph.nodes[p["entity"]]["name"]}
                                                  for p in paths],
                          candidates=[c.trace() for c in scored], duplicates=duplicates,
                          evidence_chain=[c.id for c in chain])
        return chain

    def _entity_evidence(self, paths: list[dict], qv: np.ndarray, frag_ok: bool, cands: dict) -> None:
        """Entities -> provenance fragments (top-k by similarity) -> their leaf events; plus profiles."""
        frag_ids = sorted({f for p in paths for f in self.kg_.graph.nodes[p["entity"]]["fragment_ids"]})
        ranked = sorted(frag_ids, key=lambda f: (-float(self.fragments_.vector(f) @ qv), f))[:self.top_k]
        for f in ranked:
            if frag_ok:
                self._add(cands, candidate_from_unit(self.fragments_[f], self.fragments_.vector(f)), "entity")
            for leaf in self.fragment_leaves_.get(f, []) if self.use_tree else ():
                self._add(cands, self._node_candidate(leaf), "entity")
        for p in paths if self.use_profiles else ():
            pid = f"profile:{p['entity']}"
            if pid in self.profiles_:
                prof = self.kg_.graph.nodes[p["entity"]]["profile"]
                self._add(cands, candidate_from_unit(self.profiles_[pid], self.profiles_.vector(pid),
                                                         kind="profile", n_m=prof["updates"] - 1), "entity")

    def _vector_evidence(self, qv: np.ndarray, frag_ok: bool, cands: dict) -> None:
        """Vector top-k over leaf events (all tree nodes when flat); over fragments when the graph or the
        tree is switched off (or flat), so that every ablation still reaches the raw text."""
        if self.use_tree:
            levels = None if self.retrieval == "flat" else (1,)
            for node_id, _ in self.tree_.search(qv, self.top_k, levels=levels):
                self._add(cands, self._node_candidate(node_id), "vector")
        if frag_ok and (not self.use_graph or not self.use_tree or self.retrieval == "flat"):
            for h in self.fragments_.search_vector(qv, self.top_k):
                self._add(cands, candidate_from_unit(self.fragments_[h.unit_id],
                                                         self.fragments_.vector(h.unit_id)), "vector")

    def _climb(self, cands: dict) -> None:
        """Bottom-up tree search: the ancestors (L2..L_max summaries) of every candidate event."""
        for c in [c for c in cands.values() if c.kind == "event"]:
            for a in self.tree_.ancestors(c.id):
                self._add(cands, self._node_candidate(a), f"parent of {c.id}")

    def _node_candidate(self, node_id: str) -> Candidate:
        node = self.tree_.nodes[node_id]
        return candidate_from_node(node, self.tree_.vectors[node_id], self.tree_.window_name(node.level))

    @staticmethod
    def _add(cands: dict, cand: Candidate, via: str) -> None:
        if cand.id not in cands:
            cands[cand.id] = cand
        if via not in cands[cand.id].via:
            cands[cand.id].via.append(via)

    def _sub_answer(self, sq: SubQuery, chain: list[Candidate], answers: dict, by_id: dict, t: datetime,
                    steps: list) -> tuple[str, bool]:
        with self.step(steps, "subanswer", f"Answer sub-query {sq.id}") as s:
            prior = "".join(f"- {by_id[d].text} -> {answers[d]}\n" for d in sq.depends_on if d in answers)
            prompt = P.SUB_ANSWER.format(now_line=question_date_line(t), evidence=format_evidence(chain),
                                         query=sq.text, prior=P.PRIOR_ANSWERS.format(answers=prior) if prior else "")
            try:
                parsed = self.llm.complete(prompt, schema=P.SUB_ANSWER_SCHEMA, role="hmem.subanswer").parsed
                text, missing = str(parsed["answer"]).strip() or NOT_FOUND, bool(parsed["missing_info"])
            except LLMError as exc:
                text, missing, s.data["error"] = NOT_FOUND, False, str(exc)
            s.data.update(subquery=sq.id, query=sq.text, answer=text, missing_info=missing,
                          prerequisites={str(d): answers[d] for d in sq.depends_on if d in answers})
        return text, missing

    def _follow_up(self, sq: SubQuery, chain: list[Candidate], answer: str, steps: list) -> str | None:
        with self.step(steps, "followup", f"Missing-information query for sub-query {sq.id}") as s:
            prompt = P.MISSING_INFO.format(query=sq.text, answer=answer, evidence=format_evidence(chain))
            try:
                query = " ".join(str(self.llm.complete(prompt, schema=P.MISSING_INFO_SCHEMA,
                                                       role="hmem.missing").parsed["query"]).split())
            except LLMError as exc:
                query, s.data["error"] = "", str(exc)
            s.data.update(subquery=sq.id, query=query)
            if not query or query.lower() == sq.text.lower():
                s.data["skipped"] = "no follow-up query, or a mere repeat of the sub-query"
                return None
        return query

    def _synthesize(self, question: str, plan: list[SubQuery], answers: dict, t: datetime, steps: list) -> str:
        with self.step(steps, "synthesize", "Synthesise the sub-answers") as s:
            s.data["sub_answers"] = [{"id": sq.id, "query": sq.text, "answer": answers[sq.id]} for sq in plan]
            shared = getattr(self, "answer_prompt", "native") == "shared"
            if len(plan) == 1 and not shared:
                s.data.update(answer=answers[plan[0].id], skipped="single sub-query: its answer is final")
                return answers[plan[0].id]
            lines = "\n".join(f"{i}. {sq.text} -> {answers[sq.id]}" for i, sq in enumerate(plan, 1))
            if shared:  # fair arena: the sub-questions and their answers are the memory shown
                prompt = shared_prompt(f"Sub-questions and their answers:\n{lines}", question, t)
                s.data["answer_prompt"] = "shared"
            else:
                prompt = P.SYNTHESIZE.format(now_line=question_date_line(t), question=question, answers=lines)
            try:
                text = self.llm.complete(prompt, role="hmem.synthesize").text.strip() or NOT_FOUND
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
        hits = m.fragments_.search_vector(qv, k, exclude) + [m._node_candidate(i).hit(s) for i, s in fetched]
        seen = {self._text(i) for i in exclude} - {None}
        out = []
        for h in sorted(hits, key=lambda h: (-h.score, h.unit_id)):
            if self._text(h.unit_id) not in seen:
                seen.add(self._text(h.unit_id))
                out.append(h)
        return out[:k]


def summary_stats(answers: list[Answer]) -> dict:
    """Planner and follow-up figures from traces alone (paper App. A.4: scopes, Table 9 trigger rate)."""
    plans = [s for a in answers for s in a.steps if s.kind == "plan"]
    subs = [q for p in plans for q in p.data.get("subqueries", [])]
    follow = [s for a in answers for s in a.steps if s.kind == "followup"]
    chains = [len(s.data.get("evidence_chain", [])) for a in answers for s in a.steps if s.kind == "retrieve"]
    scopes = {sc: sum(q["scope"] == sc for q in subs) for sc in P.SCOPES}
    return {"questions": len(answers), "subqueries": len(subs),
            "subqueries_per_question": len(subs) / len(plans) if plans else 0.0,
            "scope_counts": scopes, "followups": len(follow),
            "followup_rate": len(follow) / len(subs) if subs else 0.0,
            "mean_evidence_chain": float(np.mean(chains)) if chains else 0.0}
