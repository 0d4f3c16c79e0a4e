"""Dispatch arms: how each backend runs each op, computed from the registry and from what
each runtime module defines. Templates only lay these statements out."""

from __future__ import annotations

import dataclasses

from . import contract
from .model import OP_ENUM_TYPES, Arm, ArmStatus, Backend, Collective, Operation, Param, Registry, Transfer

# Runtime functions a backend needs so that another backend can run its ops for it.
FALLBACK_NEEDS = ("to_host", "from_host", "device")


def _missing(backend: Backend, name: str) -> Arm:
    return Arm(backend, ArmStatus.MISSING, (f'raise _missing(On.{backend.member}, "{name}")',))


def _call(backend: Backend, function: str, arguments: tuple[contract.Argument, ...]) -> str:
    return f"{backend.alias}.{function}({', '.join(a.expression for a in arguments)})"


def _host_arg(param: Param, host: Backend, device: Backend) -> str:
    """What a fallback arm passes `host`'s runtime for `param`: storages through host memory."""
    if param.is_storage:
        return f"{device.alias}.to_host({param.name}.inner)"
    return contract.param_argument(param, host).expression


def _wrap(returns: str, backend: Backend, call: str) -> tuple[str, ...]:
    match returns:
        case "Storage":
            return (f"return Storage(On.{backend.member}, {call})",)
        case "Device":  # through backends.device_of: storage.py and quantized.py do not import device.py
            return (f"return _device_of(On.{backend.member}, {call})",)
        case "QStorage":
            return (f"return QStorage(On.{backend.member}, {call})",)
        case "GgmlDType":
            return (f"return GgmlDType({call})",)
        case "DType":
            return (f"return _dtype_of({call})",)
        case "None":
            return (call,)
        case _:
            return (f"return {call}",)


def _needs_kernels(op: Operation) -> bool:
    return any(p.type in OP_ENUM_TYPES for p in op.params)


def _hook_arm(op: Operation, backend: Backend) -> Arm:
    args = ", ".join(
        ["self.inner", *(contract.param_argument(p, backend).expression for p in op.params if p.name != op.hook)]
    )
    call = f"{op.hook}.{backend.name}_fwd({args})"
    if op.returns == "None":
        return Arm(backend, ArmStatus.HOOK, (call,))
    return Arm(
        backend, ArmStatus.HOOK, (f"inner, shape = {call}", f"return Storage(On.{backend.member}, inner), shape")
    )


# Families whose numpy kernels map whole buffers elementwise: their ops get a fast path.
WHOLE_BUFFER_FAMILIES = ("unary", "binary")


def backend_global(backend: Backend) -> str:
    """The module global of storage.py holding `On.<MEMBER>`: one global read where `On.CPU` is
    two, for the fast paths' `is` test (`case On.CPU:` is an `==` between StrEnums, which
    CPython 3.11 does not specialize) and the backend of the Storage an arm builds itself."""
    return f"_ON_{backend.member}"


