"""The one grammar of config arithmetic (sgi_run/core/expressions.py): the walk allows its nodes and hands
their values to the caller's arithmetic."""
import pytest

from sgi_run.core import expressions
from sgi_run.core.expressions import FUNCTIONS, MAX_DEPTH, Refused, build, syntax_tree


class _Text(expressions.Arithmetic):
    """Each node as the text of its value's construction: what the walk hands over, in order."""

    def number(self, value):
        return repr(value)

    def name(self, name):
        return name if name in ("x", "pi") else None

    def constant(self, name):
        return f"<{name}>"

    def negative(self, operand):
        return f"(-{operand})"

    def binary(self, operator, left, right):
        return f"({left} {operator} {right})"

    def call(self, function, arguments):
        return f"{function}[{', '.join(arguments)}]"


def test_the_walk_builds_children_first_by_the_callers_arithmetic():
    text = "-x**2/3 + atan2(pi, +1.5) - sqrt(x)"
    assert build(syntax_tree(text), _Text()) == "((((-(x ** 2)) / 3) + atan2[pi, 1.5]) - sqrt[x])"
    assert build(syntax_tree("x - 2"), _Text()) == "(x - 2)"
    assert build(syntax_tree(" -x "), _Text()) == "(-x)"


def test_a_caller_name_comes_before_a_constant():
    class NoPi(_Text):
        def name(self, name):
            return None

    assert build(syntax_tree("pi"), _Text()) == "pi"
    assert build(syntax_tree("pi"), NoPi()) == "<pi>"


@pytest.mark.parametrize("text, refused", [
    ("y", "the name 'y'"), ("x.real", "an attribute"), ("x[0]", "a subscript"), ("lambda: 1", "a lambda"),
    ("[x for x in x]", "a comprehension"), ("x < 1", "a comparison"), ("x and x", "and/or"), ("'a'", "the constant 'a'"),
    ("True", "the constant True"), ("gamma(x)", "a call of 'gamma'"), ("sin(x, x)", "sin with other than 1"),
    ("sin(x=1)", "sin with other than 1"), ("x if x else x", "Python's IfExp"), ("-" * (MAX_DEPTH + 2) + "x", "nested"),
])
def test_the_walk_refuses_what_the_grammar_does_not_have(text, refused):
    with pytest.raises(Refused, match=refused.replace("(", r"\(").replace("[", r"\[")):
        build(syntax_tree(text), _Text())


def test_every_function_takes_its_arguments():
    for name, arity in FUNCTIONS.items():
        assert build(syntax_tree(f"{name}({', '.join(['x'] * arity)})"), _Text()) == f"{name}[{', '.join(['x'] * arity)}]"
