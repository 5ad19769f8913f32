import numpy as np
import pytest

from sgi_run.core.errors import ConfigError
from sgi_run.engine.convergence_plan import ConvergencePlan
from sgi_run.engine.plan import Plan

GOOD = dict(paths=10, dt=0.1, T=1.0, output_dt=0.5)


def test_grid_and_layout():
    p = Plan(**{**GOOD, "paths": 1000, "shards": 7})
    assert p.steps == 10 and p.steps_per_output == 5 and p.outputs == 2
    assert np.allclose(p.times, [0, 0.5, 1.0])
    assert p.paths_per_shard == 143 and p.shard_paths(6) == (858, 142)
    assert sum(p.shard_paths(s)[1] for s in range(7)) == 1000
    assert Plan(**{**GOOD, "paths": 25, "shard_size": 10}).shard_count == 3


def test_round_off_in_dt_is_tolerated():
    assert Plan(**{**GOOD, "dt": 0.1, "T": 0.3, "output_dt": 0.3}).steps == 3


@pytest.mark.parametrize("key, value", [
    ("paths", 0), ("paths", 2.5), ("dt", 0), ("dt", -0.1), ("T", -1.0), ("T", 1.05),
    ("output_dt", 0.15), ("output_dt", 0.3), ("keep_paths", -1), ("seed", -3), ("shards", 0),
    ("shards", 11), ("brownian_refine", 0), ("truncate", -1.0), ("observables", []),
])
def test_bad_values_are_refused_with_one_line(key, value):
    with pytest.raises(ConfigError) as err:
        Plan(**{**GOOD, key: value})
    message = str(err.value)
    assert message.startswith(f"plan.{key}=") and "\n" not in message


@pytest.mark.parametrize("key, value", [
    ("dt", 1e-320), ("dt", 1e-10), ("T", 1e300), ("paths", 2**32), ("keep_paths", 11), ("brownian_refine", 2**31)])
def test_what_random_numbers_cannot_address_or_the_plan_would_clamp_is_refused(key, value):
    with pytest.raises(ConfigError) as err:
        Plan(**{**GOOD, key: value})
    assert str(err.value).split("=")[0] in ("plan.dt", f"plan.{key}") and "\n" not in str(err.value)


def _fitted(**changes):
    from sgi_run.engine.convergence_plan import ConvergencePlan
    from sgi_run.integrators import make_integrator
    from sgi_run.systems import Kubo
    from tests.conftest import integrator_config
    system, integrator = Kubo(), make_integrator(integrator_config("midpoint"))
    plan = ConvergencePlan(**{"dts": [0.1, 0.05], **changes}).fitted_to(system, integrator)
    return system, integrator, plan


@pytest.mark.parametrize("key, value", [("paths", 10**12), ("bootstrap", 10**12), ("dts", [2e-300, 1e-300])])
def test_convergence_plans_beyond_what_can_be_addressed_or_resampled_are_refused(key, value):
    with pytest.raises(ConfigError) as err:
        _fitted(**{key: value})
    assert str(err.value).startswith(f"plan.{key}=") and "\n" not in str(err.value)


def test_an_observable_named_twice_is_refused():
    with pytest.raises(ConfigError) as err:
        Plan(**{**GOOD, "observables": ["H", "H"]})
    assert str(err.value).startswith("plan.observables=('H', 'H') is not allowed: ") and "distinct" in str(err.value)


@pytest.mark.parametrize("cls, given, message", [
    (Plan, {"paths": 100}, "plan.dt=None is not allowed: a plan that sets dt, T, output_dt (keys of the ensemble plan "
     "with no default; a plan file takes the keys it does not set from plan=default where it starts with 'defaults: "
     "[default, _self_]')"),
    (ConvergencePlan, {"paths": 100}, "plan.dts=None is not allowed: a plan that sets dts (keys of the convergence "
     "plan with no default; a plan file takes the keys it does not set from plan=convergence where it starts with "
     "'defaults: [convergence, _self_]')"),
])
def test_a_plan_missing_keys_it_needs_names_them_in_one_line(cls, given, message):
    """A plan file of one's own with only paths: was a TypeError traceback (missing positional arguments)."""
    with pytest.raises(ConfigError) as err:
        cls.from_mapping(given)
    assert str(err.value) == message
