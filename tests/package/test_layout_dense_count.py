"""Layout.dense_count: elem_count when the layout reads buffer[:elem_count] in order, else -1.
The CPU hot path takes the whole buffer on `dense_count == buffer size`, so it must hold
exactly for the layouts whose element offsets are 0, 1, 2, ... (checked against offsets
computed from shape, stride and start offset, element by element)."""

from __future__ import annotations

import itertools

from hypothesis import given, strategies as st

from runtime.layout import Layout


def offsets(layout: Layout) -> list[int]:
    return [
        layout.start_offset + sum(i * s for i, s in zip(index, layout.stride))
        for index in itertools.product(*(range(d) for d in layout.shape))
    ]


layouts = st.integers(0, 3).flatmap(
    lambda rank: st.builds(
        Layout,
        st.tuples(*[st.integers(0, 4)] * rank),
        st.tuples(*[st.integers(0, 12)] * rank),
        st.integers(0, 3),
    )
)


@given(layouts)
def test_dense_count_is_elem_count_exactly_when_offsets_run_from_zero(layout):
    assert layout.dense_count in (layout.elem_count, -1)
    if layout.elem_count == 0:
        return  # an empty view reads nothing: either answer is right
    in_order = offsets(layout) == list(range(layout.elem_count))
    assert (layout.dense_count == layout.elem_count) == in_order


@given(st.lists(st.integers(1, 4), max_size=3), st.integers(0, 3))
def test_contiguous_layouts(shape, offset):
    layout = Layout.contiguous(shape, start_offset=offset)
    assert layout.dense_count == (layout.elem_count if offset == 0 else -1)
