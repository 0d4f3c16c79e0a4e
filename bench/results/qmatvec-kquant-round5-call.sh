#!/bin/bash
# Round 5's one device call (branch kq5), run from the tree's root: the K path's variants side by
# side (bench/gpu_quant.py --explore-only), then the quant tests with round 5's switches all on
# (bulk copies + first step before the wait + 6 blocks/SM, q4_K and q6_K) as a temporary default.
OUT=${OUT:-/tmp/out}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee "$OUT/device.log"
python3 -c "import torch; print('torch', torch.__version__)" 2>&1 | tee -a "$OUT/device.log"
echo "== explore $(date -u +%T)" | tee "$OUT/explore.log"
timeout 105 python3 bench/gpu_quant.py --explore-only --formats q4_k,q6_k 2>&1 | tee -a "$OUT/explore.log"
echo "== explore rc=${PIPESTATUS[0]} $(date -u +%T)" | tee -a "$OUT/explore.log"
sed -i '1i #define OPGEN_QMATVEC_K4_BULK 1\n#define OPGEN_QMATVEC_K4_EARLY 1\n#define OPGEN_QMATVEC_K4_BLOCKS 6\n#define OPGEN_QMATVEC_K6_BULK 1\n#define OPGEN_QMATVEC_K6_EARLY 1\n#define OPGEN_QMATVEC_K6_BLOCKS 6' hip/quantized.hip
head -7 hip/quantized.hip | tee "$OUT/tests.log"
OPGEN_POISON=1 timeout 70 python3 -m pytest tests/gpu/test_quant_gpu.py -q -p no:cacheprovider 2>&1 | tail -25 | tee -a "$OUT/tests.log"
echo "== tests rc=${PIPESTATUS[0]} $(date -u +%T)" | tee -a "$OUT/tests.log"
