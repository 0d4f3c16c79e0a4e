"""q4_0 with clusters: what the cluster launch costs by itself (dims 4, no sharing), beside
the sharing kernel and none."""

import sys

sys.path.insert(0, ".")
import bench.gpu_quant as gq

ex = gq.EXPLORE["q4_0"]
gq.EXPLORE = {
    "q4_0": [
        ex[0],
        ex[1],
        (
            "clusters of 4, x not shared (each block loads all of it)",
            256,
            16,
            {"constexpr int CL = B ? F::kFastCluster : 1;": "constexpr int CL = 1;"},
        ),
        (
            "clusters of 2, x not shared",
            256,
            16,
            {
                "constexpr int CL = B ? F::kFastCluster : 1;": "constexpr int CL = 1;",
                "static constexpr int kFastCluster = OPGEN_QMATVEC_CLUSTER;": "static constexpr int kFastCluster = 2;",
            },
        ),
    ]
}
rows = {}
for _rep in range(2):
    gq.explore_quant(rows, formats=("q4_0",), profile=False, echo=True)
