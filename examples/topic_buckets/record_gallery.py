"""Record TopicBuckets' gallery cassette from the scripted reply file, with no model:
``python record_gallery.py`` (from this folder, with the workbench importable). It runs the very ``workbench
eval`` command the gallery replays (``workbench.gallery.eval_argv``), with ``--llm scripted:replies.json`` in
place of the demo model, so the replay asks exactly the recorded calls. The cassette goes into this package's
resources (``topic_buckets/resources/cassettes/gallery/topic_buckets.jsonl``), and the cost profile fitted from
it (calls and tokens per turn, question and judged question) into ``topic_buckets/resources/cost_profiles.json``,
which ``workbench eval``'s estimate reads for this method."""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # this folder's package, whether or not it is installed

from workbench import gallery  # noqa: E402
from workbench.cli import main  # noqa: E402
from workbench.methods import REGISTRY, register  # noqa: E402

from topic_buckets.method import TopicBuckets  # noqa: E402

if REGISTRY.get("topic_buckets") is None:
    register(TopicBuckets)
tape = gallery.cassette("topic_buckets")
tape.parent.mkdir(parents=True, exist_ok=True)
tape.unlink(missing_ok=True)  # a fresh recording, not calls appended to an old one
#: each role's phase and the unit its calls are counted per (docs/plugin-checklist.md, "Ship resources")
PHASES = {"topic_buckets.summarize": ("construct", "turns"), "topic_buckets.answer": ("query", "questions"),
          "judge.locomo": ("judge", "judged")}


def fit_cost_profile(tape: Path, params: dict) -> dict:
    """Per-unit calls and tokens of each role in the recording, in the format of the workbench's
    ``sample_data/cost_profiles.json``."""
    from workbench.data import load_locomo

    conv = next(c for c in load_locomo(gallery.conversations_file("topic_buckets")))
    units = {"turns": len(conv.turns), "questions": len(conv.qa), "judged": len(conv.qa)}
    roles: dict = {}
    for line in tape.read_text(encoding="utf-8").splitlines():
        call = json.loads(line)
        phase, unit = PHASES[call["role"]]
        r = roles.setdefault(call["role"], {"phase": phase, "role": call["role"], "unit": unit, "calls": 0,
                                            "prompt_tokens": 0, "completion_tokens": 0, "misses": 0})
        r["calls"] += 1
        r["prompt_tokens"] += call["prompt_tokens"]
        r["completion_tokens"] += call["completion_tokens"]
    for r in roles.values():
        r.update(calls_per_unit=round(r["calls"] / units[r["unit"]], 3),
                 prompt_tokens_per_call=round(r["prompt_tokens"] / r["calls"], 3),
                 completion_tokens_per_call=round(r["completion_tokens"] / r["calls"], 3))
    return {"fitted_on": {"cassette": tape.name, "model": "scripted-topic-buckets", "data": conv.id,
                          "conversations": 1, **units},
            "how": "calls and tokens of the recorded gallery run per role, divided by the role's unit",
            "methods": {"topic_buckets": {"params": params, "roles": sorted(roles.values(), key=lambda r: r["role"])}}}


with tempfile.TemporaryDirectory() as out:
    replies = f"scripted:{HERE / 'replies.json'}"
    argv = gallery.eval_argv("topic_buckets", Path(out) / "run", replay=False, model=replies)
    rc = main(["eval", *argv])
    if rc:
        sys.exit(rc)
    manifest = json.loads((Path(out) / "run" / "manifest.json").read_text(encoding="utf-8"))
    params = manifest["evaluations"][-1]["params"]
profile = tape.parent.parent.parent / "cost_profiles.json"
profile.write_text(json.dumps(fit_cost_profile(tape, params), indent=1, sort_keys=True) + "\n", encoding="utf-8")
print(f"recorded {tape} and fitted {profile}")
