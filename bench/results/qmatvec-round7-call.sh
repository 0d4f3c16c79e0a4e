#!/bin/bash
# Round 7 (branch q4mma), device call 1: q4_0's digits on tensor cores (hip/quantized.hip's
# OPGEN_QMV_MMA): the quant GPU tests with the mma path compiled in, the new adversarial-x test
# on the shipped kernel, then the explore (shipped, mma at 3 / 2 / 4 blocks per SM) twice.
# Run from the root of commit f62a32f's tree on the device (the switch and the explore rows 4-6 are
# there only); bench/results/qmatvec-round7-h100.log has its output.
set -u
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
start=$(date +%s)
short() { grep "explore qmatvec" "$1" | sed 's/ | / /g; s/per product in a graph: //; s/, error vs first/ err/' | cut -c1-230; }
sed -i 's/^#define OPGEN_QMV_MMA 0$/#define OPGEN_QMV_MMA 1/' hip/quantized.hip
echo "switch on: $(grep -c '^#define OPGEN_QMV_MMA 1$' hip/quantized.hip)"
OPGEN_POISON=1 timeout 240 python3 -m pytest tests/gpu -q -p no:cacheprovider --ignore=tests/gpu/test_kernels_compile.py \
  -k "quant or qmat or qstorage" > $OUT/tests_mma.log 2>&1
echo "tests (mma) rc $? at $(( $(date +%s) - start )) s"; tail -4 $OUT/tests_mma.log
sed -i 's/^#define OPGEN_QMV_MMA 1$/#define OPGEN_QMV_MMA 0/' hip/quantized.hip
echo "switch on: $(grep -c '^#define OPGEN_QMV_MMA 1$' hip/quantized.hip)"
OPGEN_POISON=1 timeout 90 python3 -m pytest tests/gpu/test_quant_gpu.py -q -p no:cacheprovider -k adversarial \
  > $OUT/tests_shipped_adversarial.log 2>&1
echo "adversarial (shipped) rc $? at $(( $(date +%s) - start )) s"; tail -2 $OUT/tests_shipped_adversarial.log
for r in 1 2; do
  timeout 150 python3 bench/gpu_quant.py --explore-only --formats q4_0 --variants 4,5,6 > $OUT/q40_$r.log 2>&1
  echo "explore $r rc $? at $(( $(date +%s) - start )) s"; short $OUT/q40_$r.log
  grep -i "error\|failed" $OUT/q40_$r.log | grep -v "error vs" | head -5
done
