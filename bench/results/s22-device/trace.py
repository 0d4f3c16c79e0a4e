# ruff: noqa: E402, E501, E731  (a record of what ran on the device: C sources in strings, kept as run)
"""Where a q4_0 product's time goes: the shipped kernel with timestamps (globaltimer, clock64)
at its points, per block, over a graph of LAUNCHES products (16 weights in turn, PDL), as
bench/gpu_quant.py times it. Each launch reads x at its own 16-byte offset, so a record says
which product it belongs to."""

import ctypes
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, ".")
from cuda.bindings import driver as cu

import bench.gpu_quant as gq

ok = gq._ok
MODE = sys.argv[3] if len(sys.argv) > 3 else "all"
TRACE = r"""
__device__ unsigned long long qmv_trace[1024 * 256 * 12];
__device__ __forceinline__ unsigned long long qmv_gt0() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
#define QMV_MODE_@MODE@
#if defined(QMV_MODE_all)
#define qmv_gt qmv_gt0
#else
__device__ __forceinline__ unsigned long long qmv_gt() { return 0ull; }
#endif
#if defined(QMV_MODE_none)
#define MODE_END() 0ull
#else
#define MODE_END() qmv_gt0()
#endif
#if defined(QMV_MODE_none)
__device__ __forceinline__ unsigned long long qmv_ck() { return 0ull; }
#else
__device__ __forceinline__ unsigned long long qmv_ck() { return clock64(); }
#endif
""".replace("@MODE@", MODE)
src = Path("hip/quantized.hip").read_text()


def sub(old, new, count=1):
    global src
    assert src.count(old) >= 1, old
    src = src.replace(old, new, count)


sub("namespace {\n", TRACE + "namespace {\n")
sub(
    """    constexpr bool B = OPGEN_QMV_SM90 && F::kFastBulk;  // the slab by bulk copies (sm_90; q4_0, q4_1)
""",
    """    constexpr bool B = OPGEN_QMV_SM90 && F::kFastBulk;  // the slab by bulk copies (sm_90; q4_0, q4_1)
    __shared__ unsigned long long qts[10];
    if (threadIdx.x == 0) { qts[0] = MODE_END(); qts[5] = qmv_ck(); }
""",
)
sub(
    """        wait_for_predecessor();
    }
#endif
    for (size_t item""",
    """        wait_for_predecessor();
        if (threadIdx.x == 0) { qts[1] = qmv_gt(); qts[6] = qmv_ck(); }
    }
#endif
    for (size_t item""",
)
sub(
    """            quantize_x<NG, SPLIT>(xv, D, sum_y, sigma);  // every lane: the max is shuffled
""",
    """            quantize_x<NG, SPLIT>(xv, D, sum_y, sigma);  // every lane: the max is shuffled
            if (threadIdx.x == 0) { qts[2] = qmv_gt(); qts[7] = qmv_ck(); }
""",
)
sub(
    """                    if (active) mbar_wait(&landed[s], parity);  // this stage's rows have landed
""",
    """                    if (active) mbar_wait(&landed[s], parity);  // this stage's rows have landed
                    if (s == S - 1) { if (threadIdx.x == 0) { qts[3] = qmv_gt(); qts[8] = qmv_ck(); } }
""",
)
sub(
    """            y[r * n + n0 + threadIdx.x] = sum;
        }
    }
}""",
    """            y[r * n + n0 + threadIdx.x] = sum;
        }
    }
    if (threadIdx.x == 0) {
        qts[4] = MODE_END(); qts[9] = qmv_ck();
        unsigned int smid; asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
        const unsigned long long slot = ((((unsigned long long)x) >> 4) & 1023ull) * 256ull + (blockIdx.x & 255u);
        unsigned long long* r = qmv_trace + 12ull * slot;
        r[0] = (unsigned long long)x; r[1] = blockIdx.x | ((unsigned long long)smid << 32);
        for (int i = 0; i < 10; i++) r[2 + i] = qts[i];
    }
}""",
)
sub("F::kFastRows >= 16 ? 2 :", "F::kFastRows >= 16 ? 3 :")  # the shipped build's 3 blocks/SM, kept under the tracing
tmp = Path(tempfile.mkdtemp()) / "quantized_trace.hip"
tmp.write_text(src)

from runtime.gpu import quant as gpu_quant

rt = __import__("runtime.cuda", fromlist=["_rt"])._rt
N = K = 4096
L = gq.LAUNCHES
rng = np.random.default_rng(3)
xs = rng.standard_normal(K + 4 * L).astype(np.float32)
x_buf, y = rt.from_host(0, xs), rt.alloc(0, N, np.dtype(np.float32))
q = gpu_quant.quantize(rt, 0, rng.standard_normal(N * K).astype(np.float32), "q4_0")
data = gpu_quant.q_data(rt, q)
weights = [q] + [gpu_quant.qstorage_from_bytes(rt, 0, data, "q4_0") for _ in range(15)]
stream = rt.stream(0)
types = (ctypes.c_void_p,) * 3 + (ctypes.c_size_t,) * 3
grid = N // 16
distinct = int(sys.argv[1]) if len(sys.argv) > 1 else 16


