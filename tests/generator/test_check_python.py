"""check_python compiles large generated modules in pieces (split at two blank lines), and
takes blocks of the launch wrapper's and the kernel tables' shape as valid without compiling
them (generator.targets.pycheck), on one line or laid out as python_layout breaks long lines
(WIDTHS: the width of the layout, as narrow as to break every bracket).
It must accept and reject exactly what one compile of the whole text does, and place errors
where that compile places them."""

from __future__ import annotations

import random
import re
import warnings

import pytest
from gen_harness import REPO
from hypothesis import given, strategies as st

from generator.targets import pycheck, python_layout
from generator.targets.python import RenderError, check_python

WIDTHS = st.sampled_from([20, 40, 60, 80, 120])


def module(n_defs: int, seed: int = 0) -> list[str]:
    """A generated-looking module as top-level blocks: a header, then many small defs."""
    rng = random.Random(seed)
    blocks = ['"""Doc."""\n\nfrom __future__ import annotations\n\nimport ctypes']
    for i in range(n_defs):
        args = ", ".join(f"a{j}" for j in range(rng.randint(0, 5)))
        call = f"{args}, ctypes.c_int" if args else "ctypes.c_int"
        blocks.append(f"def f{i}({args}) -> None:\n    g({call})")
    return blocks


def whole_error(text: str) -> SyntaxError | None:
    try:
        compile(text, "m.py", "exec", dont_inherit=True)
    except SyntaxError as exc:
        return exc
    return None


def check(text: str) -> RenderError | None:
    try:
        check_python("m.py.j2", "m.py", text)
    except RenderError as exc:
        return exc
    return None


BREAKS = [
    "def broken(:\n    pass",  # a syntax error
    "def dup(a, a):\n    pass",  # a symbol-table error (compile, not the parser)
    "x = [\n    1,",  # a bracket the rest of the text cannot close
    "from __future__ import annotations",  # a future import after other statements
    "  half = 1",  # a dedent to no enclosing level
    "def f():\n    nonlocal q",  # nonlocal without an enclosing binding
]


@pytest.mark.parametrize("broken", BREAKS)
@pytest.mark.parametrize("where", [0.1, 0.5, 0.97])
def test_rejects_what_compile_rejects_at_the_same_line(broken, where):
    blocks = module(300)
    blocks.insert(max(1, int(len(blocks) * where)), broken)
    text = "\n\n\n".join(blocks) + "\n"
    want, got = whole_error(text), check(text)
    assert want is not None and got is not None
    assert (got.line, got.col) == (want.lineno, want.offset)


@pytest.mark.parametrize(
    "joined",
    [
        's = """one\n\n\ntwo"""',  # two blank lines inside a string: a split that is no statement boundary
        "x = (\n    1,\n\n\n    2,\n)",  # ... inside brackets
        "@decorator\n\n\ndef h():\n    pass",  # ... between a decorator and its def
        "if c:\n    pass\n\n\nelse:\n    pass",  # ... between if and else
        "    more = 1",  # a block that goes on with the def before it
    ],
)
def test_accepts_what_compile_accepts(joined):
    blocks = module(200)
    blocks.insert(100, joined)
    text = "\n\n\n".join(blocks) + "\n"
    assert whole_error(text) is None
    assert check(text) is None


# ----------------------------------------------------------------------------- launch wrappers

WRAPPER = (
    "def launch_{name}(launch, grid, block, stream{params}) -> None:\n"
    '    launch(_SRC_AFFINE, "{name}", grid, block, stream, ({args},), _ARGS_AFFINE_BF16)'
)
NAMES = [
    "x",
    "numel",
    "info",
    "out",
    "grid",
    "launch",
    "match",
    "_",
    "type",
    "None",
    "class",
    "lambda",
    "__debug__",
    "print",
    "x1",
    "a_b",
]


def wrapper(name: str, params: list[str], args: list[str]) -> str:
    return WRAPPER.format(name=name, params="".join(f", {p}" for p in params), args=", ".join(args))


