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