def whole_buffer_fast_path(op: Operation, backend: Backend) -> tuple[str, ...]:
    """The fast path of an elementwise Storage op on a backend running numpy kernels, for the
    common case: every input on that backend and a whole buffer read in order (its layout
    contiguous from offset 0 over all of it), the inputs of one dtype object, and a kernel for
    that dtype that keeps it (`<FAMILY>_WHOLE` of the kernels module). Then it calls the kernel
    on the buffers itself and builds the Storage without `__init__`: no runtime call, no second
    frame. It is one `if` in front of the method's `match` (so the `match`'s `==` between
    StrEnums is not paid on the way) and returns only where the backend's arm (its checks, then
    the runtime) would pass every check and call the same function on the same buffers;
    anything else (another backend, a strided, offset or broadcast layout, mismatched dtypes or
    shapes, a dtype the op lacks, a result that is an input) falls through to the `match`
    unchanged, which raises or computes as before. The kernel is looked up by subscription in a
    `try` (free in CPython 3.11 where nothing is raised, and cheaper than `dict.get` and a test
    of its None): a missing kernel costs an exception, paid only by calls that the general path
    then rejects (a dtype the op lacks) or converts (an op whose result has another dtype,
    which has no whole-buffer kernels). () where the op is not such an op."""
    enums = [p for p in op.params if p.type in OP_ENUM_TYPES]
    layouts = [p.name for p in op.params if p.type == "Layout"]
    inputs = ["self", *(p.name for p in op.storage_params)]
    if (
        backend.kernels != "numpy"
        or op.returns != "Storage"
        or len(enums) != 1
        or OP_ENUM_TYPES[enums[0].type] not in WHOLE_BUFFER_FAMILIES
        or len(layouts) != len(inputs)
        or len(inputs) > 2
    ):
        return ()
    on = backend_global(backend)
    table = f"_kernels_numpy.{OP_ENUM_TYPES[enums[0].type].upper()}_WHOLE[{enums[0].name}]"
    bufs = ["_inner", "_other"][: len(inputs)]
    body = [f"{buf} = {name}.inner" for buf, name in zip(bufs, inputs)]
    if len(bufs) == 1:
        lookup = f"{table}[_inner.dtype]"
        # the runtime's own whole-buffer test: the layout's dense_count equal to the buffer's size
        conds = [f"{layouts[0]}.dense_count == _inner.size"]
    else:  # the rhs must have the same dtype object: `is`, no comparison by value
        body.append("_dt = _inner.dtype")
        lookup = f"{table}[_dt]"
        conds = [f"{buf}.dtype is _dt" for buf in bufs[1:]]
        # every layout's dense_count equal to every buffer's size (a chained == costs more)
        conds += [f"_n == {b}.size" for b in bufs] + [f"_n == {lay}.dense_count" for lay in layouts[1:]]
        # the same shapes; one Layout object on both sides is the same shape without comparing
        conds += [f"({lay} is {layouts[0]} or {lay}.shape == {layouts[0]}.shape)" for lay in layouts[1:]]
    body += [
        "try:",
        f"    _f = {lookup}",
        "except KeyError:  # no kernel keeping this dtype: the general path decides",
        "    pass",
        "else:",
    ]
    if len(bufs) > 1:
        body.append(f"    _n = {layouts[0]}.dense_count")
    body += [
        f"    if {' and '.join(conds)}:",
        f"        _out = _f({', '.join(bufs)})",
        f"        if {' and '.join(f'_out is not {buf}' for buf in bufs)}:",
        "            _storage = _new_object(Storage)",
        f"            _storage.backend = {on}",
        "            _storage.inner = _out",
        "            return _storage",
    ]
    guard = " and ".join(f"{name}.backend is {on}" for name in inputs)
    return (f"if {guard}:  # whole buffers: the fast path", *(f"    {line}" for line in body))


# Families whose GPU arms build their Storage without `__init__` (_new_storage): the small
# elementwise ops, all host time on a GPU, and the reductions, whose host time counts
# against a sum's (bench/results/NOTES.md).
NEW_STORAGE_FAMILIES = (*WHOLE_BUFFER_FAMILIES, "reduce")


def _elementwise_family(op: Operation, families: tuple[str, ...] = WHOLE_BUFFER_FAMILIES) -> str | None:
    """The family (of `families`) of an op taking one op enum, else None."""
    enums = [p for p in op.params if p.type in OP_ENUM_TYPES]
    if len(enums) != 1 or OP_ENUM_TYPES[enums[0].type] not in families:
        return None
    return OP_ENUM_TYPES[enums[0].type]