@given(
    st.sampled_from(NAMES),
    st.lists(st.sampled_from(NAMES), max_size=5),
    st.lists(st.sampled_from(NAMES), max_size=5),
    WIDTHS,
)
def test_a_recognized_launch_wrapper_always_compiles(name, params, args, width):
    """The recognizer stands in for compile on the blocks it accepts: it must accept none
    that compile rejects (keywords, __debug__, repeated parameters, an empty tuple)."""
    block = python_layout.fit(wrapper(name, params, args), width)
    try:
        compile(block, "w.py", "exec", dont_inherit=True)
    except SyntaxError:
        assert not pycheck.is_launch_wrapper(block)


def test_every_generated_launch_wrapper_is_recognized():
    """The shipped launch-wrapper module: every wrapper takes the fast path (a change to the
    template's wrapper shape would silently make every check compile them again)."""
    text = (REPO / "generated" / "kernels_hip.py").read_text(encoding="utf-8")
    blocks = [b for b in text.split("\n\n\n") if b.startswith("def launch_")]
    assert blocks and all(pycheck.is_launch_wrapper(b) for b in blocks)


def test_wrappers_in_a_row_leave_no_empty_pieces_to_compile():
    """The shipped module has thousands of wrappers back to back: each compile of an empty
    piece cost ~50 us (0.4 s of a 2,584-op registry's gen), so only the blocks between them
    are compiled."""
    text = "import x\n\n\n" + "\n\n\n".join(wrapper(f"k{i}", ["a"], ["a"]) for i in range(5)) + "\n\n\ny = 1\n"
    assert pycheck._pieces(text) == ["import x", "y = 1\n"]
    assert pycheck.syntax_error("w.py", text) is None
    assert pycheck.syntax_error("w.py", text.replace("y = 1", "y = (")) is not None


@pytest.mark.parametrize(
    ("before", "after"), [("x = (", ")"), ('s = """', '"""'), ("@decorator", "y = 1"), ("class C:", "    z = 1")]
)
def test_a_wrapper_inside_another_blocks_brackets_or_strings(before, after):
    """A wrapper between a block that opens something and one that closes it: the pieces
    around it never join across it, so the verdict is compile's on the whole text."""
    blocks = module(100)
    blocks[50:50] = [before, wrapper("k", ["a", "b"], ["a", "b"]), after]
    text = "\n\n\n".join(blocks) + "\n"
    want, got = whole_error(text), check(text)
    assert (want is None) == (got is None)
    if want is not None:
        assert (got.line, got.col) == (want.lineno, want.offset)


# ------------------------------------------------------------------------------ kernel tables

STRINGS = ["x", "unary_op_0", "a b", "it's", 'say "hi"', "back\\slash", "tab\there", "", "{", "é"]


def table(name: str, keys: list[str], values: list[str], strings: list[str], comment: str = "") -> str:
    """A kernel table of the generated shape, with the given names and strings put in."""
    lines = [f"# {comment}"] if comment else []
    lines.append(f"{name}: dict[{keys[0]}, Kernel] = {{")
    for i, key in enumerate(keys):
        s = strings[i % len(strings)] if strings else "x"
        lines += [f"    Op.{key}: Kernel(", f'        "{s}",', "        {"]
        lines += [f"            _{v.upper()}: {v}," for v in values]
        lines += [f"            {key}: _lowp1({values[0] if values else key}, _F32, _BF16),"]
        lines += ["        },", "        None,", "    ),"]
    op = strings[0] if strings else "op"
    lines += [f"    '{op}': {{", f"        (Pattern.{keys[0]}, 'f32', _F32): {keys[-1]},", "    },", "}", ""]
    lines += [f"_{name}_DTYPES = {{", *(f"    Op.{key}: ({', '.join([*values, key])})," for key in keys)]
    return "\n".join([*lines, "}"])


