"""The committed AMA refresh recording (sample_data/cassettes/ama-refresh.jsonl, Qwen2.5-Coder-1.5B) replays
with the current code: no call is missing, and the Refresher's recorded edits come out again.

If a prompt or the probe logic changes, this fails until the recording is redone with
``python -m benchmarks.bench_ama_refresh --live``.
"""
from __future__ import annotations

import pytest

from workbench.demo import REFRESH_CASSETTE

pytestmark = pytest.mark.skipif(not REFRESH_CASSETTE.exists(), reason="no AMA refresh cassette")


@pytest.fixture(scope="module")
def probe_runs(tmp_path_factory):
    from benchmarks import bench_ama_refresh

    out = bench_ama_refresh.run(live=False, checks=("probe",), results_dir=tmp_path_factory.mktemp("ama_refresh"))
    return {r["slice"]: r for r in out["runs"]}


def test_every_call_replays(probe_runs):
    for name, run in probe_runs.items():
        assert run["status"] == "ok" and not run["misses"], (name, run["misses"])


def test_the_recorded_run_has_refresh_events_with_before_and_after(probe_runs):
    edits = [e for run in probe_runs.values() for e in run["refresh_events"]]
    assert edits, "the probe recording should contain at least one UPDATE/DELETE"
    for e in edits:
        assert e["kind"] in ("UPDATE", "DELETE") and e["before"] and e["cause"]
        assert (e["after"] is None) == (e["kind"] == "DELETE")
    checks = sum(run["ingest_checks"] for run in probe_runs.values())
    assert 0 < sum(run["ingest_verdicts"].get("Refresh", 0) for run in probe_runs.values()) <= checks
