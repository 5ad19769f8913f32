"""Bad input is one line: ``ConfigError`` and ``require``, the one check every layer refuses input with."""
import pytest

from sgi_run.core.errors import ConfigError, require


def test_require_refuses_in_one_line_naming_key_value_and_what_is_allowed():
    require("plan.dt", 0.1, True, "a number > 0")
    with pytest.raises(ConfigError) as err:
        require("plan.dt", -1, False, "a number > 0")
    assert str(err.value) == "plan.dt=-1 is not allowed: a number > 0"
    assert (err.value.key, err.value.value, err.value.allowed) == ("plan.dt", -1, "a number > 0")
    assert str(err.value.under("figure")) == "figure.plan.dt=-1 is not allowed: a number > 0"


def test_a_key_holding_a_line_break_is_shown_escaped_on_the_one_line():
    """A key of a user's file (a YAML key) may hold anything; the refusal stays one line."""
    err = ConfigError("fig1.yaml:panels[0].a\nb", 1, "a key of a mean panel")
    assert str(err) == "fig1.yaml:panels[0].a\\nb=1 is not allowed: a key of a mean panel"
    assert err.key == "fig1.yaml:panels[0].a\nb"