@given(
    st.sampled_from(NAMES),
    st.lists(st.sampled_from(NAMES), min_size=1, max_size=4),
    st.lists(st.sampled_from(NAMES), max_size=4),
    st.lists(st.sampled_from(STRINGS), max_size=3),
    st.sampled_from(["", "tables", "a\rb = (", "x\x00", "–"]),
    WIDTHS,
)
def test_a_recognized_kernel_table_always_compiles(name, keys, values, strings, comment, width):
    """The recognizer stands in for compile on the tables it accepts: it must accept none
    that compile rejects (keywords as names or attributes, __debug__ as the target, quotes
    and backslashes in strings, a carriage return or NUL in a comment)."""
    block = python_layout.fit(table(name, keys, values, strings, comment), width)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes ('\\s'): a warning, not an error
            compile(block, "t.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):  # ValueError: a NUL
        assert not pycheck.is_kernel_tables(block)


@pytest.mark.parametrize("width", [30, 120])
def test_the_table_shape_is_recognized(width):
    block = table("UNARY", ["EXP", "ADD"], ["f", "g"], ["exp"], "tables")
    assert pycheck.is_kernel_tables(python_layout.fit(block, width))
    two = table("A", ["X"], ["f"], ["x"]) + "\n" + table("B", ["Y"], ["g"], ["y"], "the next") + "\n"
    assert pycheck.is_kernel_tables(two)


@pytest.mark.parametrize(
    ("output", "head"), [("kernels_hip.py", ": dict["), ("kernels_numpy.py", ": dict["), ("dtypes.py", "_DTYPES = {")]
)
def test_every_generated_kernel_table_is_recognized(output, head):
    """The shipped modules: every table takes the fast path (a change to the tables' shape
    would silently make every check compile them again)."""
    text = (REPO / "generated" / output).read_text(encoding="utf-8")
    blocks = [b for b in text.split("\n\n\n") if head in b.split("\n", 1)[0]]
    assert blocks and all(pycheck.is_kernel_tables(b) for b in blocks)
    # what is compiled holds no table's opening line (one-line derived maps, as UNARY_WHOLE, may be there)
    opening = re.compile(rf"^[A-Za-z_]\w*{re.escape(head)}(?:.*[{{(])?$", re.MULTILINE)
    assert not any(opening.search(piece) for piece in pycheck._pieces(text))


@pytest.mark.parametrize(("before", "after"), [("x = (", ")"), ('s = """', '"""'), ("class C:", "    z = 1")])
def test_a_table_inside_another_blocks_brackets_or_strings(before, after):
    blocks = module(100)
    blocks[50:50] = [before, table("T", ["X"], ["f"], ["x"]), after]
    text = "\n\n\n".join(blocks) + "\n"
    want, got = whole_error(text), check(text)
    assert (want is None) == (got is None)
    if want is not None:
        assert (got.line, got.col) == (want.lineno, want.offset)


# ---------------------------------------------------------------------------- Protocol stubs

ANNOTATIONS = ["int", "np.ndarray", "int | None", "tuple[int, ...]", "tuple[Buffer, tuple[int, ...]]", "None", "X.None"]


def protocol(name: str, stubs: list[tuple[str, list[tuple[str, str]], str]]) -> str:
    """A Protocol class of contract.py's shape: (stub name, [(parameter, annotation)], returns)."""
    lines = [f"class {name}(Protocol):", '    """cpu (runtime.cpu): kernels."""', ""]
    for i, (fn, params, returns) in enumerate(stubs):
        if i % 3 == 2:
            lines += ["", "    # a section"]
        args = "".join(f", {p}: {a}" for p, a in params) + (", /" if params else "")
        lines.append(f"    def {fn}(self{args}) -> {returns}: ...")
    return "\n".join(lines)


@given(
    st.sampled_from(NAMES),
    st.lists(
        st.tuples(
            st.sampled_from(NAMES),
            st.lists(st.tuples(st.sampled_from([*NAMES, "self"]), st.sampled_from(ANNOTATIONS)), max_size=4),
            st.sampled_from(ANNOTATIONS),
        ),
        max_size=4,
    ),
    WIDTHS,
)
def test_a_recognized_protocol_always_compiles(name, stubs, width):
    """The recognizer stands in for compile on the classes it accepts: it must accept none
    that compile rejects (keywords or __debug__ as names, None as a name or an attribute,
    a parameter twice or named self)."""
    block = python_layout.fit(protocol(name, stubs), width)
    try:
        compile(block, "p.py", "exec", dont_inherit=True)
    except SyntaxError:
        assert not pycheck.is_protocol(block)


@pytest.mark.parametrize("width", [40, 60, 120])
def test_the_protocol_shape_is_recognized(width):
    stubs = [("f", [("a", "int | None"), ("b", "tuple[int, ...]")], "str | None"), ("g", [], "None")]
    assert pycheck.is_protocol(python_layout.fit(protocol("CpuRuntime", stubs * 3), width))


def test_every_generated_protocol_is_recognized():
    """The shipped contract.py: every Protocol takes the fast path."""
    text = (REPO / "generated" / "contract.py").read_text(encoding="utf-8")
    blocks = [b for b in text.split("\n\n\n") if b.startswith("class ")]
    assert blocks and all(pycheck.is_protocol(b) for b in blocks)


# ----------------------------------------------------------------------------- large classes


def big_class(n_methods: int, head: str = 'class Storage:\n    """Doc."""\n\n    __slots__ = ("a",)') -> list[str]:
    """A class of many methods, as its head and its methods (each after a blank line)."""
    return [head, *(f"    def m{i}(self, x: int) -> int:\n        return x + {i}" for i in range(n_methods))]


def class_module(members: list[str]) -> str:
    return "\n\n\n".join([*module(3), "\n\n".join(members), *module(3, seed=1)[1:]]) + "\n"


CLASS_BREAKS = [
    "    def broken(self:\n        pass",  # a syntax error
    "    def dup(self, a, a):\n        pass",  # a symbol-table error
    "    x = [\n        1,",  # a bracket the rest cannot close
    "   half = 1",  # a dedent to no enclosing level
    "  def two(self):\n      pass",  # a method at another depth than the others
    "    def f(self):\n        nonlocal q",  # nonlocal without an enclosing binding
    "    return 1",  # return outside a function
]


@pytest.mark.parametrize("broken", CLASS_BREAKS)
@pytest.mark.parametrize("where", [1, 40, 99])
def test_a_large_class_rejects_what_compile_rejects_at_the_same_line(broken, where):
    members = big_class(100)
    members.insert(where, broken)
    text = class_module(members)
    assert len(pycheck._pieces(text)) > 3  # the class went in pieces
    want, got = whole_error(text), check(text)
    assert want is not None and got is not None
    assert (got.line, got.col) == (want.lineno, want.offset)


@pytest.mark.parametrize(
    "head",
    [
        "class Storage:\n  a = 1",  # a body at two spaces, the methods at four
        "class Storage(\n    Base,\n):\n  a = 1",  # a class line broken over lines
    ],
)
def test_a_large_class_whose_head_stands_elsewhere_is_compiled_whole(head):
    text = class_module(big_class(100, head))
    assert pycheck._class_pieces(text.split("\n\n\n")[3]) == []
    want, got = whole_error(text), check(text)
    assert want is not None and got is not None
    assert (got.line, got.col) == (want.lineno, want.offset)


@pytest.mark.parametrize(
    "joined",
    [
        '    s = """one\n\n    def two"""',  # a method's blank-line-led `def` inside a string
        "    x = (\n        1,\n\n    def\n    )",  # ... inside brackets: no statement boundary
        "    @property\n    def p(self):\n        return 1",  # a decorated method
        "    # a comment\n    def c(self):\n        return 1",
    ],
)
def test_a_large_class_accepts_what_compile_accepts(joined):
    members = big_class(100)
    members.insert(50, joined)
    text = class_module(members)
    want = whole_error(text)
    assert (want is None) == (check(text) is None)


def test_the_generated_storage_class_is_compiled_in_pieces():
    text = (REPO / "generated" / "storage.py").read_text(encoding="utf-8")
    (block,) = [b for b in text.split("\n\n\n") if b.startswith("class Storage")]
    pieces = pycheck._class_pieces(block)
    assert len(pieces) > 2 and all(compile(p, "storage.py", "exec", dont_inherit=True) for p in pieces)
