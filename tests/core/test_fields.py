"""core.fields: the typed field validators every config reader uses."""
import math

import numpy as np
import pytest

from sgi_run.core import fields
from sgi_run.core.errors import ConfigError


@pytest.mark.parametrize("value", [True, math.inf, -math.inf, math.nan, "1", None, [1.0], 1j])
def test_a_finite_real_is_a_number_neither_bool_nor_infinite(value):
    assert not fields.is_real(value)
    with pytest.raises(ConfigError, match="not allowed: a finite number$"):
        fields.real("plan.dt", value)


@pytest.mark.parametrize("value", [0, 2, 0.5, np.float32(0.25), np.int64(3), np.float64(1e300)])
def test_a_finite_real_comes_back_as_a_float(value):
    assert fields.real("k", value) == float(value) and type(fields.real("k", value)) is float


def test_bounds_are_open_or_closed_as_named():
    assert fields.real("k", 1, above=0, at_most=1) == 1.0
    for bounds in ({"above": 1}, {"below": 1}, {"at_least": 1.5}, {"at_most": 0.5}):
        with pytest.raises(ConfigError):
            fields.real("k", 1, **bounds)
    assert fields.integer("k", 0, at_least=0, below=1) == 0
    with pytest.raises(ConfigError, match=r"^plan.seed=4294967296 is not allowed: an integer in \[0, 2\^32\)$"):
        fields.integer("plan.seed", 2**32, "an integer in [0, 2^32)", at_least=0, below=2**32)


@pytest.mark.parametrize("value", [True, 2.0, "3", None])
def test_an_integer_is_an_int_never_a_bool_or_a_float(value):
    with pytest.raises(ConfigError):
        fields.integer("k", value)


def test_probability_boolean_text_choice():
    assert fields.probability("p", 1) == 1.0
    with pytest.raises(ConfigError):
        fields.probability("p", -0.1)
    assert fields.boolean("b", np.bool_(True)) is True
    with pytest.raises(ConfigError):
        fields.boolean("b", 1)
    assert fields.text("t", "x") == "x"
    with pytest.raises(ConfigError):
        fields.text("t", "  ")
    assert fields.choice("c", "on", ("auto", "on")) == "on"
    with pytest.raises(ConfigError, match=r"not allowed: one of \['auto', 'on'\]$"):
        fields.choice("c", ["on"], ("auto", "on"))     # unhashable or listed: refused, not a TypeError


def test_auto_or_and_list_of():
    assert fields.auto_or(fields.integer, "k", "auto", "'auto' or an integer >= 1", at_least=1) == "auto"
    with pytest.raises(ConfigError, match="'auto' or an integer >= 1$"):
        fields.auto_or(fields.integer, "k", 0, "'auto' or an integer >= 1", at_least=1)
    assert fields.list_of("k", [1, 2.5], "numbers", item=fields.is_real) == (1, 2.5)
    for value in ("ab", [1, 1], [], [1, math.inf]):
        with pytest.raises(ConfigError):
            fields.list_of("k", value, "distinct finite numbers", item=fields.is_real, at_least=1, distinct=True)
