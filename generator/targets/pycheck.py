"""Is a generated Python module valid? CPython's own `compile`, made cheaper for the large
modules of a big registry, with the same verdict and the same error position.

1. Pieces. A module is split at two blank lines into top-level blocks, and runs of blocks are
   compiled as pieces: one compile of the 2 MB launch-wrapper module of a 2,584-op registry
   took 0.45 s, the same text in pieces 0.27 s (compile grows faster than linearly with size).
   Pieces that each compile make a valid module when joined by blank lines: each closes its
   brackets, strings and blocks.
2. Launch wrappers. A block of exactly the launch wrapper's shape (`def launch_k(launch, grid,
   block, stream, a, b) -> None:` and one `launch(...)` call, every name a plain identifier,
   the parameters distinct; lines broken inside brackets as python_layout breaks them) is
   valid Python by its shape, and is not compiled: 7,864 of them were 80% of the compile
   time above. A block that differs in anything is compiled.
3. Kernel tables. A block of dict displays of exactly the kernel tables' shape (`UNARY:
   dict[UnaryOp, Kernel] = {` or `_UNARY_DTYPES = {`, and entries `Op.X: Kernel("x", {_F32:
   fn, ...}, None),`, `"op": {(Pattern.P, "f32", _F32): fn, ...},` or `Op.X: (DType.F32, DType.F64),`,
   names that are no keyword, plain ASCII strings, comments between tables) is valid Python
   by its shape, and is not compiled: kernels_hip.py's, kernels_numpy.py's and dtypes.py's
   tables were 0.2 s of compile for the 2,584-op registry. Every production of that grammar
   is valid Python wherever a statement may start: a name is never a keyword nor `__debug__`
   (`None` stands only where a value does), a callee is a name; strings hold no quote,
   backslash or control character. A block that differs in anything is compiled.
4. Protocol stubs. A class of exactly contract.py's Protocol shape (`class CpuRuntime(Protocol):`,
   a one-line docstring, then stubs `def f(self, a: T, b: U | None, /) -> tuple[int, ...]: ...`
   (their parameters broken over lines where long), comments and blank lines) is valid by its
   shape, with the same checks of its names and each stub's parameters distinct: the
   2,584-op registry's three Protocols were 0.09 s of compile.

5. Classes. A class with many methods (storage.py's Storage: 750 of them, one 320 kB block) is
   compiled as its head (the class line and the members before its first blank-line-led
   `def`) and runs of its methods, each run under a `class _:` line: the same statements at
   the same depth, in pieces that each close their brackets, strings and blocks. Only where
   the head's body stands at the methods' four spaces (else the joined class could be
   mis-indented though each piece is not).

Whenever a piece fails alone (a split inside a string, a block that goes on from the one
before), or a later piece holds a `__future__` import, the whole text goes to compile, which
also places the error."""

from __future__ import annotations

import functools
import keyword
import re

_BLOCKS_PER_PIECE = 32
_MEMBERS_PER_PIECE = 32  # methods of one class a piece: a 320 kB class took 0.09 s whole, 0.04 s in pieces
_MEMBER = "\n\n    def "  # a method after a blank line, at a class body's depth
_NAME = r"[^\W\d]\w*"  # an ASCII identifier: every pattern below is compiled with re.ASCII
# Inside brackets, as the formatter lays long lines out (python_layout): the items on one line,
# or each on its own; a comma before the closing bracket. Line breaks inside brackets never
# change what Python reads.
_SEP = r"(?:, |,\n +)"  # between two items
_OPEN = r"(?:\n +)?"  # after an opening bracket
_CLOSE = r"(?:,?\n *|,)?"  # before a closing bracket
_LAUNCH_WRAPPER = re.compile(
    rf"def (?P<name>{_NAME})\({_OPEN}launch{_SEP}grid{_SEP}block{_SEP}stream(?P<params>(?:{_SEP}{_NAME})*){_CLOSE}\)"
    rf" -> None:\n    launch\({_OPEN}_SRC_[A-Za-z0-9_]+{_SEP}\"{_NAME}\"{_SEP}grid{_SEP}block{_SEP}stream{_SEP}"
    rf"\({_OPEN}(?P<args>{_NAME}(?:{_SEP}{_NAME})*){_CLOSE}\){_SEP}_ARGS_[A-Za-z0-9_]+{_CLOSE}\)\n?",
    re.ASCII,
)
_SEPARATOR = re.compile(r",\s*")
_WRAPPER_OWN = ("launch", "grid", "block", "stream")
_RESERVED = frozenset([*keyword.kwlist, "__debug__"])  # names no parameter or call may have


