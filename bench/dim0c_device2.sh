#!/usr/bin/env bash
# Branch dim0c's second device call (bench/results/dim0c-h100.md, round 2): run from the tree's
# root on the device machine, HEAD's hip/reduce.hip at $1, results to $OUT.
#   kernels precompiled; column-explore (the block combine and the grids, 3 rounds, torch
#   beside); the runtime-only variant faster than the default in every round, if any
#   (bench/gpu_issue11.py pick-columns), then three fresh processes of
#   `bench/gpu.py --parts sum-dim0` and the reduce tests under OPGEN_POISON=1 with it; a short
#   ncu of the kernel as chosen.
set -u
export PYTHONUNBUFFERED=1 OPGEN_REDUCE_BEFORE="$1"
LOG=$OUT/dim0c2-h100.log
step() { echo "== step $1 $(date +%T)" >>"$LOG"; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.memory --format=csv >>"$LOG" 2>&1
step "precompile"
timeout 50 python3 -m bench.precompile --column-explore --jobs 15 >>"$LOG" 2>&1; echo "rc $?" >>"$LOG"
step "column-explore"
timeout 40 python3 bench/gpu.py --parts column-explore --out /tmp/explore >>"$LOG" 2>&1; echo "rc $?" >>"$LOG"
cp /tmp/explore/gpu.json "$OUT/column-explore4-h100.json" 2>/dev/null
SETTINGS=$(python3 -m bench.gpu_issue11 pick-columns /tmp/explore/gpu.json 2>>"$LOG")
echo "chosen settings: '${SETTINGS}'" >>"$LOG"
for r in 1 2 3; do
  step "sum-dim0 run $r"
  OPGEN_REDUCE_SETTINGS="$SETTINGS" timeout 20 python3 bench/gpu.py --parts sum-dim0 --out /tmp/run$r >>"$LOG" 2>&1
  echo "rc $?" >>"$LOG"
  cp /tmp/run$r/gpu.json "$OUT/dim0c2-h100-run$r.json" 2>/dev/null
done
step "reduce tests"
OPGEN_TEST_REDUCE_DEFINES="$SETTINGS" OPGEN_POISON=1 timeout 45 python3 -m pytest tests/gpu -q -p no:cacheprovider \
  -p no:randomly --ignore=tests/gpu/test_kernels_compile.py -k "reduce or sum or column" >>"$LOG" 2>&1
echo "rc $?" >>"$LOG"
step "ncu"
OPGEN_REDUCE_SETTINGS="$SETTINGS" timeout 20 ncu --section SpeedOfLight --section Occupancy --section LaunchStats \
  --section MemoryWorkloadAnalysis --clock-control none -k 'regex:reduce_chunks_f32|reduce_kernel' -c 6 \
  python3 -m bench.dim0_ncu >"$OUT/dim0c2-ncu.txt" 2>&1
echo "rc $?" >>"$LOG"
step "end"
