"""Warp width: a kernel in hip/ may not hard-code 32 as the width of a warp. NVIDIA's warps
are 32 lanes, AMD's CDNA wavefronts 64 (RDNA: 32 or 64); hip/compat.h is the one place that
knows (warpSize, OPGEN_WARP_SIZE, OPGEN_LANE_GROUP, opgen::lane_mask, the shuffles).

Outside compat.h, these are refused, except in code only NVIDIA compiles (an `#if` on
OPGEN_CUDA, the `#else` of OPGEN_HIP, or a macro defined to 1 only under such an `#if`, as
attention.hip's OPGEN_FLASH_MMA and quantized.hip's OPGEN_QMATVEC_DP4A):
- warp intrinsics called directly (__shfl*, __ballot*, __any*, __all*, __activemask,
  __syncwarp, __match_*, __reduce_*_sync): they take a 32-bit lane mask and a width;
- lane and warp indices from a literal width: threadIdx.x % 32, tid / 32, lane & 31,
  tid >> 5, blockDim.x / 32;
- lane counts compared with 32 (the lane-mask idiom `active >= 32u ? ... : (1u << active) - 1`);
- block sizes from a literal warp width times a warp count (32 * ..._WARPS)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

HIP = Path(__file__).resolve().parents[2] / "hip"
COMPAT = "compat.h"

RULES = {
    "warp intrinsic": re.compile(
        r"\b__(shfl\w*|ballot\w*|any(_sync)?|all(_sync)?|activemask|syncwarp|match_\w+"
        r"|reduce_\w+_sync)\s*\("
    ),
    "literal warp width in a lane index": re.compile(
        r"\b(threadIdx\.[xyz]|tid|lane|blockDim\.[xyz])\s*(%|/)\s*32u?\b"
        r"|\b(threadIdx\.[xyz]|tid|lane)\s*&\s*(31u?|0x1[fF]u?)\b|\b(threadIdx\.[xyz]|tid)\s*>>\s*5\b"
    ),
    "lane count compared with 32": re.compile(r"\b(active|lanes|nlanes|width)\s*(>=|<=|<|>|==)\s*32u?\b"),
    "threads from a literal warp width": re.compile(r"\b32u?\s*\*\s*\w*WARPS\b|\b\w*WARPS\s*\*\s*32u?\b"),
}


@dataclass(frozen=True)
class Finding:
    file: str
    line: int
    rule: str
    text: str

    def __str__(self) -> str:
        return f"hip/{self.file}:{self.line}: {self.rule}: {self.text.strip()}"


_NVIDIA_CONDITION = re.compile(r"^\s*(OPGEN_CUDA\b(\s*&&.*)?|!\s*OPGEN_HIP\b(\s*&&.*)?)\s*$")


def _strip_comment(line: str) -> str:
    return line.split("//", 1)[0]


def findings(name: str, text: str) -> list[Finding]:
    """The rule violations of one source, outside code that only NVIDIA compiles."""
    nvidia_macros: set[str] = set()
    stack: list[list] = []  # [condition, in_else] per open #if
    out = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = _strip_comment(raw)
        directive = re.match(r"^\s*#\s*(\w+)\s*(.*)$", line)
        if directive:
            keyword, rest = directive.group(1), directive.group(2).strip()
            if keyword in ("if", "ifdef", "ifndef"):
                stack.append([rest if keyword == "if" else f"{keyword} {rest}", False])
            elif keyword == "elif" and stack:
                stack[-1] = [rest, False]
            elif keyword == "else" and stack:
                stack[-1][1] = True
            elif keyword == "endif" and stack:
                stack.pop()
            elif keyword == "define":
                parts = rest.split(None, 1)
                if len(parts) == 2 and parts[1].strip() == "1" and _nvidia_only(stack, nvidia_macros):
                    nvidia_macros.add(parts[0])
            if keyword != "define":
                continue
        if _nvidia_only(stack, nvidia_macros):
            continue
        for rule, pattern in RULES.items():
            if pattern.search(line):
                out.append(Finding(name, number, rule, raw))
    return out


def _nvidia_only(stack: list[list], nvidia_macros: set[str]) -> bool:
    for condition, in_else in stack:
        if not in_else and (_NVIDIA_CONDITION.match(condition) or condition.strip() in nvidia_macros):
            return True
        if in_else and condition.strip() == "OPGEN_HIP":
            return True
    return False


def test_no_kernel_hard_codes_the_warp_width():
    sources = sorted(p for p in HIP.iterdir() if p.suffix in (".hip", ".h") and p.name != COMPAT)
    assert len(sources) >= 10, "the kernel sources moved?"
    found = [f for p in sources for f in findings(p.name, p.read_text(encoding="utf-8"))]
    assert not found, "warp width hard-coded outside hip/compat.h:\n" + "\n".join(map(str, found))


def test_compat_h_defines_the_width_vocabulary():
    text = (HIP / COMPAT).read_text(encoding="utf-8")
    for name in ("OPGEN_WARP_SIZE", "OPGEN_LANE_GROUP", "lane_mask", "group_shfl_down", "__AMDGCN_WAVEFRONT_SIZE"):
        assert name in text, name


# The checker itself: what it must catch, and the NVIDIA-only code it must leave alone.
CAUGHT = [
    "const unsigned int lane = threadIdx.x % 32;",
    "const int warp = tid >> 5, lane = tid & 31;",
    "size_t teams = blockDim.x / 32;",
    "v += __shfl_down_sync(0xffffffffu, v, 16);",
    "if (__any_sync(0xffffffffu, grow)) x = 1;",
    "const unsigned int mask = active >= 32u ? 0xffffffffu : ((1u << active) - 1u);",
    "#define THREADS (32 * OPGEN_X_WARPS)",
    "v += __shfl_xor(v, 1);",
]


@pytest.mark.parametrize("code", CAUGHT)
def test_the_check_catches(code):
    assert findings("k.hip", f'#include "compat.h"\n{code}\n')


@pytest.mark.parametrize(
    "guard",
    [
        "#if OPGEN_CUDA && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800\n{code}\n#endif",
        "#if OPGEN_HIP\nint x;\n#else\n{code}\n#endif",
        "#if OPGEN_CUDA && __CUDA_ARCH__ >= 800\n#define FAST 1\n#else\n#define FAST 0\n#endif\n"
        "#if FAST\n{code}\n#endif",
    ],
)
@pytest.mark.parametrize("code", CAUGHT[:5])
def test_the_check_leaves_nvidia_only_code_alone(guard, code):
    assert not findings("k.hip", guard.format(code=code))


@pytest.mark.parametrize("code", CAUGHT[:5])
def test_the_check_sees_the_amd_branch(code):
    assert findings("k.hip", f"#if OPGEN_HIP\n{code}\n#else\nint x;\n#endif")
    assert findings("k.hip", f"#if OPGEN_CUDA\nint x;\n#else\n{code}\n#endif")
    # a macro that is 1 on AMD too is not NVIDIA-only
    assert findings("k.hip", f"#define FAST 1\n#if FAST\n{code}\n#endif")


# compat.h's compile-time width, as each compiler sees the target: CDNA is wave64, RDNA
# (by default) and NVIDIA 32. A wrong width fails the static_assert, so the compile fails.
WIDTHS = [
    ("rocm", "gfx90a", 64),
    ("rocm", "gfx942", 64),
    ("rocm", "gfx1030", 32),
    ("rocm", "gfx1100", 32),
    ("cuda", "sm_90", 32),
]
WIDTH_PROBE = """#include "compat.h"
static_assert(OPGEN_WARP_SIZE == {width}, "OPGEN_WARP_SIZE");
static_assert(OPGEN_LANE_GROUP == 32 && OPGEN_WARP_SIZE % OPGEN_LANE_GROUP == 0, "lane groups tile a warp");
extern "C" __global__ void k_width(float* x) {{ x[0] = (float)warpSize; }}
"""


@pytest.mark.parametrize("backend,target,width", WIDTHS, ids=[t for _, t, _ in WIDTHS])
def test_opgen_warp_size_is_the_targets_width(backend, target, width):
    from runtime.gpu import compile as gpu_compile

    missing = gpu_compile.rocm_target_unavailable(target) if backend == "rocm" else gpu_compile.nvrtc_unavailable()
    if missing:
        pytest.skip(f"{backend}: {missing}")
    compile_ = gpu_compile.compile_rocm if backend == "rocm" else gpu_compile.compile_cuda
    assert compile_(WIDTH_PROBE.format(width=width), "width.hip", target)
    with pytest.raises(Exception, match="OPGEN_WARP_SIZE"):
        compile_(WIDTH_PROBE.format(width=96), "width.hip", target)
