#!/bin/bash
# The collectives' device call: the GPU rank suite, the fault cases, three bench runs (opgen and
# torch.distributed, same GPUs), the table, and the tensor-parallel MLP example, on every GPU of
# the machine. Run from the copy of the tree the call carries: bash bench/results/collectives-device/run.sh
set -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
QUICK=${QUICK:-0}
python3 -m pip install -q --no-index --no-deps --no-compile --ignore-installed --prefix /tmp/mpi .whl/mpich-*.whl || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/mpi4py-*.whl .whl/nvmath_python-*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=/tmp/mpi/lib:${LD_LIBRARY_PATH:-} PATH=/tmp/mpi/bin:$PATH
N=$(nvidia-smi -L | wc -l)
R=/tmp/res; mkdir -p $R
pack() { tar czf $OUT/results-$N.tgz -C $R .; }  # one file back: the call returns at most 8
start=$(date +%s)
stamp() { pack; echo "== $1 at $(( $(date +%s) - start )) s"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpus.txt
nvidia-smi topo -m >> $R/gpus.txt 2>&1
python3 -c "import torch; print('torch', torch.__version__, 'nccl', torch.cuda.nccl.version())" | tee -a $R/gpus.txt
python3 -c "from runtime.comm import nccl; print('opgen loads', nccl._candidates()[0], nccl.library().version())" | tee -a $R/gpus.txt
stamp suite
timeout 150 mpiexec -n $N python3 -m tests.collectives.rank_suite --backend cuda $([ $QUICK = 1 ] && echo --quick) > $R/suite-$N.log 2>&1
echo "suite rc $?"; grep '^{' $R/suite-$N.log | cut -c1-300
RUNS=$([ $QUICK = 1 ] && echo 1 || echo 3)
for i in $(seq $RUNS); do
  stamp "bench run $i"
  mkdir -p /tmp/b$i
  timeout 100 mpiexec -n $N python3 bench/collectives.py opgen --out /tmp/b$i > /tmp/b$i/opgen.log 2>&1 || { echo "opgen run $i failed"; tail -20 /tmp/b$i/opgen.log; }
  timeout 100 python3 -m torch.distributed.run --nproc-per-node $N bench/collectives.py torch --out /tmp/b$i > /tmp/b$i/torch.log 2>&1 || { echo "torch run $i failed"; tail -20 /tmp/b$i/torch.log; }
  for f in /tmp/b$i/*-$N.json; do cp $f $R/$(basename $f .json)-run$i.json; done
done
python3 bench/collectives.py table $R/*-run*.json | tee $R/table-$N.md
stamp example
TOK=$([ $QUICK = 1 ] && echo 1024 || echo 4096)
timeout 120 mpiexec -n $N python3 examples/tensor_parallel_mlp.py --backend cuda --tokens $TOK --width $TOK > $R/mlp-$N.log 2>&1
echo "example rc $?"; grep '^{' $R/mlp-$N.log || tail -20 $R/mlp-$N.log
stamp faults
for c in late disagree exit; do
  mkdir -p /tmp/f$c
  timeout 60 mpiexec -disable-auto-cleanup -n $N python3 -m tests.collectives.rank_faults --backend cuda --case $c --timeout 5 --reports /tmp/f$c > /tmp/f$c.log 2>&1
  echo "fault $c rc $?"; cat /tmp/f$c/*.json 2>/dev/null; echo; [ -z "$(ls /tmp/f$c)" ] && tail -5 /tmp/f$c.log
done 2>&1 | tee $R/faults-$N.log
stamp done