def _kernel_tables() -> re.Pattern[str]:
    """The grammar of 3. above, as one regular expression over the whole block. Its names are
    any identifiers: _names_allowed_in_tables vets them after (a keyword test at each name
    made the pattern so large that compiling it took 0.1 s of every run)."""
    dotted = rf"{_NAME}(?:\.{_NAME})*"
    atom = rf"""(?:{dotted}|"[ !#-\[\]-~]*"|'[ -&(-\[\]-~]*')"""  # ASCII, no quote or backslash
    key = rf"(?:{atom}|\({_OPEN}{atom}(?:{_SEP}{atom})*{_CLOSE}\))"
    value = rf"(?:{dotted}\((?:{_OPEN}{atom}(?:{_SEP}{atom})*{_CLOSE})?\)|{atom})"
    kernel_entry = (
        rf"    {key}: {dotted}\(\n"
        rf"        {atom},\n"
        rf"        (?:\{{\n(?:            {key}: {value},\n)+        \}}|\{{\}}),\n"
        rf"        {value},\n"
        rf"    \),\n"
    )
    dict_entry = rf"    {key}: (?:\{{\n(?:        {key}: {value},\n)+    \}}|\{{\}}),\n"
    inner = rf"{dotted}(?:\[{dotted}(?:, {dotted})*\])?"  # str, dict[object, object]
    annotation = rf"{dotted}(?:\[{inner}(?:, {inner})*\])?"
    comment = r"#[ -~]*\n"  # printable ASCII: no \r, NUL or surrogate
    tuple_entry = rf"    {key}: \({_OPEN}{atom}(?:{_SEP}{atom})*{_CLOSE}\),\n"
    table = rf"(?:{comment})*{_NAME}(?:: {annotation})? = \{{\n(?:{kernel_entry}|{dict_entry}|{tuple_entry})*\}}"
    return re.compile(rf"(?:{table}(?:\n\n?(?!\n*\Z)|\n?\Z))+", re.ASCII)  # tables, blank lines between


_KERNEL_TABLES = _kernel_tables()
_COMMENT_LINE = re.compile(r"^#[^\n]*", re.MULTILINE)
_IDENTIFIER = re.compile(_NAME, re.ASCII)
_NOT_NAMES = _RESERVED - {"None"}  # None is a value; where it stands is checked apart
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def is_kernel_tables(block: str) -> bool:
    """Whether `block` is one or more kernel tables of the recognized shape (3. above)."""
    return _KERNEL_TABLES.fullmatch(block) is not None and _names_allowed_in_tables(block)


def _names_allowed_in_tables(block: str) -> bool:
    """Over a block of the tables' grammar: no name outside its comments is a keyword or
    __debug__, and None stands only as a value, never as a target (at the start of a line),
    an attribute or before one, a call or a subscript. Words inside strings count too: a
    keyword or a None there only sends the block to compile."""
    code = _COMMENT_LINE.sub("", block) if "#" in block else block
    if not _NOT_NAMES.isdisjoint(_IDENTIFIER.findall(code)):
        return False
    at = code.find("None")
    while at >= 0:
        before, after = code[at - 1 : at] if at else "\n", code[at + 4 : at + 5]
        alone = before not in _NAME_CHARS and after not in _NAME_CHARS  # None itself, not part of a name
        if alone and (before in ".\n" or (after and after in ".([")):
            return False
        at = code.find("None", at + 4)
    return True


def _protocol() -> re.Pattern[str]:
    """The grammar of 4. above, over the class's lines each ended by a newline. Annotations:
    names, unions, subscripts two deep, `...` inside a subscript."""
    dotted = rf"{_NAME}(?:\.{_NAME})*"
    term0 = rf"(?:{dotted}|\.\.\.)"
    union0 = rf"{term0}(?: \| {term0})*"
    term1 = rf"(?:{dotted}(?:\[{union0}(?:, {union0})*\])?|\.\.\.)"
    union1 = rf"{term1}(?: \| {term1})*"
    term2 = rf"{dotted}(?:\[{union1}(?:, {union1})*\])?"
    annotation = rf"{term2}(?: \| {term2})*"
    stub = (
        rf"    def {_NAME}\({_OPEN}self(?:{_SEP}{_NAME}: {annotation})*(?:{_SEP}/)?{_CLOSE}\) -> {annotation}: \.\.\."
    )
    docstring = r'    """[ !#-\[\]-~]*"""'  # ASCII, no quote or backslash
    return re.compile(rf"class {_NAME}\({dotted}\):\n{docstring}\n(?:(?:{stub}|    #[ -~]*|)\n)*", re.ASCII)


