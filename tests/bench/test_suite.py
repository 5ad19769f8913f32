"""The suite file: every registry system is measured or said not to be, and its entries are checked."""
import pytest

from sgi_run.bench import suite
from sgi_run.composition import group_options
from sgi_run.core.errors import ConfigError


def test_every_system_option_is_in_the_suite_or_said_not_to_be():
    s = suite.read()
    named = {e.overrides[0].removeprefix("system=") for e in s.systems.values()} | set(s.not_benchmarked)
    assert set(group_options("system")) <= named
    assert not set(s.not_benchmarked) - set(group_options("system")), "a reason for a system that is gone"


def test_each_fidelity_runs_at_least_two_step_sizes_of_every_system():
    s = suite.read()
    for fidelity in s.fidelities.values():
        for entry in s.systems.values():
            assert len(entry.dts[:fidelity.levels]) >= 2


@pytest.mark.parametrize("change, key", [
    ({"dts": [0.1, 0.2]}, "x.dts"),
    ({"dts": [0.1]}, "x.dts"),
    ({"T": 0}, "x.T"),
    ({"truncate": "sometimes"}, "x.truncate"),
    ({"paths": 2}, "x.paths"),
    ({"colour": "red"}, "x.colour"),
    ({"overrides": ["kubo"]}, "x.overrides"),
])
def test_a_bad_entry_is_refused_in_one_line_naming_its_key(change, key):
    spec = {"overrides": ["system=kubo"], "T": 1.0, "dts": [0.2, 0.1], "observable": "H", "reference": "exact"} | change
    with pytest.raises(ConfigError) as err:
        suite.entry_of("x", spec)
    assert err.value.key == key and "\n" not in str(err.value)


def test_only_keeps_the_named_systems_and_refuses_an_unknown_one():
    s = suite.read()
    assert list(s.only(["rigid_body", "kubo_undamped"]).systems) == ["kubo_undamped", "rigid_body"]
    with pytest.raises(ConfigError, match="--systems"):
        s.only(["nonesuch"])
