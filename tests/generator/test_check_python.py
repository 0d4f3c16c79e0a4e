"""check_python compiles large generated modules in pieces (split at two blank lines) for speed.
It must accept and reject exactly what one compile of the whole text does, and place errors
where that compile places them."""

from __future__ import annotations

import random

import pytest

from generator.render import RenderError, check_python


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
    "def broken(:\n    pass",                  # a syntax error
    "def dup(a, a):\n    pass",                # a symbol-table error (compile, not the parser)
    "x = [\n    1,",                           # a bracket the rest of the text cannot close
    "from __future__ import annotations",      # a future import after other statements
    "  half = 1",                              # a dedent to no enclosing level
    "def f():\n    nonlocal q",                # nonlocal without an enclosing binding
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


@pytest.mark.parametrize("joined", [
    's = """one\n\n\ntwo"""',                   # two blank lines inside a string: a split that is no statement boundary
    "x = (\n    1,\n\n\n    2,\n)",             # ... inside brackets
    "@decorator\n\n\ndef h():\n    pass",     # ... between a decorator and its def
    "if c:\n    pass\n\n\nelse:\n    pass",   # ... between if and else
    "    more = 1",                            # a block that goes on with the def before it
])
def test_accepts_what_compile_accepts(joined):
    blocks = module(200)
    blocks.insert(100, joined)
    text = "\n\n\n".join(blocks) + "\n"
    assert whole_error(text) is None
    assert check(text) is None
