"""Layout: how a flat storage buffer is viewed as an n-d tensor (Candle's `Layout`).

Strides and the start offset count elements, not bytes. A stride of 0 broadcasts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

Shape = tuple[int, ...]


def contiguous_strides(shape: Shape) -> tuple[int, ...]:
    strides, acc = [], 1
    for size in reversed(shape):
        strides.append(acc)
        acc *= size
    return tuple(reversed(strides))


@dataclass(frozen=True, slots=True)
class Layout:
    shape: Shape
    stride: tuple[int, ...]
    start_offset: int = 0
    # Derived once: the hot path of every op asks for these.
    is_contiguous: bool = field(init=False, repr=False, compare=False)
    elem_count: int = field(init=False, repr=False, compare=False)
    # elem_count when the layout reads buffer[:elem_count] in order (contiguous, offset 0),
    # else -1: one comparison with a buffer's size tells an op it may take the whole buffer.
    dense_count: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if len(self.shape) != len(self.stride):
            raise ValueError(f"layout: shape {self.shape} and stride {self.stride} differ in rank")
        if any(d < 0 for d in self.shape) or self.start_offset < 0:
            raise ValueError(f"layout: negative size or offset in {self.shape} @ {self.start_offset}")
        object.__setattr__(self, "elem_count", math.prod(self.shape))
        contiguous = all(
            st == cs for d, st, cs in zip(self.shape, self.stride, contiguous_strides(self.shape)) if d != 1
        )
        object.__setattr__(self, "is_contiguous", contiguous)
        object.__setattr__(self, "dense_count", self.elem_count if contiguous and not self.start_offset else -1)

    @classmethod
    def contiguous(cls, shape: Shape | list[int], start_offset: int = 0) -> Layout:
        shape = tuple(int(d) for d in shape)
        return cls(shape, contiguous_strides(shape), start_offset)

    @property
    def rank(self) -> int:
        return len(self.shape)

    def max_offset(self) -> int:
        """One past the largest buffer index this layout reads (0 for an empty view)."""
        if self.elem_count == 0:
            return self.start_offset
        return self.start_offset + sum((d - 1) * s for d, s in zip(self.shape, self.stride)) + 1

    def transpose(self, dim0: int, dim1: int) -> Layout:
        shape, stride = list(self.shape), list(self.stride)
        shape[dim0], shape[dim1] = shape[dim1], shape[dim0]
        stride[dim0], stride[dim1] = stride[dim1], stride[dim0]
        return Layout(tuple(shape), tuple(stride), self.start_offset)

    def permute(self, dims: tuple[int, ...]) -> Layout:
        if sorted(dims) != list(range(self.rank)):
            raise ValueError(f"layout: {dims} is not a permutation of {self.rank} dims")
        return Layout(tuple(self.shape[d] for d in dims), tuple(self.stride[d] for d in dims), self.start_offset)

    def narrow(self, dim: int, start: int, length: int) -> Layout:
        if start < 0 or length < 0 or start + length > self.shape[dim]:
            raise ValueError(f"layout: narrow({dim}, {start}, {length}) out of {self.shape}")
        shape = self.shape[:dim] + (length,) + self.shape[dim + 1 :]
        return Layout(shape, self.stride, self.start_offset + start * self.stride[dim])

    def broadcast_as(self, shape: Shape | list[int]) -> Layout:
        """Numpy broadcasting rules; broadcast dims get stride 0."""
        shape = tuple(int(d) for d in shape)
        extra = len(shape) - self.rank
        if extra < 0:
            raise ValueError(f"layout: cannot broadcast {self.shape} to {shape}")
        stride = [0] * extra
        for size, (d, st) in zip(shape[extra:], zip(self.shape, self.stride)):
            if d == size:
                stride.append(st)
            elif d == 1:
                stride.append(0)
            else:
                raise ValueError(f"layout: cannot broadcast {self.shape} to {shape}")
        return Layout(shape, tuple(stride), self.start_offset)