def run(i):
    rt.launch(
        str(tmp),
        "qmatvec_q4_0",
        grid,
        256,
        stream,
        (weights[i % distinct].buf.ptr, x_buf.ptr + 16 * i, y.ptr, N, K, 1),
        types,
    )


per = gq.graph_seconds(run, stream.handle)
print(f"traced kernel, {distinct} weights: {per * 1e6:.2f} us per product in a graph", flush=True)
module = rt._modules[(0, str(tmp))]
err, tptr, tsize = cu.cuModuleGetGlobal(module, b"qmv_trace")
assert int(err) == 0, err
# one more graph replay, traced from a zeroed slot
rt.synchronize(0)
# capture and replay once
ok(cu.cuStreamBeginCapture(stream.handle, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL))
for i in range(L):
    run(i)
graph = ok(cu.cuStreamEndCapture(stream.handle))
exe = ok(cu.cuGraphInstantiate(graph, 0))
ok(cu.cuGraphLaunch(exe, stream.handle))
rt.synchronize(0)
ok(cu.cuMemsetD32(tptr, 0, tsize // 4))
rt.synchronize(0)
ok(cu.cuGraphLaunch(exe, stream.handle))
rt.synchronize(0)
host = np.zeros(1024 * 256 * 12, np.uint64)
ok(cu.cuMemcpyDtoH(host.ctypes.data, tptr, host.nbytes))
rec = host.reshape(-1, 12)
rec = rec[rec[:, 0] != 0].astype(np.int64)
n = len(rec)
prod = (rec[:, 0] - int(x_buf.ptr)) // 16
np.save(sys.argv[2] if len(sys.argv) > 2 else "/tmp/trace.npy", np.concatenate([prod[:, None], rec], axis=1))
print("records", n, "products", len(set(prod.tolist())))
tg = rec[:, 2:7]
tc = rec[:, 7:12]
sm = rec[:, 1] >> 32
ends = {p: tg[prod == p, 4].max() for p in range(L)}
starts = {p: tg[prod == p, 0].min() for p in range(L)}
rel = {p: tg[prod == p, 1].min() for p in range(L)}
ps = range(20, L - 5)
per_product = [ends[p] - ends[p - 1] for p in ps]
print("globaltimer distinct values in one record set (resolution check):", len(np.unique(tg[:, 4] % 1000)))
print(f"product end to end: median {statistics.median(per_product)} ns")
print(f"prev end -> first wait release: median {statistics.median([rel[p] - ends[p - 1] for p in ps])} ns")
print(
    f"prev end -> last wait release: median {statistics.median([tg[prod == p, 1].max() - ends[p - 1] for p in ps])} ns"
)
print(f"first block start relative to prev end: median {statistics.median([starts[p] - ends[p - 1] for p in ps])} ns")
early = []
late = []
for p in ps:
    m = prod == p
    e = tg[m, 0] < ends[p - 1]
    early.append(int(e.sum()))
    lt = tg[m][~e]
    late.append(statistics.median((lt[:, 0] - ends[p - 1]).tolist()) if len(lt) else 0)
print(
    f"blocks started before prev end: median {statistics.median(early)} of {grid}; late blocks start after prev end: median {statistics.median(late)} ns"
)
for name, a, b in (
    ("wait->x quantized", 1, 2),
    ("x quantized->weights landed (thread 0)", 2, 3),
    ("landed->end", 3, 4),
    ("start->wait release", 0, 1),
    ("start->end", 0, 4),
):
    d_g = [int(v) for p in ps for v in (tg[prod == p, b] - tg[prod == p, a])]
    d_c = [int(v) for p in ps for v in (tc[prod == p, b] - tc[prod == p, a])]
    q = lambda v, f: sorted(v)[int(f * (len(v) - 1))]
    print(
        f"{name}: globaltimer ns p10/50/90 {q(d_g, 0.1)}/{q(d_g, 0.5)}/{q(d_g, 0.9)}; clocks p10/50/90 {q(d_c, 0.1)}/{q(d_c, 0.5)}/{q(d_c, 0.9)}"
    )
# the last block to end in each product: what was it doing
lastinfo = []
for p in ps:
    m = np.where(prod == p)[0]
    i = m[np.argmax(tg[m, 4])]
    lastinfo.append(
        (
            tg[i, 0] - ends[p - 1],
            tg[i, 1] - ends[p - 1],
            tg[i, 2] - ends[p - 1],
            tg[i, 3] - ends[p - 1],
            tg[i, 4] - ends[p - 1],
        )
    )
arr = np.array(lastinfo)
print(
    "the last block of a product, times after prev end (median): start / wait / x / landed / end =",
    [int(v) for v in np.median(arr, axis=0)],
)
# blocks per SM per product
bps = [np.bincount(sm[prod == p], minlength=132).max() for p in ps]
print("max blocks of one product on an SM: median", statistics.median(bps))
