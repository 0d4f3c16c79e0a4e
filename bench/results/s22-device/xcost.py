# ruff: noqa: E402, E501, E731  (a record of what ran on the device: C sources in strings, kept as run)
"""What x's loads after the wait cost q4_0: the shipped kernel beside variants whose x reads
touch less of L2 (wrong results; timing only)."""

import sys

sys.path.insert(0, ".")
import bench.gpu_quant as gq

old = "xv[g] = active ? *reinterpret_cast<const float4*>(xr + (c0 + t) * F::kElems + G::group_at(j0, g))"
part = lambda m, s: {
    old: f"xv[g] = active ? *reinterpret_cast<const float4*>(xr + (((c0 + t) & {m}) + {m + 1} * (blockIdx.x & {s})) * F::kElems + G::group_at(j0, g))"
}
gq.EXPLORE = {
    "q4_0": [
        gq.EXPLORE["q4_0"][0],
        (
            "x not loaded: constants (an upper bound)",
            256,
            16,
            {old: "xv[g] = active ? make_float4((float)t, (float)g, 1.0f, 2.0f)"},
        ),
        ("x from a half per block (the rest from L1)", 256, 16, part(63, 1)),
        ("x from a quarter per block", 256, 16, part(31, 3)),
        ("x from an eighth per block", 256, 16, part(15, 7)),
    ]
}
rows = {}
for _rep in range(2):
    gq.explore_quant(rows, formats=("q4_0",), profile=False, echo=True)