def _new_storage(backend: Backend, call: str) -> tuple[str, ...]:
    """`return Storage(On.<backend>, call)` without `__init__` (a Python frame called from C,
    about as costly as the rest of the arm), as the numpy fast path builds its result: the
    runtime's buffer first, so that a runtime error leaves nothing half made."""
    return (
        f"_out = {call}",
        "_storage = _new_object(Storage)",
        f"_storage.backend = {backend_global(backend)}",
        "_storage.inner = _out",
        "return _storage",
    )


def storage_arm(op: Operation, backend: Backend, registry: Registry) -> Arm:
    if op.hook:
        return _hook_arm(op, backend)
    fn = op.function(backend.name)
    if backend.implements(fn) and (backend.kernels or not _needs_kernels(op)):
        call = _call(backend, fn, contract.op_arguments(op, backend))
        fast = whole_buffer_fast_path(op, backend)
        if (
            backend.kernels
            and backend.kernels != "numpy"
            and op.returns == "Storage"
            and _elementwise_family(op, NEW_STORAGE_FAMILIES)
        ):
            # the GPU arms of unary, binary and reduce_op: a small op there is all host time
            return Arm(backend, ArmStatus.IMPLEMENTED, _new_storage(backend, call), fast)
        return Arm(backend, ArmStatus.IMPLEMENTED, _wrap(op.returns, backend, call), fast)
    if op.fallback and op.fallback != backend.name and all(backend.implements(f) for f in FALLBACK_NEEDS):
        host = registry.backend(op.fallback)
        args = ", ".join([f"{backend.alias}.to_host(self.inner)", *(_host_arg(p, host, backend) for p in op.params)])
        call = f"{host.alias}.{op.function(host.name)}({args})"
        moved = f"{backend.alias}.from_host({backend.alias}.device(self.inner), {call})"
        return Arm(backend, ArmStatus.FALLBACK, (f"return Storage(On.{backend.member}, {moved})",))
    return _missing(backend, op.label)


def nn_arm(op: Operation, backend: Backend, inputs: int) -> Arm:
    """The `<backend>_fwd` hook of an nn op's class: all inputs of one allowed dtype, then the
    runtime function. A runtime without the function gets no hook: the trait's default
    raises "no <backend> implementation for <op>"."""
    if not backend.implements(op.name):
        return Arm(backend, ArmStatus.MISSING, ())
    storages = [f"s{i}" for i in range(1, inputs + 1)]
    dtypes = ", ".join(f"{backend.alias}.dtype({s})" for s in storages)
    check = f'_check_dtypes("{op.name}", "{backend.name}", _{op.name.upper()}_DTYPES, {dtypes})'
    call = _call(backend, op.name, contract.nn_arguments(op, inputs, backend))
    return Arm(backend, ArmStatus.IMPLEMENTED, (check, f"return {call}"))


def device_arm(op: Operation, backend: Backend) -> Arm:
    fn = op.function(backend.name)
    if not backend.implements(fn):
        return _missing(backend, op.label)
    call = _call(backend, fn, contract.op_arguments(op, backend))
    return Arm(backend, ArmStatus.IMPLEMENTED, _wrap(op.returns, backend, call))


def to_numpy_arm(backend: Backend) -> Arm:
    if not backend.implements("to_numpy"):
        return _missing(backend, "to_numpy")
    return Arm(backend, ArmStatus.IMPLEMENTED, (f"return {backend.alias}.to_numpy(storage.inner, layout)",))


def transfer(src: Backend, dst: Backend, registry: Registry) -> Transfer:
    """to_device from `src` to `dst`: the runtime's own copy within a backend, else through
    host memory. Within a backend that runs HIP kernels the runtime also gets the launch
    table of copy_strided_src, to make a strided view dense on the device."""
    if src is dst and src.implements("to_device"):
        call = _call(src, "to_device", contract.to_device(src, registry).arguments)
        return Transfer(src, dst, Arm(dst, ArmStatus.IMPLEMENTED, (f"return Storage(On.{dst.member}, {call})",)))
    if src.implements("to_numpy") and dst.implements("from_host"):
        host = f"{src.alias}.to_numpy(storage.inner, layout).reshape(-1)"
        call = f"{dst.alias}.from_host(device.ordinal, {host})"
        return Transfer(src, dst, Arm(dst, ArmStatus.IMPLEMENTED, (f"return Storage(On.{dst.member}, {call})",)))
    lacking = src if not src.implements("to_numpy") else dst
    return Transfer(src, dst, _missing(lacking, "to_device"))


