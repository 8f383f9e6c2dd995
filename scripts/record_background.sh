#!/usr/bin/env bash
# Background real-scale recordings for one session (issue #36), lowest CPU priority, in the order the
# issues ask for: the Mem0-style reference over conv-30 first (RecMem's construction-cost anchor), then the cheap
# methods over conv-26 and conv-41, then AMA and H-Mem over conv-30, the dearest (published ones are skipped).
# Each step resumes where an earlier session stopped.
# Pause it while the test suite runs:  kill -STOP -- -$(cat runs/real_scale/recorder.pgid)   (-CONT resumes)
set -u
cd "$(dirname "$0")/.."
mkdir -p runs/real_scale
echo $$ > runs/real_scale/recorder.pgid
PY=.venv/bin/python
for step in "mem0_style conv-30" "naive_rag conv-26" "naive_rag conv-41" "full_context conv-26" \
            "full_context conv-41" "recmem conv-26" "hymem conv-26" "recmem conv-41" "hymem conv-41" \
            "ama conv-30" "hmem conv-30"; do
  set -- $step
  nice -n "${RECORD_NICE:-19}" "$PY" -m benchmarks.record_real_scale --methods "$1" --conversation "$2" || \
    echo "step $step stopped with exit $?" >&2
done
