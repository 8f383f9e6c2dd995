"""MemR3's paper and small profiles on the demo's 12 questions (benchmarks/bench_memr3_ab.py, issue #39; review
../shared/reviews/memr3.md §4): both replay with no call missing, and what the 1.5B did is what the recording holds.

If a MemR3 prompt or schema changes, this fails until the paper profile is re-recorded with
``python -m benchmarks.bench_memr3_ab --live`` (about 35 minutes on 2 cores).
"""
from __future__ import annotations

import pytest

from benchmarks.bench_memr3_ab import CASSETTE

pytestmark = pytest.mark.skipif(not CASSETTE.exists(), reason="no MemR3 A/B cassette")


@pytest.fixture(scope="module")
def ab(tmp_path_factory):
    from benchmarks import bench_memr3_ab

    return bench_memr3_ab.run(live=False, results_dir=tmp_path_factory.mktemp("memr3_ab"))["profiles"]


def test_both_profiles_replay_every_question(ab):
    for name in ("small", "paper"):
        p = ab[name]
        assert p["profile"] == name and p["questions"] == 12 and p["cassette_misses"] == 0 and p["row_errors"] == 0


def test_the_paper_wording_did_not_make_the_15b_write_a_gap(ab):
    """The paper profile restores "gaps will do that", "missing specifics" and the "None"-once rule and requires
    the payload: the 1.5B looped more (24 router steps against 15) and its unbounded replies ran into the token cap
    (10 JSON retries), but it wrote no open gap in any of the 12 questions, as the small profile did not."""
    small, paper = ab["small"], ab["paper"]
    assert (small["router_steps"], paper["router_steps"]) == (15, 24)
    assert small["questions_with_a_gap"] == paper["questions_with_a_gap"] == 0
    assert paper["failure_kinds"].get("json_retry") == 10 and not small["failure_kinds"]
    assert small["payload_share"] == {"answer": 1.0, "reflect": 1.0, "retrieve": 1.0}
    # every reply that was read carried its payload; the 4 steps without one were replies cut at the token cap and
    # discarded after repair and retry (turn-4 N6: payload_share counted them as skipped payloads, 2 of 3)
    assert paper["payload_share"] == {"answer": 1.0, "reflect": 1.0, "retrieve": 1.0}
    assert paper["rejected_replies"] == 4 and small["rejected_replies"] == 0
    # 4 each, of the 12 with the two adversarial questions (category 5) now counted (issue #66): the small profile's
    # "Biscuit" for "Biscuit, Pilot" is half a list, wrong since a list gold needs every item, and its "The evidence
    # does not provide information about long-distance running." abstains on q38, right; the paper profile's "has had
    # only one name: Biscuit" denies the second name (wrong by the list rule) and it made up both category-5 answers
    assert (small["checker_right"], paper["checker_right"]) == (4, 4)
    right = {name: sorted(a["qa_id"] for a in p["answers"] if a["checker"] == 1.0) for name, p in ab.items()}
    assert right == {"small": ["sample-1/q0", "sample-1/q16", "sample-1/q31", "sample-1/q38"],
                     "paper": ["sample-1/q0", "sample-1/q16", "sample-1/q2", "sample-1/q31"]}
    by_qa = {a["qa_id"]: a["checker"] for a in small["answers"]}
    assert by_qa["sample-1/q25"] == 0.0 and by_qa["sample-1/q34"] == 0.0  # half a list; a made-up name on cat 5