# Interop (runtime/dlpack.py): the runtime functions a View's methods call, with their
# arguments. A backend without one raises the generated missing error from that method.
INTEROP_EXPORTS = {
    "to_dlpack": "self.storage.inner, self.layout, stream, max_version, dl_device, copy",
    "dlpack_device": "self.storage.inner",
    "cuda_array_interface": "self.storage.inner, self.layout",
}
# Imports: the runtime function makes (inner, layout) of a producer's object.
INTEROP_IMPORTS = {"from_dlpack": "obj, ordinal", "from_cuda_array_interface": "obj"}


def interop_arm(backend: Backend, fn: str) -> Arm:
    if not backend.implements(fn):
        return _missing(backend, fn)
    if fn in INTEROP_IMPORTS:
        call = f"{backend.alias}.{fn}({INTEROP_IMPORTS[fn]})"
        return Arm(backend, ArmStatus.IMPLEMENTED, (f"return _view(On.{backend.member}, *{call})",))
    return Arm(backend, ArmStatus.IMPLEMENTED, (f"return {backend.alias}.{fn}({INTEROP_EXPORTS[fn]})",))


def interop(registry: Registry) -> tuple[tuple[str, tuple[Arm, ...]], ...]:
    return tuple(
        (fn, tuple(interop_arm(b, fn) for b in registry.backends)) for fn in (*INTEROP_EXPORTS, *INTEROP_IMPORTS)
    )


def with_arms(registry: Registry) -> Registry:
    storage = tuple(
        dataclasses.replace(op, arms=tuple(storage_arm(op, b, registry) for b in registry.backends))
        for op in registry.storage
    )
    device = tuple(
        dataclasses.replace(op, arms=tuple(device_arm(op, b) for b in registry.backends)) for op in registry.device
    )
    qstorage = tuple(
        dataclasses.replace(op, arms=tuple(storage_arm(op, b, registry) for b in registry.backends))
        for op in registry.qstorage
    )
    inputs = {t.name: t.inputs for t in registry.custom_ops}
    nn = tuple(
        dataclasses.replace(op, arms=tuple(nn_arm(op, b, inputs.get(op.trait or "", 1)) for b in registry.backends))
        for op in registry.nn
    )
    transfers = tuple(transfer(s, d, registry) for s in registry.backends for d in registry.backends)
    collectives = tuple(
        dataclasses.replace(op, arms=tuple(collective_arm(op, b) for b in registry.backends))
        for op in registry.collectives
    )
    return dataclasses.replace(
        registry,
        collectives=collectives,
        storage=storage,
        device=device,
        qstorage=qstorage,
        nn=nn,
        to_numpy=tuple(to_numpy_arm(b) for b in registry.backends),
        transfers=transfers,
        interop=interop(registry),
    )


