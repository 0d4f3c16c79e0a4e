#!/bin/bash
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl .devtree/s22/*.whl || exit 1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
python3 .devtree/s22/balance.py 3968,4096,4224,4352,4480 2>&1 | tee $OUT/balance.log
