"""The elementwise families (`unary:`, `binary:`, `cmp:`, `reduce:`): dtypes and the numpy and HIP
expressions of each op."""

from __future__ import annotations

import ast
import functools

from ... import model
from ..loader import Node
from ..spec import did_you_mean
from . import languages
from .backends import BackendChecks

# Names a numpy expression may use besides its operands.
NUMPY_NAMESPACES = frozenset({"np", "special"})


OPERANDS = {"unary": ("x",), "reduce": ("x",), "binary": ("x", "y"), "cmp": ("x", "y")}


@functools.lru_cache(maxsize=4096)
def expression_problem(expr: str, operands: tuple[str, ...]) -> str | None:
    """Why a numpy expression is unusable, or None. Registries repeat expressions: cached."""
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as exc:
        return f"numpy expression does not parse: {exc.msg} in {expr!r}"
    allowed = NUMPY_NAMESPACES | set(operands)
    used = set()
    for sub in ast.walk(tree):
        if isinstance(sub, ast.Name):
            if sub.id not in allowed:
                return f"numpy expression uses unknown name {sub.id!r}; allowed: {', '.join(sorted(allowed))}"
            used.add(sub.id)
        elif isinstance(sub, ast.Attribute) and sub.attr.startswith("_"):
            return f"numpy expression uses private attribute {sub.attr!r}"
        elif isinstance(sub, (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield)):
            return "numpy expression must be a plain expression"
    if not used & set(operands):
        return f"numpy expression does not use its operand{'s' if len(operands) > 1 else ''} {' and '.join(operands)}"
    return _namespace_problem(tree, expr)


def _namespace_problem(tree: ast.Expression, expr: str) -> str | None:
    """`np.NAME` / `special.NAME` must exist in the installed numpy / scipy.special; a call of a
    ufunc must pass it as many operands as it takes (its `nin`)."""
    calls = {id(sub.func): sub for sub in ast.walk(tree) if isinstance(sub, ast.Call)}
    for sub in ast.walk(tree):
        if not (isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name)):
            continue
        if sub.value.id not in NUMPY_NAMESPACES:
            continue
        names = languages.numpy_names(sub.value.id)
        if names is None:  # the library is not installed here: nothing to check against
            continue
        where = f"{sub.value.id}.{sub.attr}"
        if sub.attr not in names:
            module = languages.MODULES[sub.value.id]
            hint = did_you_mean(sub.attr, names)
            return f"numpy expression uses {where}, which {module} does not have{hint} in {expr!r}"
        problem = _arity_problem(calls.get(id(sub)), names[sub.attr], where)
        if problem:
            return f"{problem} in {expr!r}"
    return None


def _arity_problem(call: ast.Call | None, nin: int, where: str) -> str | None:
    """A ufunc (nin > 0) called with its operands positionally must get `nin` of them."""
    if call is None or not nin or call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    given = len(call.args)
    if given == nin:
        return None
    return f"numpy expression calls {where} with {given} argument{'s' if given != 1 else ''}; it takes {nin}"


@functools.lru_cache(maxsize=4096)
def hip_problem(expr: str, operands: tuple[str, ...]) -> str | None:
    """Why a HIP expression is not one C++ expression over its operands, or None."""
    problem, identifiers = languages.cxx_expression(expr)
    if problem is None and not identifiers & set(operands):
        return f"HIP expression does not use its operand{'s' if len(operands) > 1 else ''} {' and '.join(operands)}"
    return problem


class ElementwiseChecks(BackendChecks):
    def elementwise(self, family: str, dtypes, sets) -> list[model.Elementwise]:
        known = {d.name: d for d in dtypes}
        out = []
        for name, _, node in self.section(family):
            key = f"{family}.{name}"
            names: tuple[str, ...] = ()
            dtypes_node = node.get("dtypes")
            if dtypes_node is not None:
                names = self.dtype_names(dtypes_node, f"{key}.dtypes", set(known), sets)
            exprs = self.numpy_exprs(node.get("numpy"), f"{key}.numpy", OPERANDS[family])
            self.hip_expr(node.get("hip"), f"{key}.hip", OPERANDS[family])
            kinds = {k for k, _ in exprs}
            for dt in names:
                kind = known[dt].kind  # an invalid kind is reported at the dtype, not again here
                if "*" not in kinds and kind not in kinds and exprs and kind in ("uint", "int", "float"):
                    self.error(node.get("numpy"), f"{key}.numpy", f"no numpy expression for {dt} (kind {kind})")
            result = node.get("result")
            if result is not None and result.tag == "str" and result.value not in known:
                self.error(
                    result, f"{key}.result", f"unknown dtype {result.value!r}{did_you_mean(result.value, known)}"
                )
            out.append(
                model.Elementwise(
                    name,
                    family,
                    exprs,
                    self.text(node.get("hip")) or None,
                    names,
                    self.text(result) or ("u8" if family == "cmp" and "u8" in known else None) or None,
                    node.position.line,
                )
            )
        return out

    def numpy_exprs(self, node: Node | None, key: str, operands: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
        if node is None:
            return ()
        if node.tag == "str":
            pairs = [("*", node, key)]
        elif node.tag == "map":
            pairs = [(k, vn, f"{key}.{k}") for k, (_, vn) in node.value.items() if vn.tag == "str"]
        else:
            return ()
        out = []
        for kind, enode, ekey in pairs:
            if self.expression_ok(enode, ekey, operands):
                out.append((kind, enode.value.strip()))  # as expression_problem parsed it
        return tuple(out)

    def expression_ok(self, node: Node, key: str, operands: tuple[str, ...]) -> bool:
        problem = expression_problem(node.value, operands)
        if problem:
            self.error(node, key, problem)
        return problem is None

    def hip_expr(self, node: Node | None, key: str, operands: tuple[str, ...]) -> None:
        if node is None or node.tag != "str":
            return
        problem = hip_problem(node.value, operands)
        if problem:
            self.error(node, key, problem)
