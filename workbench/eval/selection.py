"""Which conversations and questions a run covers (``select``), and the display name of a category.

Kept apart from the harness so that the judge audit and the estimate can plan over a dataset
without importing the harness (imports run one way inside ``workbench.eval``).
"""
from __future__ import annotations

from ..data import CATEGORY_NAMES, QA, Conversation, Dataset


def category_name(category) -> str:
    """Official LoCoMo names for the integers; LongMemEval types unchanged."""
    if isinstance(category, int):
        return CATEGORY_NAMES.get(category, str(category))
    return str(category)


# -- selection -----------------------------------------------------------------------------------------

def select(dataset: Dataset, *, conversations=None, questions=None,
           categories=None) -> list[tuple[Conversation, list[QA]]]:
    """The (conversation, questions) plan of a run, in dataset order; conversations left empty are dropped."""
    convs = select_conversations(dataset, conversations)
    cats = None if categories is None else {_category(c) for c in categories}
    per_conv = questions if isinstance(questions, int) else None
    ids = None if questions is None or per_conv is not None else {str(q) for q in questions}
    plan = []
    for conv in convs:
        qas = [q for q in conv.qa if (cats is None or q.category in cats) and (ids is None or q.id in ids)]
        if per_conv is not None:
            qas = qas[:per_conv]
        if qas:
            plan.append((conv, qas))
    return plan


def select_conversations(dataset: Dataset, spec=None) -> list[Conversation]:
    """``None`` (all), an index, an id, a slice/range, an iterable (ints are indices, strings ids), or a
    string spec like ``"0-2"`` (inclusive), ``"0,3,5"`` or ``"conv-26,conv-30"`` (digits are indices)."""
    if spec is None:
        return list(dataset.conversations)
    if isinstance(spec, int):
        return [_pick(dataset, spec)]
    if isinstance(spec, (slice, range)):
        return list(dataset.conversations[spec]) if isinstance(spec, slice) else [_pick(dataset, i) for i in spec]
    if isinstance(spec, str):
        items: list = []
        for part in (p.strip() for p in spec.split(",") if p.strip()):
            lo, dash, hi = part.partition("-")
            if dash and lo.isdigit() and hi.isdigit():
                items.extend(range(int(lo), int(hi) + 1))
            else:
                items.append(int(part) if part.isdigit() else part)
        spec = items
    out, seen = [], set()
    for item in spec:
        conv = _pick(dataset, item)
        if conv.id not in seen:
            seen.add(conv.id)
            out.append(conv)
    return out


def _pick(dataset: Dataset, item) -> Conversation:
    """One conversation by index or id; a ``ValueError`` saying what the dataset holds when it has no such one
    (not the bare ``IndexError``/``KeyError`` of the lookup)."""
    n = len(dataset.conversations)
    if isinstance(item, int) and not isinstance(item, bool):
        if not -n <= item < n:
            raise ValueError(f"conversation index {item} is past the end: the dataset has {n} conversation"
                             f"{'s' if n != 1 else ''} (indices 0 to {n - 1})")
        return dataset.conversations[item]
    for conv in dataset.conversations:
        if conv.id == item:
            return conv
    ids = [c.id for c in dataset.conversations]
    shown = ", ".join(ids[:8]) + (f" and {len(ids) - 8} more" if len(ids) > 8 else "")
    raise ValueError(f"no conversation with id {item!r} in the dataset (its ids: {shown or 'none'})")


def _category(c):
    return int(c) if isinstance(c, str) and c.strip().isdigit() else c
