"""Parameter records of the storage ops, as Candle's (`ParamsConv1D`, ...)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple


@dataclass(frozen=True, slots=True)
class ConvParams1D:
    b_size: int
    l_in: int
    c_out: int
    c_in: int
    k_size: int
    padding: int = 0
    stride: int = 1
    dilation: int = 1

    def l_out(self) -> int:
        return (self.l_in + 2 * self.padding - self.dilation * (self.k_size - 1) - 1) // self.stride + 1


@dataclass(frozen=True, slots=True)
class ConvTransposeParams1D:
    b_size: int
    l_in: int
    c_out: int
    c_in: int
    k_size: int
    padding: int = 0
    output_padding: int = 0
    stride: int = 1
    dilation: int = 1

    def l_out(self) -> int:
        return (
            (self.l_in - 1) * self.stride
            - 2 * self.padding
            + self.dilation * (self.k_size - 1)
            + self.output_padding
            + 1
        )


@dataclass(frozen=True, slots=True)
class ConvParams2D:
    b_size: int
    i_h: int
    i_w: int
    k_h: int
    k_w: int
    c_out: int
    c_in: int
    padding: int = 0
    stride: int = 1
    dilation: int = 1

    def out_h(self) -> int:
        return (self.i_h + 2 * self.padding - self.dilation * (self.k_h - 1) - 1) // self.stride + 1

    def out_w(self) -> int:
        return (self.i_w + 2 * self.padding - self.dilation * (self.k_w - 1) - 1) // self.stride + 1


@dataclass(frozen=True, slots=True)
class ConvTransposeParams2D:
    b_size: int
    i_h: int
    i_w: int
    k_h: int
    k_w: int
    c_out: int
    c_in: int
    padding: int = 0
    output_padding: int = 0
    stride: int = 1
    dilation: int = 1

    def out_h(self) -> int:
        return (
            (self.i_h - 1) * self.stride - 2 * self.padding + self.dilation * (self.k_h - 1) + self.output_padding + 1
        )

    def out_w(self) -> int:
        return (
            (self.i_w - 1) * self.stride - 2 * self.padding + self.dilation * (self.k_w - 1) + self.output_padding + 1
        )


class MatmulDims(NamedTuple):
    """Batch, rows of lhs, columns of rhs, and the contracted size: (b, m, n, k)."""

    b: int
    m: int
    n: int
    k: int


class Kernel(NamedTuple):
    """An elementwise or reduction op as one backend runs it: per-dtype functions.

    Generated from the registry's expressions; `result` is the dtype of the output
    where it differs from the input's (u8 for comparisons, u32 for argmin/argmax).
    """

    op: str
    by_dtype: Mapping[Any, Callable[..., Any]]
    result: Any = None