# -- Comm (the registry's `collectives:`) ------------------------------------------------------
def collective_checks(op: Collective, backend: Backend) -> tuple[str, ...]:
    """Statements run before a collective's dispatch: every Storage on the communicator's device,
    the dtypes, the element counts, ranks within the group, the reduction's dtypes, a storage
    used twice where the op is not in place, then (check_agree) what every rank must pass alike.
    Plain `if`s: the common case, all fitting, calls nothing more."""
    rt = backend.alias
    name = op.name
    lines: list[str] = []
    for p in op.storage_params:
        lines += [
            f"if {p.name}.backend is not self.backend or {rt}.device({p.name}.inner) != self.ordinal:",
            f'    raise _device_mismatch("{name}", self, {p.name})',
        ]
    storages = [p.name for p in op.storage_params]
    if storages:
        first = op.same_dtype[0] if op.same_dtype else storages[0]
        lines.append(f"_dtype = {first}.dtype()")
        for other in op.same_dtype[1:]:
            lines += [
                f"if {other}.dtype() is not _dtype:",
                f'    raise _dtype_mismatch("{name}", self, _dtype, {other})',
            ]
        for other in (s for s in storages if s not in op.same_dtype and s != first):
            lines += [
                f"if {other}.dtype() not in {allowed_constant(op)}:",
                f'    raise _dtype_not_in("{name}", self, {other}, {allowed_constant(op)})',
            ]
        lines += [
            f"if _dtype not in {allowed_constant(op)}:",
            f'    raise _dtype_not_in("{name}", self, {first}, {allowed_constant(op)})',
        ]
    for p in op.params:
        if p.type == "Reduction":
            table = reductions_constant(op)
            lines += [
                f"if _dtype not in {table}.get({p.name}, ()):",
                f'    raise _reduction_not_for("{name}", self, {p.name}, _dtype, {table})',
            ]
        elif p.type == "Rank":
            lines += [
                f"if not 0 <= {p.name} < self.size:",
                f'    raise _rank_outside("{name}", self, "{p.name}", {p.name})',
            ]
    for rule in op.counts:
        expected = rule.expected(f"{rt}.comm_count({rule.of}.inner)")
        got = f"{rt}.comm_count({rule.storage}.inner)"
        lines += [
            f"if {got} != {expected}:",
            f'    raise _count_mismatch("{name}", self, "{rule.storage}", {expected}, {got})',
        ]
    for storage in op.per_rank:
        lines += [
            f"if {rt}.comm_count({storage}.inner) % self.size:",
            f'    raise _count_mismatch("{name}", self, "{storage}", f"a multiple of {{self.size}}", '
            f"{rt}.comm_count({storage}.inner))",
        ]
    if not op.in_place and {"send", "recv"} <= set(storages):
        lines += ["if send.inner is recv.inner:", f'    raise _not_in_place("{name}", self)']
    if op.agree:
        facts = ", ".join(
            f"{rt}.comm_count({a}.inner), {a}.dtype().value" if a in storages else f"{a}" for a in op.agree
        )
        facts = f"{facts}," if len(op.agree) == 1 and op.agree[0] not in storages else facts  # a 1-tuple
        lines += ["if self.check_agree:", f'    {rt}.comm_agree(self.inner, "{name}", ({facts}))']
    return tuple(lines)


def allowed_constant(op: Collective) -> str:
    return f"_{op.name.upper()}_DTYPES"


def reductions_constant(op: Collective) -> str:
    return f"_{op.name.upper()}_REDUCTIONS"


def collective_arm(op: Collective, backend: Backend) -> Arm:
    if not backend.implements(op.function):
        return _missing(backend, op.label)
    args = ", ".join(["self.inner", *(f"{p.name}.inner" if p.is_storage else p.name for p in op.params)])
    call = f"{backend.alias}.{op.function}({args})"
    if op.returns == "Comm":
        body: tuple[str, ...] = (f"return Comm(On.{backend.member}, {call}, self.check_agree)",)
    else:
        body = (call,)
    return Arm(backend, ArmStatus.IMPLEMENTED, (*collective_checks(op, backend), *body))


def comm_world_arm(backend: Backend) -> Arm:
    """Comm.world's arm: the runtime's communicator over every process of the launch."""
    if not backend.implements("comm_world"):
        return _missing(backend, "Comm.world")
    call = f"{backend.alias}.comm_world(timeout)"
    return Arm(backend, ArmStatus.IMPLEMENTED, (f"return Comm(On.{backend.member}, {call}, check_agree)",))
