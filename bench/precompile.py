"""Fill the runtime's compiled-kernel cache (runtime/gpu/compile.py's KernelCache) for this
machine's first GPU, many compiles at once, so that a device call's benchmarks and tests
find their kernels compiled instead of compiling them one after another:

    python3 -m bench.precompile [--backend cuda] [--jobs 14] [--explore-columns] [--no-sources] [--arch sm_90]

Every hip/*.hip source as the runtime compiles it, and with --explore-columns the sources of
`bench/gpu.py --explore columns` first (hip/reduce.hip under -D switches).
A process that wants a kernel being compiled here waits for it (the cache's lock per key).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import importlib
import multiprocessing
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _compile(backend: str, text: str, name: str, arch: str, key: str) -> tuple[str, float]:
    from runtime.gpu.compile import KernelCache, compile_for

    start = time.perf_counter()
    KernelCache(backend).get_or_compile(key, lambda: compile_for(backend, text, name, arch))
    return name, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="cuda", choices=("cuda", "rocm"))
    parser.add_argument("--jobs", type=int, default=14)
    parser.add_argument("--explore-columns", action="store_true", help="--explore columns' reduce.hip variants")
    parser.add_argument("--no-sources", action="store_true", help="only the variants")
    parser.add_argument("--arch", help="the target (default: the first GPU's)")
    args = parser.parse_args(argv)

    from runtime.gpu.compile import HIP_DIR, cache_key

    rt = importlib.import_module(f"runtime.{args.backend}")._rt
    arch, version = args.arch or rt.driver.arch(0), rt.driver.compiler_version()
    wanted: list[tuple[str, str]] = []  # (name, text)
    if args.explore_columns:
        from bench.reductions import column_variant_sources

        wanted += [("reduce.hip", text) for text in column_variant_sources()]
    if not args.no_sources:
        paths = sorted(HIP_DIR.glob("*.hip"), key=lambda p: -p.stat().st_size)
        wanted += [(p.name, p.read_text(encoding="utf-8")) for p in paths]
    seen: set[str] = set()
    jobs = []
    for name, text in wanted:
        key = cache_key(rt.name, text, arch, version)
        if key not in seen:
            seen.add(key)
            jobs.append((name, text, key))
    start = time.perf_counter()
    context = multiprocessing.get_context("spawn")  # each worker loads the compiler itself
    with concurrent.futures.ProcessPoolExecutor(args.jobs, mp_context=context) as pool:
        futures = [pool.submit(_compile, args.backend, text, name, arch, key) for name, text, key in jobs]
        for future in concurrent.futures.as_completed(futures):
            try:
                name, seconds = future.result()
                print(f"precompile: {name} {seconds:.1f} s", flush=True)
            except Exception as exc:  # noqa: BLE001  (the process that needs it compiles it and reports)
                print(f"precompile: failed: {type(exc).__name__}: {exc}", flush=True)
    print(f"precompile: {len(jobs)} sources for {arch} in {time.perf_counter() - start:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
