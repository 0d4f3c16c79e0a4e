"""q4_0 per product against n: is the shipped kernel bound by 256 items on 132 SMs?"""

import sys

sys.path.insert(0, ".")
import bench.gpu_quant as gq

rows = {}
rows["quant: torch device-to-device copy (GB/s)"] = gq.copy_bandwidth()
print("copy", rows["quant: torch device-to-device copy (GB/s)"], flush=True)
for rep in range(2):
    for n in (int(a) for a in sys.argv[1].split(",")):
        gq.N = n
        r = {"quant: torch device-to-device copy (GB/s)": rows["quant: torch device-to-device copy (GB/s)"]}
        gq.explore_quant(r, formats=("q4_0",), profile=False, numbers=[0])
        for key, v in r.items():
            if key.startswith("explore"):
                print(f"n={n} rep={rep}: {v}", flush=True)
