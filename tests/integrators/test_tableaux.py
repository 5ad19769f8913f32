"""Every integrator YAML builds, and every tableau satisfies its family's conditions."""

import dataclasses

import numpy as np
import pytest

from sgi_run.core.errors import ConfigError
from sgi_run.integrators.lda_prk import LdAPRKTableau

from tests.conftest import ROOT, integrator_config

integrator_config_of_file = integrator_config

NAMES = sorted(p.stem for p in (ROOT / "conf" / "integrator").glob("*.yaml"))


@pytest.mark.parametrize("name", NAMES)
def test_every_tableau_meets_its_conditions(name, make_integrator):
    integrator = make_integrator(name)
    residuals = integrator.tableau.conditions()
    assert residuals and max(abs(r) for r in residuals.values()) < 1e-14


@pytest.mark.parametrize("lam", [0.0, 0.3, 0.5, 1.0])
def test_dirk_is_variational_for_every_lambda(lam, make_integrator):
    make_integrator("dirk", parameters={"lam": lam})


def test_midpoint_tableau_values():
    t = LdAPRKTableau.from_config(integrator_config("midpoint")["tableau"], {})
    assert all(np.array_equal(getattr(t, m), [[0.5]]) for m in ("a", "abar", "ahat", "b", "bbar", "bhat"))


def test_a_tableau_breaking_the_variational_conditions_is_refused(make_integrator):
    cfg = integrator_config("dirk")
    tableau = dict(cfg["tableau"], abar=[[0.3, 0], [0.5, 0.25]])
    with pytest.raises(ConfigError, match=r"\(3\.16\)") as err:
        make_integrator("dirk", tableau=tableau)
    assert "\n" not in str(err.value)


def test_a_tableau_breaking_strong_order_is_refused(make_integrator):
    cfg = integrator_config("heun")
    with pytest.raises(ConfigError, match="beta"):
        make_integrator("heun", tableau=dict(cfg["tableau"], B=[[0, 0], [0.5, 0]]))


def test_e1_consumes_the_pair_and_heun_does_not(make_integrator):
    assert make_integrator("e1").noise_kind == "gaussian_pair"
    assert make_integrator("heun").noise_kind == "gaussian"


@pytest.mark.parametrize("name, system, unknowns", [
    ("heun", "Kubo", 0), ("midpoint", "Kubo", 2), ("dirk", "Kubo", 2), ("stormer_verlet", "Kubo", 2),
    ("srkw1", "Kubo", 2), ("srkw2", "Kubo", 12), ("svia", "LangevinHarmonic", 0),
    ("csvia", "SphericalPendulum", 0), ("csvia", "CirclePendulum", 2)])
def test_newton_unknowns_per_step_are_what_the_solve_takes(name, system, unknowns, make_integrator):
    """What the memory estimate counts an implicit solve by (its Jacobian grows as the square)."""
    import sgi_run.systems as systems
    assert make_integrator(name).newton_unknowns(getattr(systems, system)()) == unknowns


def test_newton_shake_on_the_sphere_solves_for_its_one_multiplier(make_integrator):
    from sgi_run.systems import SphericalPendulum
    assert make_integrator("csvia", shake="newton").newton_unknowns(SphericalPendulum()) == 1


@pytest.mark.parametrize("changes, key", [
    ({"parameters": {"lam": "abc"}}, "integrator.parameters.lam"), ({"parameters": {"lam": float("inf")}},
                                                                    "integrator.parameters.lam"),
    ({"tableau": None}, "integrator.tableau"), ({"tol": 0.0}, "integrator.tol"), ({"max_iter": True}, "integrator.max_iter")])
def test_bad_parameters_tableaux_and_options_name_their_key(changes, key, make_integrator):
    with pytest.raises(ConfigError) as err:
        make_integrator("dirk", **changes)
    assert str(err.value).startswith(f"{key}=")


@pytest.mark.parametrize("name", NAMES)
def test_integrator_config_builds_the_same_method_again(name, make_integrator):
    """The node of a bundled method is its file's; an integrator without one (dataclasses.replace) is described by
    its tableau's numbers, which build an equal tableau."""
    from sgi_run.integrators import integrator_config, make_integrator as build
    integrator = make_integrator(name)
    assert integrator_config(integrator) == integrator_config_of_file(name)
    rebuilt = build(integrator_config(dataclasses.replace(integrator)))
    assert dataclasses.replace(rebuilt, tableau=integrator.tableau) == integrator    # its class and options
    for field in dataclasses.fields(integrator.tableau):
        np.testing.assert_array_equal(getattr(rebuilt.tableau, field.name), getattr(integrator.tableau, field.name))
