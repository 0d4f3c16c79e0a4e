"""Import cost of the package, each figure the median of fresh processes (no GPU needed).

    python bench/import_time.py [--runs 7] [--root REPO]

Scenarios: `import runtime.gpu.launch` (a GPU runtime module alone), `import
generated.kernel_facts`, `import generated`, and the first op on cpu (import, Device.parse,
storage_from_slice, the op, to_numpy: affine, which takes no kernel table, and exp, which
takes generated.kernels_numpy); for each, the seconds and which of the backend runtime
modules and generated kernel tables were loaded. --root measures another checkout (run from
its root, this interpreter). Figures: docs/design.md, "Import cost"."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

SCENARIOS = {
    "import runtime.gpu.launch": "import runtime.gpu.launch",
    "import generated.kernel_facts": "import generated.kernel_facts",
    "import generated": "import generated",
    "first op on cpu (affine)": (
        "import numpy as np\n"
        "import generated as g\n"
        "cpu = g.Device.parse('cpu')\n"
        "x = cpu.storage_from_slice(np.arange(6, dtype=np.float32))\n"
        "g.to_numpy(x.affine(g.Layout.contiguous((6,)), 2.0, 1.0), g.Layout.contiguous((6,)))"
    ),
    "first op on cpu (exp)": (
        "import numpy as np\n"
        "import generated as g\n"
        "cpu = g.Device.parse('cpu')\n"
        "x = cpu.storage_from_slice(np.arange(6, dtype=np.float32))\n"
        "g.to_numpy(x.unary(g.UnaryOp.EXP, g.Layout.contiguous((6,))), g.Layout.contiguous((6,)))"
    ),
}
WATCHED = ("runtime.cpu", "runtime.cuda", "runtime.rocm", "generated.kernels_hip", "generated.kernels_numpy")

PROBE = """
import sys, time, json
start = time.perf_counter()
exec(compile({code!r}, "<scenario>", "exec"))
seconds = time.perf_counter() - start
print(json.dumps([seconds, [m for m in {watched!r} if m in sys.modules]]))
"""


def measure(root: Path, code: str, runs: int) -> tuple[float, list[str]]:
    times, loaded = [], []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", PROBE.format(code=code, watched=WATCHED)],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        )
        seconds, loaded = json.loads(out.stdout.strip().splitlines()[-1])
        times.append(seconds)
    return statistics.median(times), loaded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args()
    for name, code in SCENARIOS.items():
        seconds, loaded = measure(args.root, code, args.runs)
        print(f"{name:32} {seconds:6.3f} s   loads: {', '.join(loaded) or '-'}")


if __name__ == "__main__":
    main()
