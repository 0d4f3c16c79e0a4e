"""runtime/gpu/cudnn.py without a GPU: a fake driver (memory in a bytearray) and a fake
`cudnn` module that records the graphs built and run. What is checked: which calls cuDNN
takes and with which tensors, addresses, stream and workspace; one graph per shape (built
on the first call, reused after); refused graphs fall back once and are not asked again;
and without cuDNN (not installed, no libcudnn, OPGEN_CUDNN=0) every call takes the paths
that were there before, with no error. The numbers themselves: tests/gpu/test_cudnn_gpu.py
on the H100."""

from __future__ import annotations

import ctypes
import json
import sys
import types
import warnings

import ml_dtypes
import numpy as np
import pytest

from generated import kernels_hip
from runtime.gpu import compile as gpu_compile, cudnn as gpu_cudnn, nn as gpu_nn
from runtime.gpu.errors import KernelCacheWarning
from runtime.gpu.runtime import GpuRuntime
from runtime.gpu.switches import Switches
from runtime.layout import Layout
from runtime.params import ConvParams1D, ConvParams2D, ConvTransposeParams2D

BF16 = np.dtype(ml_dtypes.bfloat16)


class Driver:
    """Memory is a bytearray (pointers are offsets into it); streams are ints; a BLAS whose
    gemms are recorded."""

    name = "fake"

    def __init__(self) -> None:
        self.memory = bytearray(1 << 20)
        self.top = 256
        self.gemms: list[tuple] = []

    def activate(self, ordinal):
        pass

    def stream(self, ordinal):
        return 7000 + ordinal

    def multiprocessors(self, ordinal):
        return 132

    def alloc(self, nbytes, stream):
        ptr, self.top = self.top, self.top + -(-nbytes // 256) * 256
        return ptr

    def free(self, ptr, stream):
        pass

    def upload(self, ptr, host, stream):
        self.memory[ptr : ptr + host.nbytes] = host.tobytes()

    def memset(self, ptr, nbytes, stream, byte=0):
        pass

    def blas_available(self):
        return True

    def gemm(self, ordinal, stream, dtype, *args, reduced=False):
        self.gemms.append((np.dtype(dtype), *args))


@pytest.fixture(autouse=True)
def plan_cache_directory(monkeypatch, tmp_path):
    """Every test's plan cache (and kernel cache) in a fresh directory of its own."""
    monkeypatch.setattr(gpu_compile, "CACHE_DIR", tmp_path)
    return tmp_path


class Tensor:
    uids = iter(range(1, 1 << 30))  # unique in the test process, as a graph's uids are in a graph

    def __init__(self, name, dim, stride, data_type):
        self.name, self.dim, self.stride, self.data_type, self.output = name, dim, stride, data_type, False
        self.uid = next(Tensor.uids)
        NAMES[self.uid] = name

    def get_uid(self):
        return self.uid

    def set_output(self, value):
        self.output = value
        return self

    def set_dim(self, dim):
        self.dim = dim
        return self

    def set_stride(self, stride):
        self.stride = stride
        return self

    def set_data_type(self, data_type):
        self.data_type = data_type
        return self


#: uid -> the name of its tensor (a deserialized graph's pack is keyed by uid)
NAMES: dict[int, str] = {}


class Graph:
    """cudnn.pygraph as runtime/gpu/cudnn.py calls it; every instance logs into FakeCudnn
    (deserialized ones into fake.loaded)."""

    def __init__(self, fake, **settings):
        self.fake, self.settings, self.nodes, self.steps, self.deselected = fake, settings, [], [], []
        self.selected: int | None = None
        self.tensors: list[Tensor] = []
        if settings.keys() != {"handle"}:
            fake.graphs.append(self)

    def serialize(self):
        """The graph's tensors and selected plan, as the frontend's list of byte values."""
        if self.fake.refuse_serialize:
            raise RuntimeError("GRAPH_NOT_SUPPORTED: serialization")
        text = json.dumps({"nodes": [n[0] for n in self.nodes], "selected": self.selected})
        return list(text.encode())

    def deserialize(self, handle, data):
        if self.fake.refuse_deserialize:
            raise RuntimeError("cudnnException: plan from another version")
        self.loaded = json.loads(bytes(data))
        self.fake.loaded.append(self)

    def build_plan_at_index(self, index):
        self.steps.append(("build_plan_at_index", index))
        self.selected = index
        return self

    def tensor(self, name, dim, stride, data_type):
        return Tensor(name, dim, stride, data_type)

    def _names(self, pack):
        return {NAMES[t] if isinstance(t, int) else t.name: address for t, address in pack.items()}

    def conv_fprop(self, image, weight, **params):
        self.nodes.append(("conv_fprop", image, weight, params))
        return Tensor("y", None, None, None)

    def conv_dgrad(self, loss, filter, **params):  # noqa: A002  (the frontend's argument name)
        self.nodes.append(("conv_dgrad", loss, filter, params))
        return Tensor("dx", None, None, None)

    def sdpa(self, q, k, v, **params):
        self.nodes.append(("sdpa", q, k, v, params))
        return [Tensor("o", None, None, None), None]

    def validate(self):
        self.steps.append("validate")

    def build_operation_graph(self):
        self.steps.append("build_operation_graph")

    def create_execution_plans(self, modes):
        self.steps.append(("create_execution_plans", tuple(modes)))

    def deselect_numeric_notes(self, notes):
        self.deselected = list(notes)

    def check_support(self):
        if self.fake.refuse:
            raise RuntimeError("cudnnGraphNotSupportedError: no engine")
        self.steps.append("check_support")

    def build_plans(self, *policy):
        self.steps.append(("build_plans", *policy) if policy else "build_plans")

    def get_workspace_size(self):
        return self.fake.workspace

    def get_execution_plan_count(self):
        return 3

    def get_workspace_size_plan_at_index(self, index):
        return 1000 * (index + 1)

    def execute(self, pack, workspace, handle):
        self.fake.executed.append((self, self._names(pack), workspace, handle))

    def execute_plan_at_index(self, pack, workspace, index, handle):
        self.fake.executed.append((self, self._names(pack), workspace, handle, index))


class FakeCudnn(types.ModuleType):
    """The `cudnn` module's surface that runtime/gpu/cudnn.py uses."""

    def __init__(self, version: int = 91000) -> None:
        super().__init__("cudnn")
        self.__version__ = "1.28.0"
        self.version, self.refuse, self.workspace = version, False, 4096
        self.refuse_serialize = self.refuse_deserialize = False
        self.graphs: list[Graph] = []
        self.loaded: list[Graph] = []
        self.executed: list[tuple] = []
        self.streams: list[tuple] = []
        self.handles: list[object] = []
        self.data_type = types.SimpleNamespace(FLOAT="FLOAT", HALF="HALF", BFLOAT16="BFLOAT16", DOUBLE="DOUBLE")
        self.heur_mode = types.SimpleNamespace(A="A", FALLBACK="FALLBACK")
        self.numerical_note = types.SimpleNamespace(
            TENSOR_CORE="TENSOR_CORE", DOWN_CONVERT_INPUTS="DOWN_CONVERT_INPUTS"
        )
        self.diagonal_alignment = types.SimpleNamespace(BOTTOM_RIGHT="BOTTOM_RIGHT", TOP_LEFT="TOP_LEFT")
        self.convolution_mode = types.SimpleNamespace(CONVOLUTION="CONVOLUTION", CROSS_CORRELATION="CROSS_CORRELATION")
        self.build_plan_policy = types.SimpleNamespace(ALL="ALL", HEURISTICS_CHOICE="HEURISTICS_CHOICE")

    def backend_version(self):
        return self.version

    def create_handle(self):
        handle = object()
        self.handles.append(handle)
        return handle

    def set_stream(self, handle, stream):
        self.streams.append((handle, stream))

    def pygraph(self, **settings):
        return Graph(self, **settings)


def _runtime(monkeypatch, fake: FakeCudnn | None = None):
    """A GpuRuntime on the fake driver with a Cudnn over `fake` (installed as `cudnn`), and
    its launches' kernel names and arguments. Autotuning off (its own test turns it on)."""
    if fake is not None:
        monkeypatch.setitem(sys.modules, "cudnn", fake)
    rt = GpuRuntime(Driver())
    rt.switches = Switches()  # every switch off, whatever the environment says
    rt.vendor_nn = gpu_cudnn.Cudnn(rt)
    launches: list[tuple] = []
    rt.launch = lambda source, name, grid, block, stream, args, types_: launches.append((name, args))
    return rt, launches


def _conv2d(rt, dtype=np.float32, x_layout=None, b=2, c_in=3, h=9, w=8, c_out=4):
    x = rt.from_host(0, np.ones(b * c_in * h * w + 1, dtype))
    lx = x_layout or Layout.contiguous((b, c_in, h, w))
    k = rt.from_host(0, np.ones((c_out, c_in, 3, 3), dtype))
    p = ConvParams2D(b_size=b, i_h=h, i_w=w, k_h=3, k_w=3, c_out=c_out, c_in=c_in, padding=1, stride=2, dilation=1)
    out = rt.conv2d(x, lx, k, Layout.contiguous((c_out, c_in, 3, 3)), p, kernels_hip.STORAGE["conv2d"])
    return x, k, out, p


def test_conv2d_runs_one_cudnn_graph_built_once_on_our_stream(monkeypatch):
    fake = FakeCudnn()
    rt, launches = _runtime(monkeypatch, fake)
    x, k, out, p = _conv2d(rt)
    _, _, out2, _ = _conv2d(rt)
    assert not launches and not rt.driver.gemms  # no im2col, no GEMM
    [graph] = fake.graphs  # built on the first call, reused by the second
    assert graph.steps == [
        "validate",
        "build_operation_graph",
        ("create_execution_plans", ("A", "FALLBACK")),
        "check_support",
        "build_plans",
    ]
    assert graph.deselected == ["TENSOR_CORE", "DOWN_CONVERT_INPUTS"]  # f32 in f32: no TF32
    assert graph.settings["io_data_type"] == "FLOAT" and graph.settings["compute_data_type"] == "FLOAT"
    [(kind, image, weight, params)] = graph.nodes
    assert kind == "conv_fprop" and (image.dim, weight.dim) == ([2, 3, 9, 8], [4, 3, 3, 3])
    assert image.stride == [216, 72, 8, 1]
    assert (params["padding"], params["stride"], params["dilation"]) == ([1, 1], [2, 2], [1, 1])
    (g1, pack1, ws1, handle1), (g2, pack2, ws2, handle2) = fake.executed
    assert g1 is g2 is graph and handle1 is handle2 is fake.handles[0]
    assert pack1 == {"x": x.ptr, "w": k.ptr, "y": out.ptr} and pack2["y"] == out2.ptr
    assert ws1 == ws2 and ws1 > 0  # one workspace buffer of the device, reused
    assert fake.streams == [(fake.handles[0], 7000)]  # bound to our stream once
    assert rt.vendor_nn.calls == {"conv2d": 2}
    assert out.size == 2 * 4 * p.out_h() * p.out_w()


def test_half_convolutions_keep_tensor_cores_and_compute_in_f32(monkeypatch):
    fake = FakeCudnn()
    rt, _ = _runtime(monkeypatch, fake)
    _conv2d(rt, BF16)
    [graph] = fake.graphs
    assert graph.settings["io_data_type"] == "BFLOAT16" and graph.settings["compute_data_type"] == "FLOAT"
    assert graph.deselected == []


def test_strided_and_unaligned_inputs_are_copied_dense_first(monkeypatch):
    fake = FakeCudnn()
    rt, launches = _runtime(monkeypatch, fake)
    permuted = Layout.contiguous((2, 9, 3, 8)).permute((0, 2, 1, 3))
    _conv2d(rt, x_layout=permuted)
    [(name, args)] = launches
    assert name == "copy_strided_f32"
    copy_out = args[-1]
    assert fake.executed[-1][1]["x"] == copy_out
    launches.clear()
    x, _, _, _ = _conv2d(rt, x_layout=Layout.contiguous((2, 3, 9, 8), start_offset=1))  # 4 bytes in: unaligned
    assert [name for name, _ in launches] == ["copy_strided_f32"]
    launches.clear()
    x, _, _, _ = _conv2d(rt, x_layout=Layout.contiguous((2, 3, 9, 8), start_offset=4))  # 16 bytes in: in place
    assert not launches and fake.executed[-1][1]["x"] == x.ptr + 16
    assert len(fake.graphs) == 1  # the same shape each time: one graph


def test_conv_transpose2d_is_the_data_gradient_with_output_padding_in_its_extent(monkeypatch):
    fake = FakeCudnn()
    rt, _ = _runtime(monkeypatch, fake)
    b, c_in, h, w, c_out = 2, 4, 5, 6, 3
    p = ConvTransposeParams2D(
        b_size=b, i_h=h, i_w=w, k_h=3, k_w=2, c_out=c_out, c_in=c_in, padding=1, output_padding=1, stride=2, dilation=2
    )
    x = rt.from_host(0, np.ones((b, c_in, h, w), np.float32))
    k = rt.from_host(0, np.ones((c_in, c_out, 3, 2), np.float32))
    out = rt.conv_transpose2d(
        x,
        Layout.contiguous((b, c_in, h, w)),
        k,
        Layout.contiguous((c_in, c_out, 3, 2)),
        p,
        kernels_hip.STORAGE["conv_transpose2d"],
    )
    [graph] = fake.graphs
    [(kind, loss, filter_, params)] = graph.nodes
    assert kind == "conv_dgrad" and loss.dim == [b, c_in, h, w] and filter_.dim == [c_in, c_out, 3, 2]
    assert (params["padding"], params["stride"], params["dilation"]) == ([1, 1], [2, 2], [2, 2])
    pack = fake.executed[0][1]
    assert pack == {"x": x.ptr, "w": k.ptr, "dx": out.ptr}
    assert out.size == b * c_out * p.out_h() * p.out_w()


def test_conv1d_runs_as_a_2d_convolution_of_height_1(monkeypatch):
    fake = FakeCudnn()
    rt, _ = _runtime(monkeypatch, fake)
    p = ConvParams1D(b_size=2, l_in=20, c_out=5, c_in=3, k_size=4, padding=2, stride=3, dilation=2)
    x = rt.from_host(0, np.ones((2, 3, 20), np.float32))
    k = rt.from_host(0, np.ones((5, 3, 4), np.float32))
    out = rt.conv1d(x, Layout.contiguous((2, 3, 20)), k, Layout.contiguous((5, 3, 4)), p, kernels_hip.STORAGE["conv1d"])
    [(kind, image, weight, params)] = fake.graphs[0].nodes
    assert (image.dim, weight.dim) == ([2, 3, 1, 20], [5, 3, 1, 4])
    assert (params["padding"], params["stride"], params["dilation"]) == ([0, 2], [1, 3], [1, 2])
    assert out.size == 2 * 5 * p.l_out()


def test_a_graph_cudnn_refuses_falls_back_and_is_not_asked_again(monkeypatch):
    fake = FakeCudnn()
    fake.refuse = True
    rt, launches = _runtime(monkeypatch, fake)
    _conv2d(rt)
    _conv2d(rt)
    assert len(fake.graphs) == 1 and not fake.executed  # refused once, remembered
    assert [name for name, _ in launches] == ["im2col_f32", "im2col_f32"] and len(rt.driver.gemms) == 2


def test_integer_and_f64_convolutions_keep_their_paths(monkeypatch):
    fake = FakeCudnn()
    rt, launches = _runtime(monkeypatch, fake)
    _conv2d(rt, np.float64)
    _conv2d(rt, np.int64)
    assert not fake.graphs
    assert [name for name, _ in launches] == ["im2col_f64", "conv2d_i64"]


def test_the_plan_cache_drops_the_least_recently_used(monkeypatch):
    fake = FakeCudnn()
    rt, _ = _runtime(monkeypatch, fake)
    monkeypatch.setattr(gpu_cudnn, "PLAN_CACHE", 2)
    for h in (9, 10, 9, 11, 10):  # 9 used again before 11 arrives: 10 goes, and comes back
        _conv2d(rt, h=h)
    assert [g_.nodes[0][1].dim[2] for g_ in fake.graphs] == [9, 10, 11]  # built once each
    [again] = fake.loaded  # 10 came back from the disk cache, not the heuristics
    assert fake.executed[-1][0] is again and rt.vendor_nn.loaded == 1


def test_without_the_frontend_every_call_takes_the_old_paths(monkeypatch):
    monkeypatch.setitem(sys.modules, "cudnn", None)  # import cudnn: ImportError
    rt, launches = _runtime(monkeypatch)
    _conv2d(rt)
    assert [name for name, _ in launches] == ["im2col_f32"] and len(rt.driver.gemms) == 1
    assert "nvidia-cudnn-frontend is not installed" in rt.vendor_nn.unavailable()
    assert rt.vendor_nn.status().startswith("cuDNN not in use: nvidia-cudnn-frontend is not installed")


def test_without_libcudnn_every_call_takes_the_old_paths(monkeypatch):
    fake = FakeCudnn()

    def no_library():
        raise RuntimeError("Unable to find symbol cudnnGetVersion")

    fake.backend_version = no_library  # type: ignore[method-assign]
    rt, launches = _runtime(monkeypatch, fake)
    _conv2d(rt)
    assert [name for name, _ in launches] == ["im2col_f32"] and not fake.graphs
    assert "libcudnn.so.9 not found" in rt.vendor_nn.unavailable()


def test_opgen_cudnn_0_turns_it_off(monkeypatch):
    fake = FakeCudnn()
    monkeypatch.setenv("OPGEN_CUDNN", "0")
    rt, launches = _runtime(monkeypatch, fake)
    _conv2d(rt)
    assert not fake.graphs and [name for name, _ in launches] == ["im2col_f32"]
    assert rt.vendor_nn.status() == (
        "cuDNN not in use: disabled (OPGEN_CUDNN=0); convolutions and attention run opgen's kernels and the BLAS"
    )


def test_status_names_the_versions(monkeypatch):
    rt, _ = _runtime(monkeypatch, FakeCudnn(91900))
    assert rt.vendor_nn.status() == "cuDNN 9.19.0 through nvidia-cudnn-frontend 1.28.0"


# -- attention ---------------------------------------------------------------------------------


def _sdpa(rt, dtype, sq, skv, causal, q_layout=None, d=64, b=1, h=2):
    q = rt.from_host(0, np.ones(b * h * sq * d + 8, dtype))
    k = rt.from_host(0, np.ones(b * h * skv * d + 8, dtype))
    v = rt.from_host(0, np.ones(b * h * skv * d + 8, dtype))
    lq = q_layout or Layout.contiguous((b, h, sq, d))
    lkv = Layout.contiguous((b, h, skv, d))
    out, shape = gpu_nn.sdpa(rt, q, lq, k, lkv, v, lkv, 0.125, causal, kernels_hip.NN["sdpa"])
    return (q, k, v), out, shape


def test_bf16_attention_runs_cudnn_with_bottom_right_causal_alignment(monkeypatch):
    fake = FakeCudnn()
    rt, launches = _runtime(monkeypatch, fake)
    (q, k, v), out, shape = _sdpa(rt, BF16, 16, 40, True)
    assert shape == (1, 2, 16, 64) and not launches and not rt.driver.gemms
    [graph] = fake.graphs
    [(kind, tq, tk, tv, params)] = graph.nodes
    assert (tq.dim, tk.dim, tv.dim) == ([1, 2, 16, 64], [1, 2, 40, 64], [1, 2, 40, 64])
    assert params == {
        "attn_scale": 0.125,
        "name": "sdpa",
        "generate_stats": False,
        "diagonal_alignment": "BOTTOM_RIGHT",
        "diagonal_band_right_bound": 0,
    }
    assert fake.executed[0][1] == {"q": q.ptr, "k": k.ptr, "v": v.ptr, "o": out.ptr}
    _sdpa(rt, BF16, 16, 40, False)
    assert fake.graphs[1].nodes[0][4] == {"attn_scale": 0.125, "name": "sdpa", "generate_stats": False}


def test_attention_views_with_dense_rows_are_read_in_place_with_their_strides(monkeypatch):
    fake = FakeCudnn()
    rt, launches = _runtime(monkeypatch, fake)
    heads_inside = Layout.contiguous((1, 16, 2, 64)).transpose(1, 2)  # stored (b, s, h, d)
    (q, _, _), _, _ = _sdpa(rt, BF16, 16, 16, False, q_layout=heads_inside)
    assert not launches
    tq = fake.graphs[0].nodes[0][1]
    assert tq.stride == [2048, 64, 128, 1] and fake.executed[0][1]["q"] == q.ptr
    transposed = Layout.contiguous((1, 2, 64, 16)).transpose(2, 3)  # d not dense: copied
    _sdpa(rt, BF16, 16, 16, False, q_layout=transposed)
    assert [name for name, _ in launches] == ["copy_strided_bf16"]
    assert fake.graphs[1].nodes[0][1].stride == [2048, 1024, 64, 1]


def test_attention_cudnn_does_not_take_runs_the_other_paths(monkeypatch):
    fake = FakeCudnn()
    rt, launches = _runtime(monkeypatch, fake)
    _sdpa(rt, BF16, 40, 16, True)  # causal, more queries than keys: some rows see no key
    _sdpa(rt, np.float32, 16, 16, False)  # f32
    _sdpa(rt, BF16, 16, 16, False, d=20)  # a head dim not a multiple of 8
    assert not fake.graphs
    assert [name for name, _ in launches] == ["sdpa_softmax_bf16", "sdpa_softmax_f32", "sdpa_softmax_bf16"]
    assert len(rt.driver.gemms) == 6


def test_an_older_frontend_gets_the_older_attention_arguments(monkeypatch):
    fake = FakeCudnn()
    original = Graph.sdpa

    def old_sdpa(self, q, k, v, **params):
        if "generate_stats" in params:
            raise TypeError("sdpa() got an unexpected keyword argument 'generate_stats'")
        return original(self, q, k, v, **params)

    monkeypatch.setattr(Graph, "sdpa", old_sdpa)
    rt, _ = _runtime(monkeypatch, fake)
    _sdpa(rt, BF16, 16, 40, True)
    assert fake.graphs[-1].nodes[0][4] == {
        "attn_scale": 0.125,
        "name": "sdpa",
        "is_inference": True,
        "use_causal_mask_bottom_right": True,
    }
    assert len(fake.executed) == 1


@pytest.mark.parametrize("op", ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d"])
def test_every_convolution_op_lists_its_dtypes(op):
    assert gpu_cudnn.CONV_DTYPES[op] <= {"float16", "bfloat16", "float32", "float64"}


def test_autotuning_times_every_plan_in_rounds_once_and_runs_the_fastest(monkeypatch):
    fake = FakeCudnn()
    rt, _ = _runtime(monkeypatch, fake)
    rt.set_autotune(True)
    timed: list[int] = []
    seconds = {0: [3e-3, 3e-3, 3e-3], 1: [9e-3, 1e-3, 9e-3], 2: [2e-3, 2e-3, 2e-3]}  # plan 1: best in one round

    def timer(run, stream, runs):
        before = len(fake.executed)
        run()
        index = fake.executed[before][4]
        timed.append(index)
        return seconds[index][timed.count(index) - 1]

    monkeypatch.setattr(rt.vendor_nn, "timer", timer)
    _conv2d(rt)
    tuned = len(fake.executed)
    _conv2d(rt)
    [graph] = fake.graphs
    assert ("build_plans", "ALL") in graph.steps
    assert timed == [0, 1, 2] * gpu_cudnn.AUTOTUNE_ROUNDS  # round-robin, on the first call only
    workspaces = {e[2] for e in fake.executed[:tuned]}
    assert len(workspaces) == 1 and rt.vendor_nn._workspaces[0].nbytes >= 3000  # one buffer, the largest need
    assert [e[4] for e in (fake.executed[tuned - 1], fake.executed[tuned])] == [1, 1]  # the two calls: plan 1


def test_the_fastest_plans_are_timed_again_once_the_shape_is_in_steady_use(monkeypatch):
    fake = FakeCudnn()
    rt, _ = _runtime(monkeypatch, fake)
    timed: list[int] = []
    first = {0: 3e-3, 1: 1e-3, 2: 2e-3}  # the first call keeps plan 1
    later = {0: 3e-3, 1: 4e-3, 2: 2e-3}  # in steady use plan 2 is the faster

    def timer(run, stream, runs):
        before = len(fake.executed)
        run()
        index = fake.executed[before][4]
        timed.append(index)
        return (first if len(timed) <= 3 * gpu_cudnn.AUTOTUNE_ROUNDS else later)[index]

    monkeypatch.setattr(rt.vendor_nn, "timer", timer)
    rt.set_autotune(True)
    monkeypatch.setattr(gpu_cudnn, "SECOND_LOOK_PLANS", 2)
    for _ in range(gpu_cudnn.SECOND_LOOK_CALL):
        _conv2d(rt)
    assert len(timed) == 3 * gpu_cudnn.AUTOTUNE_ROUNDS  # no second look before its call
    assert fake.executed[-1][4] == 1
    _conv2d(rt)
    assert timed[3 * gpu_cudnn.AUTOTUNE_ROUNDS :] == [1, 2] * gpu_cudnn.AUTOTUNE_ROUNDS  # the two fastest, again
    assert fake.executed[-1][4] == 2
    _conv2d(rt)
    assert len(timed) == 5 * gpu_cudnn.AUTOTUNE_ROUNDS and fake.executed[-1][4] == 2  # once only


# -- plans without surprise: the heuristics' plan by default, choices kept on disk ---------------


def _never_timed(run, stream, runs):
    raise AssertionError("a plan was timed inside a call with autotuning off")


def test_by_default_the_first_call_runs_the_heuristics_plan_and_times_nothing(monkeypatch):
    fake = FakeCudnn()
    rt, _ = _runtime(monkeypatch, fake)
    monkeypatch.setattr(rt.vendor_nn, "timer", _never_timed)
    assert rt.autotune() is False
    _conv2d(rt)
    [graph] = fake.graphs
    assert graph.steps[-1] == "build_plans" and len(fake.executed[0]) == 4  # execute(): the selected plan


def test_a_second_process_starts_with_the_plan_the_first_kept_on_disk(monkeypatch, plan_cache_directory):
    fake = FakeCudnn()
    first, _ = _runtime(monkeypatch, fake)
    _conv2d(first)
    [entry] = (plan_cache_directory / "fake" / "plans").glob("*.json")
    second, launches = _runtime(monkeypatch, fake)  # a new runtime: a fresh process's state
    monkeypatch.setattr(second.vendor_nn, "timer", _never_timed)
    x, k, out, _ = _conv2d(second)
    assert len(fake.graphs) == 1 and not launches  # no heuristics, no build: deserialized
    [loaded] = fake.loaded
    assert loaded.loaded == {"nodes": ["conv_fprop"], "selected": None}
    assert fake.executed[-1][0] is loaded and fake.executed[-1][1] == {"x": x.ptr, "w": k.ptr, "y": out.ptr}
    assert fake.executed[-1][2] == fake.executed[0][2]  # the plan's workspace, as the first process's
    assert second.vendor_nn.loaded == 1 and entry.exists()


def test_an_autotuned_choice_is_kept_and_a_second_process_does_not_time_again(monkeypatch):
    fake = FakeCudnn()
    first, _ = _runtime(monkeypatch, fake)
    first.set_autotune(True)
    seconds = {0: 3e-3, 1: 1e-3, 2: 2e-3}

    def timer(run, stream, runs):
        before = len(fake.executed)
        run()
        return seconds[fake.executed[before][4]]

    monkeypatch.setattr(first.vendor_nn, "timer", timer)
    _conv2d(first)
    assert ("build_plan_at_index", 1) in fake.graphs[0].steps  # selected before it is serialized
    second, _ = _runtime(monkeypatch, fake)
    second.set_autotune(True)
    monkeypatch.setattr(second.vendor_nn, "timer", _never_timed)
    _conv2d(second)
    [loaded] = fake.loaded
    assert loaded.loaded["selected"] == 1 and fake.executed[-1][0] is loaded
    third, _ = _runtime(monkeypatch, fake)  # autotuning off: the heuristics' own entry, not the tuned one
    monkeypatch.setattr(third.vendor_nn, "timer", _never_timed)
    _conv2d(third)
    assert len(fake.graphs) == 2 and fake.graphs[1].steps[-1] == "build_plans"


def test_tf32_convolutions_keep_tensor_core_plans_under_a_key_of_their_own(monkeypatch):
    fake = FakeCudnn()
    rt, _ = _runtime(monkeypatch, fake)
    _conv2d(rt)
    rt.set_conv_reduced_precision_f32(True)
    _conv2d(rt)
    _conv2d(rt, BF16)  # the half types: the same graph either way
    rt.set_conv_reduced_precision_f32(False)
    _conv2d(rt)
    f32, tf32, bf16 = fake.graphs
    assert f32.deselected == ["TENSOR_CORE", "DOWN_CONVERT_INPUTS"] and tf32.deselected == ["DOWN_CONVERT_INPUTS"]
    assert bf16.deselected == [] and fake.executed[-1][0] is f32  # off again: the first graph
    assert tf32.settings["compute_data_type"] == "FLOAT"  # TF32 is the engines', not the graph's type


def test_a_damaged_entry_is_chosen_again_and_replaced_with_one_warning(monkeypatch, plan_cache_directory):
    fake = FakeCudnn()
    first, _ = _runtime(monkeypatch, fake)
    _conv2d(first)
    [entry] = (plan_cache_directory / "fake" / "plans").glob("*.json")
    entry.write_bytes(entry.read_bytes()[:-5])  # truncated
    second, _ = _runtime(monkeypatch, fake)
    with pytest.warns(KernelCacheWarning, match="is damaged"):
        _conv2d(second)
    assert len(fake.graphs) == 2 and not fake.loaded  # built again
    third, _ = _runtime(monkeypatch, fake)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _conv2d(third)
    assert len(fake.loaded) == 1  # the entry was replaced


def test_plans_the_library_cannot_store_or_load_are_chosen_again(monkeypatch, plan_cache_directory):
    fake = FakeCudnn()
    fake.refuse_serialize = True
    first, _ = _runtime(monkeypatch, fake)
    _conv2d(first)
    assert not list(plan_cache_directory.glob("fake/plans/*.json"))  # nothing kept
    fake.refuse_serialize, fake.refuse_deserialize = False, True
    second, _ = _runtime(monkeypatch, fake)
    _conv2d(second)  # kept now, but this library refuses to load it
    third, _ = _runtime(monkeypatch, fake)
    _conv2d(third)
    assert len(fake.graphs) == 3 and not fake.loaded and len(fake.executed) == 3


def test_another_cudnn_version_does_not_load_the_plan(monkeypatch):
    old, new = FakeCudnn(91000), FakeCudnn(91900)
    first, _ = _runtime(monkeypatch, old)
    _conv2d(first)
    second, _ = _runtime(monkeypatch, new)
    _conv2d(second)
    assert len(new.graphs) == 1 and not new.loaded and not old.loaded


def test_attention_plans_are_kept_on_disk_too(monkeypatch):
    fake = FakeCudnn()
    first, _ = _runtime(monkeypatch, fake)
    _sdpa(first, BF16, 16, 40, True)
    second, _ = _runtime(monkeypatch, fake)
    (q, k, v), out, _ = _sdpa(second, BF16, 16, 40, True)
    [loaded] = fake.loaded
    assert loaded.loaded["nodes"] == ["sdpa"] and len(fake.graphs) == 1
    assert fake.executed[-1][1] == {"q": q.ptr, "k": k.ptr, "v": v.ptr, "o": out.ptr}


class Lowered:
    """The lowered graph's raw-address execute, as runtime/gpu/cudnn_direct.py calls it: records
    the addresses it read from the array it was given."""

    def __init__(self, fake):
        self.fake = fake

    def _execute_with_raw_ptrs(self, address, count, workspace, handle, index):
        addresses = list((ctypes.c_void_p * count).from_address(address))
        self.fake.direct.append((addresses, workspace, handle, index))


class LoweredGraph(Graph):
    """A graph with the frontend's internals cudnn_direct.py reads: its operands in ascending
    uid order (the output's uid the smallest, so that the order differs from the op's), three
    backend plans at 10, 11 and 12, and a Python engine where `fake.python_engine`."""

    def __init__(self, fake, **settings):
        super().__init__(fake, **settings)
        self._lowered_graph = Lowered(fake)
        self._plans = ["plan 0", "plan 1", "plan 2"]
        self._planning_done = True
        self._plan_index = 0
        self.selected_engine = object() if fake.python_engine else None
        self.uids: list[int] = []

    def tensor(self, name, dim, stride, data_type):
        t = super().tensor(name, dim, stride, data_type)
        self.uids.append(t.uid)
        return t

    def conv_fprop(self, image, weight, **params):
        y = super().conv_fprop(image, weight, **params)
        y.uid = min(self.uids) - 1000
        NAMES[y.uid] = y.name
        self.uids.append(y.uid)
        return y

    def _variant_pack_uids(self):
        return sorted(self.uids)

    def _materialize_backend_plan(self, index):
        return types.SimpleNamespace(cpp_index=10 + index)

    def _check_plan_index(self, index):
        return index

    def _reject_if_barred(self, index):
        pass

    def _engine_for(self, config):
        return self.selected_engine


class LoweredCudnn(FakeCudnn):
    """The fake with LoweredGraph's graphs and handles that carry the backend's int."""

    def __init__(self, python_engine: bool = False) -> None:
        super().__init__()
        self.python_engine = python_engine
        self.direct: list[tuple] = []

    def create_handle(self):
        handle = types.SimpleNamespace(backend_handle=4242 + len(self.handles))
        self.handles.append(handle)
        return handle

    def pygraph(self, **settings):
        return LoweredGraph(self, **settings)


def test_a_built_plan_runs_by_its_addresses_in_ascending_uid_order(monkeypatch):
    fake = LoweredCudnn()
    rt, _ = _runtime(monkeypatch, fake)
    x, k, out, _ = _conv2d(rt)
    x2, k2, out2, _ = _conv2d(rt)
    assert not fake.executed  # never through the frontend's execute
    (first, ws1, handle1, index1), (second, ws2, handle2, index2) = fake.direct
    assert first == [out.ptr, x.ptr, k.ptr] and second == [out2.ptr, x2.ptr, k2.ptr]  # y has the smallest uid
    assert ws1 == ws2 == rt.vendor_nn._workspaces[0].ptr and handle1 == handle2 == 4242
    assert index1 == index2 == 10  # the selected plan (0) at its place in the backend's list
    assert rt.vendor_nn.calls == {"conv2d": 2}


def test_an_autotuned_plan_runs_by_its_addresses_once_its_timings_are_done(monkeypatch):
    fake = LoweredCudnn()
    rt, _ = _runtime(monkeypatch, fake)
    rt.set_autotune(True)
    seconds = {0: 3e-3, 1: 1e-3, 2: 2e-3}
    monkeypatch.setattr(rt.vendor_nn, "timer", lambda run, stream, runs: run() or seconds[fake.executed[-1][4]])
    for _ in range(gpu_cudnn.SECOND_LOOK_CALL + 3):  # the first call times, the 17th times again
        _conv2d(rt)
    assert {e[3] for e in fake.direct} == {11}  # plan 1, the fastest, at 11 in the backend's list
    assert len(fake.direct) == 2  # the two calls after the second look; the others went through execute


@pytest.mark.parametrize("why", ["python engine", "switched off", "no internals"])
def test_plans_the_frontend_must_run_itself_go_through_execute(monkeypatch, why):
    if why == "no internals":
        fake = FakeCudnn()
    else:
        fake = LoweredCudnn(python_engine=why == "python engine")
    if why == "switched off":
        monkeypatch.setattr(gpu_cudnn, "DIRECT", False)
    rt, _ = _runtime(monkeypatch, fake)
    x, k, out, _ = _conv2d(rt)
    _conv2d(rt)
    assert len(fake.executed) == 2 and not getattr(fake, "direct", [])
    assert fake.executed[0][1] == {"x": x.ptr, "w": k.ptr, "y": out.ptr}
