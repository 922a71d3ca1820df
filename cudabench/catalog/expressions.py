"""Small integer arithmetic for kernel headers: `cdiv(N, TILE), min(M, 64) * 2`.

`//` and `%` round as Python's do (towards minus infinity), not as C's.

Parsed with Python's `ast` and evaluated over a whitelist, so a header can never run code.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Mapping

FUNCTIONS: dict[str, Callable[..., int]] = {
    "cdiv": lambda a, b: -(-a // b),
    "min": min,
    "max": max,
}
_BINOPS: dict[type[ast.operator], Callable[[int, int], int]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
}


class ExpressionError(ValueError):
    """An expression is not valid header arithmetic, or names an unknown variable."""


MAX_DEPTH = 64  # nesting a header's arithmetic may have: checking and evaluating recurse


def _parse(text: str) -> ast.expr:
    """Parse an expression, refusing one nested deeper than MAX_DEPTH (`1+1+...+1` of a
    thousand terms, `------1`), which would exhaust Python's recursion limit."""
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ExpressionError(f"cannot parse {text.strip()!r}: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise ExpressionError(f"nested more than {MAX_DEPTH} deep") from None
    pending: list[tuple[ast.AST, int]] = [(tree, 1)]
    while pending:  # a walk of its own, without recursion
        node, depth = pending.pop()
        if depth > MAX_DEPTH:
            raise ExpressionError(f"nested more than {MAX_DEPTH} deep")
        pending += [(child, depth + 1) for child in ast.iter_child_nodes(node)]
    return tree


def parse_tuple(text: str) -> tuple[ast.expr, ...]:
    """Parse `a, b, c` (one to three integer expressions) and check every node."""
    tree = _parse(text)
    parts = tuple(tree.elts) if isinstance(tree, ast.Tuple) else (tree,)
    if not 1 <= len(parts) <= 3:
        raise ExpressionError(f"expected 1 to 3 comma-separated values, got {len(parts)}")
    for part in parts:
        _check(part)
    return parts


_COMPARE: dict[type[ast.cmpop], Callable[[int, int], bool]] = {
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
}


def parse_condition(text: str) -> ast.Compare:
    """Parse `A <= B` (a chain too: `32 <= A * B <= 1024`) over header arithmetic."""
    tree = _parse(text)
    if not isinstance(tree, ast.Compare) or not all(type(op) in _COMPARE for op in tree.ops):
        raise ExpressionError("expected a comparison such as `BM * BN // (TM * TN) <= 1024` "
                              "(< <= > >= == != between integer arithmetic)")
    for part in (tree.left, *tree.comparators):
        _check(part)
    return tree


def holds(condition: ast.Compare, variables: Mapping[str, int]) -> bool:
    """Return whether a parsed comparison (chain) is true for variables."""
    left = _eval(condition.left, variables)
    for op, node in zip(condition.ops, condition.comparators):
        right = _eval(node, variables)
        if not _COMPARE[type(op)](left, right):
            return False
        left = right
    return True


@functools.lru_cache(maxsize=4096)  # a search plans each launch thousands of times
def names_in(nodes: tuple[ast.expr, ...]) -> frozenset[str]:
    """Return the variable names used by parsed expressions."""
    return frozenset(
        n.id for node in nodes for n in ast.walk(node)
        if isinstance(n, ast.Name) and n.id not in FUNCTIONS
    )


def evaluate(nodes: tuple[ast.expr, ...], variables: Mapping[str, int]) -> tuple[int, ...]:
    """Evaluate parsed expressions to integers."""
    return tuple(_eval(node, variables) for node in nodes)


def _check(node: ast.AST) -> None:
    if isinstance(node, ast.Constant):
        if not isinstance(node.value, int) or isinstance(node.value, bool):
            raise ExpressionError(f"only integer constants are allowed, not {node.value!r}")
    elif isinstance(node, ast.Name):
        pass
    elif isinstance(node, ast.BinOp):
        if type(node.op) not in _BINOPS:
            raise ExpressionError("allowed operators are + - * // % (use cdiv(a, b) to round up)")
        _check(node.left)
        _check(node.right)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        _check(node.operand)
    elif isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS or node.keywords:
            raise ExpressionError(f"allowed functions are {', '.join(sorted(FUNCTIONS))}")
        name, count = node.func.id, len(node.args)
        if (name == "cdiv" and count != 2) or count < 2:
            need = "two arguments" if name == "cdiv" else "at least two arguments"
            raise ExpressionError(f"{name} takes {need}, got {count}")
        for arg in node.args:
            _check(arg)
    else:
        raise ExpressionError(f"{type(node).__name__} is not allowed in header arithmetic")


def _eval(node: ast.expr, variables: Mapping[str, int]) -> int:
    if isinstance(node, ast.Constant):
        assert isinstance(node.value, int)  # _check admits integer constants only
        return node.value
    if isinstance(node, ast.Name):
        try:
            return int(variables[node.id])
        except KeyError:
            known = ", ".join(sorted(variables))
            raise ExpressionError(f"unknown name {node.id!r} (known: {known})") from None
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, variables), _eval(node.right, variables)
        if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and right == 0:
            raise ExpressionError("division by zero")
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        return -_eval(node.operand, variables)
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    args = [_eval(arg, variables) for arg in node.args]
    if node.func.id == "cdiv" and args[1] == 0:
        raise ExpressionError("division by zero in cdiv")
    return FUNCTIONS[node.func.id](*args)
