"""The one grammar of the arithmetic a config may write as text: a system's formulas (``systems.formula``) and an
integrator's tableau coefficients (``core.tableau``).

A text is read as data, never run: Python's ``ast`` parses it (``mode="eval"``) and ``build`` walks the tree over
a whitelist: numbers, names, ``+ - * / **``, unary minus (and plus), parentheses, the functions of ``FUNCTIONS``
and the constants of ``CONSTANTS``. Anything else (an attribute, a call of another name, a subscript, a lambda, a
comprehension, a string, a comparison) is ``Refused``, which the caller turns into its one ``ConfigError`` line
naming the key, the text and what is allowed. The text never reaches ``eval``.

What a node is worth is the caller's: an ``Arithmetic`` builds the value of each node the walk allows, from the
values of its children (a formula a sympy expression; a tableau a float64, step by step as Python computes it).
"""
from __future__ import annotations

import ast

# The functions a text may call, by the name it calls them, with their number of arguments.
FUNCTIONS = {"sin": 1, "cos": 1, "tan": 1, "exp": 1, "log": 1, "sqrt": 1, "tanh": 1, "sinh": 1, "cosh": 1,
             "abs": 1, "atan2": 2}
CONSTANTS = ("pi",)
# Past these a text is no expression a person typed: refused before the parser's recursion can run out.
MAX_LENGTH = 10_000
MAX_DEPTH = 200

OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}
_NOT_ALLOWED = {ast.Attribute: "an attribute (.)", ast.Subscript: "a subscript ([])", ast.Lambda: "a lambda",
                ast.ListComp: "a comprehension", ast.GeneratorExp: "a comprehension", ast.SetComp: "a comprehension",
                ast.DictComp: "a comprehension", ast.Compare: "a comparison", ast.BoolOp: "and/or"}


class Refused(Exception):
    """What the walk met that the grammar does not have: its text says what (``the name 'r'``, ``a lambda``)."""


class Arithmetic:
    """The value of each node the walk allows, given its children's values; a subclass says what a value is."""

    def number(self, value: int | float):
        """A literal (never a bool): its value, or ``Refused``."""
        raise NotImplementedError

    def name(self, name: str):
        """A name's value, or None where the caller has no such name (then a constant, else refused)."""
        raise NotImplementedError

    def constant(self, name: str):
        """The value of a name of ``CONSTANTS``."""
        raise NotImplementedError

    def negative(self, operand):
        raise NotImplementedError

    def binary(self, operator: str, left, right):
        """``left operator right``, the operator one of ``+ - * / **``."""
        raise NotImplementedError

    def call(self, function: str, arguments: list):
        """A function of ``FUNCTIONS`` at its arguments' values (as many as it takes)."""
        raise NotImplementedError


def syntax_tree(text: str) -> ast.expr:
    """The text's expression tree (Python's ``SyntaxError``, ``ValueError``, ``RecursionError`` where none)."""
    return ast.parse(text.strip(), mode="eval").body


def build(node: ast.expr, arithmetic: Arithmetic, depth: int = 0):
    """The value of the tree ``node`` by ``arithmetic``, node by node, children first (left before right);
    ``Refused`` at the first node the grammar does not have, or deeper than ``MAX_DEPTH``."""
    if depth > MAX_DEPTH:
        raise Refused(f"an expression nested more than {MAX_DEPTH} deep")
    down = lambda child: build(child, arithmetic, depth + 1)
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Refused(f"the constant {value!r} (a {type(value).__name__})")
        return arithmetic.number(value)
    if isinstance(node, ast.Name):
        value = arithmetic.name(node.id)
        if value is not None:
            return value
        if node.id in CONSTANTS:
            return arithmetic.constant(node.id)
        raise Refused(f"the name '{node.id}'")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = down(node.operand)
        return arithmetic.negative(operand) if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
        left, right = down(node.left), down(node.right)
        return arithmetic.binary(OPERATORS[type(node.op)], left, right)
    if isinstance(node, ast.Call):
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name not in FUNCTIONS:
            called = name if name is not None else ast.unparse(node.func)[:60]
            raise Refused(f"a call of '{called}'")
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args) or len(node.args) != FUNCTIONS[name]:
            raise Refused(f"{name} with other than {FUNCTIONS[name]} plain argument(s)")
        return arithmetic.call(name, [down(a) for a in node.args])
    raise Refused(_NOT_ALLOWED.get(type(node), f"Python's {type(node).__name__}"))