_PROTOCOL = _protocol()
_STUB_PARAMS = re.compile(r"^    def [^(]*\(\s*self([^)]*)\) -> ", re.MULTILINE)  # annotations hold no ")"
_PARAM_NAME = re.compile(rf"({_NAME}): ", re.ASCII)
_PROTOCOL_NOTES = re.compile(r'^    (?:#|""").*', re.MULTILINE)  # comment and docstring lines


def is_protocol(block: str) -> bool:
    """Whether `block` is one Protocol class of the recognized shape (4. above)."""
    if not block.startswith("class ") or _PROTOCOL.fullmatch(block + "\n") is None:
        return False
    code = _PROTOCOL_NOTES.sub("", block)
    for params in _STUB_PARAMS.findall(code):  # ", a: T, b: U, /": annotations hold no ": "
        names = ["self", *_PARAM_NAME.findall(params)]
        if len(set(names)) != len(names):
            return False
    code = code.removeprefix("class ").replace("\n    def ", "\n    ")  # the grammar's own keywords
    if not _NOT_NAMES.isdisjoint(_IDENTIFIER.findall(code)):
        return False
    at = code.find("None")
    while at >= 0:
        before, after = code[at - 2 : at], code[at + 4 : at + 5]
        alone = before[-1:] not in _NAME_CHARS and after not in _NAME_CHARS  # None itself, not in a name
        misplaced = before[-1:] == "." or after in (".", "(", "[") or (after == ":" and before in (", ", "(", "  "))
        if alone and misplaced:  # an attribute, a def, a subscript or call, a parameter (on a line of its own)
            return False
        at = code.find("None", at + 4)
    return True


def syntax_error(output: str, text: str) -> SyntaxError | None:
    """None when `text` is valid Python, else the SyntaxError of compiling it whole."""
    if _pieces_compile(output, text):
        return None
    try:
        compile(text, output, "exec", dont_inherit=True)
    except SyntaxError as exc:
        return exc
    return None


def is_launch_wrapper(block: str) -> bool:
    """Whether `block` is a launch wrapper whose every name may stand where it stands."""
    match = _LAUNCH_WRAPPER.fullmatch(block)
    if match is None:
        return False
    return match["name"] not in _RESERVED and _names_allowed(match["params"], match["args"])


@functools.cache
def _names_allowed(params: str, args: str) -> bool:
    """Whether a wrapper's parameters (", a, b": after its own) are distinct and neither they
    nor its arguments ("a, b") are reserved. A few hundred distinct lists stand for the
    thousands of wrappers: each is judged once."""
    names = [*_WRAPPER_OWN, *_SEPARATOR.split(params)[1:]]
    return (
        len(set(names)) == len(names) and _RESERVED.isdisjoint(names) and _RESERVED.isdisjoint(_SEPARATOR.split(args))
    )


def _pieces(text: str) -> list[str]:
    """Runs of consecutive blocks that are not launch wrappers, kernel tables or Protocols, at most
    _BLOCKS_PER_PIECE long: a piece never spans a recognized block, so none can hide inside
    another block's brackets or strings."""
    pieces: list[str] = []
    run: list[str] = []
    for block in text.split("\n\n\n"):
        if is_launch_wrapper(block) or is_kernel_tables(block) or is_protocol(block):
            if run:  # wrappers in a row leave nothing between them to compile
                pieces.append("\n\n\n".join(run))
            run = []
            continue
        members = _class_pieces(block)
        if members:
            if run:
                pieces.append("\n\n\n".join(run))
            pieces += members
            run = []
            continue
        run.append(block)
        if len(run) == _BLOCKS_PER_PIECE:
            pieces.append("\n\n\n".join(run))
            run = []
    pieces.append("\n\n\n".join(run))
    return pieces


def _class_pieces(block: str) -> list[str]:
    """A class of more than _MEMBERS_PER_PIECE methods as its head and runs of its methods,
    each under `class _:` (5. above); [] for any other block."""
    if not block.startswith("class ") or block.count(_MEMBER) <= _MEMBERS_PER_PIECE:
        return []
    statement, _, body = block.partition("\n")
    if not statement.endswith(":") or not body.startswith("    ") or body[4:5].isspace():
        return []  # a class line broken over lines, or a body not at four spaces
    head, *methods = block.split(_MEMBER)
    runs = (methods[i : i + _MEMBERS_PER_PIECE] for i in range(0, len(methods), _MEMBERS_PER_PIECE))
    return [head, *(f"class _:{_MEMBER[1:]}" + _MEMBER.join(run) for run in runs)]


def _pieces_compile(output: str, text: str) -> bool:
    pieces = _pieces(text)
    if any("__future__" in piece for piece in pieces[1:]):
        return False
    try:
        for piece in pieces:
            compile(piece, output, "exec", dont_inherit=True)
    except SyntaxError:
        return False
    return True
