import numpy as np
import pytest

from sgi_run.core.errors import ConfigError
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
    ("shards", 11), ("brownian_refine", 0), ("truncate", -1.0), ("fidelity", "huge"), ("observables", []),
])
def test_bad_values_are_refused_with_one_line(key, value):
    with pytest.raises(ConfigError) as err:
        Plan(**{**GOOD, key: value})
    message = str(err.value)
    assert message.startswith(f"plan.{key}=") and "\n" not in message
