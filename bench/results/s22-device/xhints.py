# ruff: noqa: E402, E501, E731  (a record of what ran on the device: C sources in strings, kept as run)
"""q4_0: x's loads after the wait with other cache paths (the same results)."""

import sys

sys.path.insert(0, ".")
import bench.gpu_quant as gq

old = "xv[g] = active ? *reinterpret_cast<const float4*>(xr + (c0 + t) * F::kElems + G::group_at(j0, g))"
addr = "xr + (c0 + t) * F::kElems + G::group_at(j0, g)"


def asm(op):
    return {old: f"xv[g] = active ? qmv_load4_{op.replace('.', '_').replace(':', '_')}({addr})"}, op


HELP = r"""
#define QMV_LOAD4(NAME, OP) __device__ __forceinline__ float4 NAME(const float* p) { float4 v; asm volatile(OP " {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p)); return v; }
QMV_LOAD4(qmv_load4_nc, "ld.global.nc.v4.f32")
QMV_LOAD4(qmv_load4_nc_na, "ld.global.nc.L1::no_allocate.v4.f32")
QMV_LOAD4(qmv_load4_cg, "ld.global.cg.v4.f32")
QMV_LOAD4(qmv_load4_ca_el, "ld.global.L1::evict_last.v4.f32")
"""


def v(name, fn):
    return (name, 256, 16, {old: f"xv[g] = active ? {fn}({addr})", "namespace {\n": HELP + "namespace {\n"})


gq.EXPLORE = {
    "q4_0": [
        gq.EXPLORE["q4_0"][0],
        v("x by ld.global.nc (read-only path)", "qmv_load4_nc"),
        v("x by ld.global.nc.L1::no_allocate", "qmv_load4_nc_na"),
        v("x by ld.global.cg (L2 only)", "qmv_load4_cg"),
        v("x by ld.global.L1::evict_last", "qmv_load4_ca_el"),
    ]
}
rows = {}
for _rep in range(2):
    gq.explore_quant(rows, formats=("q4_0",), profile=False, echo=True)
