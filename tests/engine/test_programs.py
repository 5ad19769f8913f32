"""Compiled programs shared within a process by the value of what they close over (engine.programs)."""
import jax
import numpy as np
import pytest

from sgi_run.engine import programs
from sgi_run.engine.ensemble import run_shards
from sgi_run.engine.plan import Plan
from sgi_run.engine.simulate import Simulator
from sgi_run.systems import Kubo


def test_equal_values_share_a_program_and_other_values_do_not():
    built = []
    build = lambda: built.append(object()) or built[-1]
    first = programs.shared("test", (Kubo(), "midpoint"), build)
    assert programs.shared("test", (Kubo(), "midpoint"), build) is first       # an equal system: the same
    assert programs.shared("test", (Kubo(nu=0.3), "midpoint"), build) is not first
    assert programs.shared("test", (Kubo(), "heun"), build) is not first
    assert programs.shared("other test", (Kubo(), "midpoint"), build) is not first
    assert len(built) == 4


def test_an_object_that_cannot_be_pickled_gets_a_program_of_its_own():
    owner = lambda: None                      # a lambda cannot be pickled: never looked up, never shared
    built = [programs.shared("test", (owner,), object) for _ in range(2)]
    assert built[0] is not built[1]


def test_only_the_most_recently_used_programs_are_kept(monkeypatch):
    monkeypatch.setattr(programs, "KEPT_PROGRAMS", 2)
    monkeypatch.setattr(programs, "_programs", type(programs._programs)())
    first = programs.shared("test", (1,), object)
    programs.shared("test", (2,), object)
    assert programs.shared("test", (1,), object) is first                    # used again: kept
    programs.shared("test", (3,), object)                                    # (2,) dropped
    assert len(programs._programs) == 2 and programs.shared("test", (1,), object) is first


@pytest.mark.slow
def test_runs_of_a_step_size_scan_share_their_programs_and_other_systems_do_not(make_integrator):
    """Two step sizes of one system and method: the same program objects (traced once per shape), and each
    run's numbers are those of a run in a fresh process's state (no program reused). A system with other
    parameters gets programs of its own, and other numbers."""
    midpoint = make_integrator("midpoint")
    plan = lambda dt: Plan(paths=8, dt=dt, T=8 * dt, output_dt=4 * dt, keep_paths=8)
    sims = [Simulator(Kubo(), midpoint, plan(dt)) for dt in (0.1, 0.05)]
    assert sims[0]._steps is sims[1]._steps and sims[0]._statistics_of is sims[1]._statistics_of
    assert sims[0]._draws is sims[1]._draws and sims[0]._initial_states is sims[1]._initial_states
    shared = run_shards(sims[1], None)
    programs._programs.clear()
    jax.clear_caches()
    fresh = Simulator(Kubo(), midpoint, plan(0.05))
    alone = run_shards(fresh, None)
    assert np.array_equal(shared.kept["q"], alone.kept["q"]) and np.array_equal(shared.moments.mean, alone.moments.mean)
    other = Simulator(Kubo(nu=0.3), midpoint, plan(0.05))
    assert other._steps is not fresh._steps and other._draws is fresh._draws   # the same noise: the same draws
    assert not np.array_equal(run_shards(other, None).kept["q"], alone.kept["q"])
