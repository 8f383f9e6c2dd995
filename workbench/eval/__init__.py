"""Evaluation: metrics (mem0-style F1/BLEU-1, official LoCoMo F1, evidence recall), LLM judges,
the resumable harness and pure report functions.

    from workbench.eval import evaluate, LLMJudge, summary_table
    res = evaluate(NaiveRAG(llm=llm, embedder=emb), load_sample(), judge=LLMJudge(judge_llm),
                   store="runs/x/results.jsonl")
    res.summary()
"""
from .attribution import attribute, attribution_table
from .harness import EvalResult, QuestionResult, evaluate, select, select_conversations
from .judge import CheckerJudge, JudgeVerdict, LLMJudge
from .metrics import DEFAULT, METRICS, bleu1, evidence_recall, locomo_f1, token_f1
from .report import cost_accuracy_frame, export, load_results, results_frame, summary_table, to_markdown
from .store import ResultsStore

__all__ = ["EvalResult", "QuestionResult", "evaluate", "select", "select_conversations", "JudgeVerdict", "LLMJudge",
           "CheckerJudge",
           "DEFAULT", "METRICS", "bleu1", "evidence_recall", "locomo_f1", "token_f1", "cost_accuracy_frame", "export",
           "load_results", "results_frame", "summary_table", "to_markdown", "ResultsStore", "attribute",
           "attribution_table"]
