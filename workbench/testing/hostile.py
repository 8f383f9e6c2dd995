"""A hostile run directory for tests: what someone else's run could contain.

``add_hostile_parts(run)`` takes a run directory made by this project and adds, as a stranger
could: a method folder whose name is an HTML payload, memory rows whose JSON keys and values are
payloads, a structures.json with payload keys, a conversation file whose name and id carry
payloads and unusual characters, manifest values that are payloads, a 216 KB turn, and a
results.jsonl with a garbage line and a torn last line (a crash mid-write). Each payload, if it
ever ran in a browser, would open a dialog, set ``window.__pwned`` or request a URL containing
``pwned`` — so a test can count executions with a dialog/network listener.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..jsonl import write_json_atomic

#: every payload here announces itself: a dialog, window.__pwned, or a request for /pwned-*
PAYLOADS = (
    '<img src="/pwned-img" onerror="alert(1);window.__pwned=1">',
    "<script>alert(2);window.__pwned=2;fetch('/pwned-script')</script>",
    '<svg onload="alert(3);window.__pwned=3"></svg>',
    '"><iframe src="/pwned-iframe" onload="alert(4)"></iframe>',
    "<a href=\"javascript:alert(5)\" id=\"pwned-link\">click</a>",
    "{{constructor.constructor('alert(6)')()}}",
)
METHOD_NAME = '<img src="pwned-method" onerror="alert(7);window.__pwned=7">'  # no '/': a folder name
KEY_NAME = '<img src="/pwned-key" onerror="alert(8);window.__pwned=8">'
CONV_ID = 'odd id/<b onmouseover="alert(9)">..\\%2F?#&amp;'
LONG_TURN_CHARS = 216_000


def _conversation(conv_id: str, speakers=("Mal", "Eve")) -> dict:
    turns = [{"id": f"D1:{i + 1}", "speaker": speakers[i % 2], "text": p, "session_id": "S1",
              "time": "2023-05-08T13:56:00", "extras": {"blip_caption": p}} for i, p in enumerate(PAYLOADS)]
    line = "A very long pasted log line without end. "
    long_text = (line * (LONG_TURN_CHARS // len(line) + 1))[:LONG_TURN_CHARS]
    turns.append({"id": f"D1:{len(PAYLOADS) + 1}", "speaker": speakers[0], "text": long_text, "session_id": "S1",
                  "time": "2023-05-08T13:56:00", "extras": {}})
    return {"id": conv_id, "speakers": list(speakers), "source": PAYLOADS[0],
            "sessions": [{"id": "S1", "date_time": "2023-05-08T13:56:00", "date_text": PAYLOADS[2], "turns": turns}],
            "qa": [{"id": f"{conv_id}/q0", "question": f"What did Mal paste? {PAYLOADS[1]}", "answer": PAYLOADS[0],
                    "category": 4, "evidence": ["D1:1"], "time": "2023-05-09T10:00:00", "extras": {}}]}


def add_hostile_parts(run: str | Path) -> dict:
    """Add the hostile parts to an existing run directory; returns what was added (for assertions)."""
    from ..rundir import safe_name

    run = Path(run)
    # A conversation whose id (and so its file name) is odd; saved the way the project saves ids.
    conv = _conversation(CONV_ID)
    long_text = conv["sessions"][0]["turns"][-1]["text"]
    write_json_atomic(run / "conversations" / f"{safe_name(CONV_ID)}.json", conv)
    # A method folder named by hand with an HTML payload (not through safe_name: a stranger's tool).
    mdir = run / "memories" / METHOD_NAME / safe_name(CONV_ID)
    mdir.mkdir(parents=True, exist_ok=True)
    rows = [{"id": f"m{i}", "kind": p, "text": p, "time": None, "source_ids": ["D1:1"], KEY_NAME: p}
            for i, p in enumerate(PAYLOADS)]
    rows.append({"id": "m-long", "kind": "raw", "text": long_text, "time": None,
                 "source_ids": [f"D1:{len(PAYLOADS) + 1}"], KEY_NAME: ""})
    (mdir / "memories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + "{not json\n")
    events = [{"seq": i, "kind": "ADD", "unit_id": f"m{i}", "before": None, "after": p, "cause": p,
               "source_ids": ["D1:1"], "time": None, "method": METHOD_NAME, "data": {KEY_NAME: p}}
              for i, p in enumerate(PAYLOADS)]
    events.append({"seq": len(events), "kind": "UPDATE", "unit_id": "m-long", "before": long_text,
                   "after": long_text + " (edited)", "cause": "hostile", "source_ids": [], "time": None,
                   "method": METHOD_NAME, "data": {}})
    (mdir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    (mdir / "structures.json").write_text(json.dumps({KEY_NAME: list(PAYLOADS), "tree": {KEY_NAME: PAYLOADS[1]}}))
    # Saved memories of methods that have a structure card (widgets.structure_cards), every text a payload
    # and some fields of the wrong type: the cards must escape them and note what they cannot read.
    for method, card_rows, structures in (
            ("ama", [{"id": "fact:0", "kind": "fact", "text": PAYLOADS[0], "source_ids": ["D1:1"],
                      "pattern": PAYLOADS[1]},
                     {"id": "episode:0", "kind": "episode", "text": PAYLOADS[2], "title": PAYLOADS[3],
                      "source_ids": "D1:2"}, {"id": "raw:x", "kind": PAYLOADS[4], "text": PAYLOADS[5]}],
             {"ingestion_log": [{"turn_id": PAYLOADS[0], "step": "judge", "verdict": PAYLOADS[1]},
                                {"turn_id": "D1:1", "step": "refresh", "action": PAYLOADS[2], "updated": [PAYLOADS[3]]},
                                {"turn_id": "D1:2", "step": "episode", "stored": False, "error": PAYLOADS[4]}]}),
            ("hymem", [{"id": "L2-0", "kind": "L2", "text": PAYLOADS[0], "topic": PAYLOADS[1], "source_ids": ["D1:1"],
                        "segment": PAYLOADS[2]},
                       {"id": "L1-0", "kind": "L1", "text": PAYLOADS[3], "event_id": "L2-0", "fallback": PAYLOADS[4]},
                       {"id": "L1-1", "kind": "L1", "text": PAYLOADS[5], "event_id": PAYLOADS[0]}], {})):
        cdir = run / "memories" / method / safe_name(CONV_ID)
        cdir.mkdir(parents=True, exist_ok=True)
        (cdir / "memories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in card_rows))
        (cdir / "structures.json").write_text(json.dumps(structures))
        (cdir / "params.json").write_text(json.dumps({"method": method, "params": {"trigger": PAYLOADS[5],
                                                                                    "segmentation": PAYLOADS[0]}}))
    # Manifest values a stranger wrote.
    manifest_path = run / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    manifest.update({"label": PAYLOADS[1], "scripted": True, "llm": {"model": PAYLOADS[0]}, "embedder": PAYLOADS[2],
                     "judge": PAYLOADS[3], KEY_NAME: PAYLOADS[4]})
    manifest_path.write_text(json.dumps(manifest))
    # Results: one row for the odd conversation (method name a payload), then garbage and a torn line.
    answer = {"question": conv["qa"][0]["question"], "text": PAYLOADS[0], "steps": [
        {"kind": PAYLOADS[2], "title": PAYLOADS[1], "data": {KEY_NAME: PAYLOADS[0], "note": PAYLOADS[3]},
         "hits": [{"unit_id": PAYLOADS[0], "text": PAYLOADS[1], "score": 0.5, "source_ids": ["D1:1"], "kind": "raw"}],
         "calls": []}], "context": [], "usage": {}, "method": METHOD_NAME}
    row = {"method": METHOD_NAME, "params_hash": "h", "dataset": "hostile", "conv_id": CONV_ID,
           "qa_id": conv["qa"][0]["id"], "category": 4, "category_name": PAYLOADS[4],
           "question": conv["qa"][0]["question"],
           "gold": PAYLOADS[0], "prediction": PAYLOADS[0], "scores": {"f1": 0.0}, "judge_label": PAYLOADS[1],
           "query_tokens": 1, "answer": answer}
    with open(run / "results.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n" + "garbage that is not JSON\n" + '{"method": "torn", "params_ha')
    return {"conv_id": CONV_ID, "method": METHOD_NAME, "key": KEY_NAME, "payloads": PAYLOADS}


#: the kinds of damage ``add_damaged_event_lines`` cycles through (each a line the JSONL reader skips)
DAMAGED_LINES = ("{not json", '{"seq": NaN}', "[1, 2, 3]", '{"seq": 1' + "0" * 30 + "}", "\udcff")


def add_damaged_event_lines(run: str | Path, n: int = 1000) -> list[Path]:
    """Append ``n`` damaged lines to every ``events.jsonl`` of ``run`` (issue #41: a few hundred such
    lines once blocked the app for minutes, each problem re-rendering every alert). Returns the files."""
    files = sorted(Path(run).glob("memories/*/*/events.jsonl"))
    for path in files:
        with open(path, "ab") as f:
            for i in range(n):
                f.write(DAMAGED_LINES[i % len(DAMAGED_LINES)].encode("utf-8", "surrogateescape") + b" %d\n" % i)
    return files
