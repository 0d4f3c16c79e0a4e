"""A built cuDNN plan run with only its addresses swapped: the hot path of runtime/gpu/cudnn.py.

cudnn-frontend 1.28's `pygraph.execute` takes a dict of tensors to buffers and, on every
call, maps the keys to uids, describes each operand again (dims, strides, dtype, a native
pack built per call), looks the plan's place in the backend's list up and only then hands
the backend an array of device addresses. What the backend reads is that array (one
address per operand, in ascending uid order), the workspace address, the handle and the
plan's index in its own list: the lowered graph's `_execute_with_raw_ptrs`, which
`execute` itself ends in. `direct_run` works all of that out once per plan, so that a call
writes its addresses into a kept array and makes that one call.

Those are the frontend's own internal calls (pyproject pins nvidia-cudnn-frontend to 1.28.x).
Where one is missing or answers otherwise (another frontend, a graph run by one of the
frontend's Python engines, an operand set that is not exactly the plan's tensors),
`direct_run` answers None and the caller keeps `execute`."""

from __future__ import annotations

import ctypes
import threading
from typing import Any


class DirectRun:
    """A plan's execution with the addresses as the only per-call input. One address array
    per plan, written under a lock, so two threads running the same plan do not mix their
    addresses."""

    __slots__ = ("_array", "_address", "_count", "_index", "_lock", "_run", "_slots")

    def __init__(self, run: Any, slots: tuple[int, ...], index: int) -> None:
        self._run = run
        self._slots = slots  # the backend's operand i is the caller's address slots[i]
        self._count = len(slots)
        self._array = (ctypes.c_void_p * len(slots))()
        self._address = ctypes.addressof(self._array)
        self._index = index  # the plan in the backend's list; -1: its selected plan
        self._lock = threading.Lock()

    def __call__(self, addresses: tuple[int, ...], workspace: int, handle: int) -> None:
        array = self._array
        with self._lock:
            for i, slot in enumerate(self._slots):
                array[i] = addresses[slot]
            self._run(self._address, self._count, workspace, handle, self._index)


def direct_run(graph: Any, uids: tuple[int, ...], index: int | None) -> DirectRun | None:
    """The direct execution of `graph`'s selected plan (index None) or of its plan at `index`,
    with the caller's addresses in the order of `uids`; None where the frontend does not let
    it be worked out (the caller then keeps `execute`)."""
    try:
        lowered = graph._lowered_graph
        run = lowered._execute_with_raw_ptrs
        backend_index = _backend_index(graph, index)
        order = graph._variant_pack_uids()
    except Exception:  # noqa: BLE001  (another frontend's internals: keep its public execute)
        return None
    if backend_index is None or not order or sorted(order) != sorted(uids) or len(set(uids)) != len(uids):
        return None
    return DirectRun(run, tuple(uids.index(uid) for uid in order), backend_index)


def _backend_index(graph: Any, index: int | None) -> int | None:
    """The plan's index in the backend's list as `execute` / `execute_plan_at_index` pass it
    (-1: the backend's selected plan), or None for a plan one of the frontend's Python
    engines runs."""
    plans = graph._plans
    if index is None:
        if not plans:  # a deserialized graph: the backend's own selection
            return -1
        if graph.selected_engine is not None:
            return None
        position = graph._plan_index
    elif not graph._planning_done:  # a deserialized graph: the index is the backend's
        return index
    else:
        position = graph._check_plan_index(index)
        graph._reject_if_barred(position)
        if graph._engine_for(plans[position]) is not None:
            return None
    cpp_index = graph._materialize_backend_plan(position).cpp_index
    return -1 if cpp_index is None else int(cpp_index)
