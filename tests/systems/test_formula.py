"""Systems written as formulas in the config (sgi_run/systems/formula/): the parser's whitelist and the
formula systems' numbers against the built-in systems they restate."""
import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgi_run
from sgi_run.config import build_system
from sgi_run.core.errors import ConfigError
from sgi_run.systems import LiePoissonSystem
from sgi_run.systems.formula import FormulaSystem, LiePoissonFormulaSystem, jax_function, parse

NAMES = ["q", "p", "beta"]


# --- the parser --------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, refused", [
    ("__import__('os').system('echo hi')", "a call of '__import__('os').system'"),
    ("q.__class__", "an attribute"),
    ("open('x')", "a call of 'open'"),
    ("lambda: 1", "a lambda"),
    ("[q for q in p]", "a comprehension"),
    ("'text'", "the constant 'text'"),
    ("r*q", "the name 'r'"),
    ("gamma(q)", "a call of 'gamma'"),
    ("q +* p", "a syntax error"),
    ("I*q", "the name 'I'"),
    ("1j*q", "the constant 1j"),
    ("sqrt(-1)*q", "not a complex or infinite number"),
    ("q/0", "not a complex or infinite number"),
    ("p[0]", "a subscript"),
    ("q if p else 1", "Python's IfExp"),
    ("sin(q, p)", "sin with other than 1"),
    ("10**10**10", "not a finite float64"),
    ("1e999*q", "not a finite float64"),
    ("p**2/2 + 1e200*1e200*q", "not the number 1.00e+400 (past float64's largest"),
    ("1e308*10", "not the number 1.00e+309 (past float64's largest"),
    ("-" * 300 + "q", "nested more than"),
    ("(" * 300 + "q" + ")" * 300, "too many nested parentheses"),
])
def test_the_parser_refuses_anything_but_the_whitelist_in_one_line(text, refused):
    with pytest.raises(ConfigError) as err:
        parse("H", text, NAMES)
    message = str(err.value)
    assert "\n" not in message and message.startswith("H=") and refused in message
    assert "the names q, p, beta" in message and "sin, cos" in message   # what is allowed


def test_the_parser_never_runs_the_text(tmp_path, monkeypatch):
    """The refused call of os.system would have made a file: the text is parsed, not run."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError):
        parse("H", "__import__('os').system('touch made')", NAMES)
    assert not (tmp_path / "made").exists()


def test_the_parser_reads_the_whitelist():
    import sympy
    q, p, beta = sympy.symbols("q p beta", real=True)
    expression = parse("H", "-beta*(p**2 + q**2)/2 + sin(q)*exp(p) - abs(q) + atan2(q, p) + pi + 0.1", NAMES)
    assert expression == (-beta * (p**2 + q**2) / 2 + sympy.sin(q) * sympy.exp(p) - sympy.Abs(q)
                          + sympy.atan2(q, p) + sympy.pi + sympy.Rational(1, 10))


def test_a_formula_function_is_float64_under_grad_jit_and_vmap():
    f = jax_function(parse("H", "beta*(p**2 + q**2)/2 + 0.1*cos(q)", NAMES), NAMES)
    value = f(0.7, -1.3, 0.5)
    assert jnp.asarray(value).dtype == jnp.float64
    assert float(value) == pytest.approx(0.5 * (0.7**2 + 1.3**2) / 2 + 0.1 * np.cos(0.7), rel=1e-15)
    grad = jax.jit(jax.grad(f, argnums=(0, 1)))(0.7, -1.3, 0.5)
    assert grad[0].dtype == jnp.float64
    np.testing.assert_allclose(grad, [0.5 * 0.7 - 0.1 * np.sin(0.7), 0.5 * -1.3], rtol=1e-15)
    batch = jax.vmap(f, in_axes=(0, 0, None))(jnp.array([0.7, 1.0]), jnp.array([-1.3, 2.0]), 0.5)
    assert batch.dtype == jnp.float64 and batch.shape == (2,)


def test_a_literal_is_the_float64_it_names():
    """0.1 + 0.2 is kept exact (3/10) and divides to the float64 nearest 0.3; a literal to 17 digits stays itself."""
    f = jax_function(parse("F", "0.30000000000000004*q", ["q"]), ["q"])
    assert float(f(1.0)) == 0.30000000000000004


# --- the system --------------------------------------------------------------------------------------
def test_a_dimension_mismatch_is_refused_in_one_line():
    with pytest.raises(ConfigError, match=r"^H='p\*\*2/2 \+ q\*\*2/2' .*the names q1, q2, p1, p2, .*not the name 'p'"):
        FormulaSystem(H="p**2/2 + q**2/2", noise=("q1",), dof=2)
    with pytest.raises(ConfigError, match=r"^F=.*a list of 2 formulas"):
        FormulaSystem(H="(p1**2 + p2**2 + q1**2 + q2**2)/2", noise=("q1",), F=("-p1",), dof=2)
    with pytest.raises(ConfigError, match=r"^noise_forcing=.*one forcing f_i per noise"):
        FormulaSystem(noise=("q", "p"), noise_forcing_formulas=("p",))


def test_a_parameter_no_formula_uses_is_refused_and_one_named_as_a_symbol_too():
    with pytest.raises(ConfigError, match=r"^zeta=0.3 .*a parameter its formulas use \(beta\)"):
        FormulaSystem(H="beta*p**2/2", parameters=(("beta", 1.0), ("zeta", 0.3)))
    with pytest.raises(ConfigError, match=r"^sin=1.0 "):
        FormulaSystem(parameters=(("sin", 1.0),))


@pytest.mark.parametrize("overrides, key", [
    (["system=kubo_formula", "system.H=q.__class__"], "system.H"),
    (["system=kubo_formula", "system.noise=[open(1)]"], "system.noise"),
    (["system=kubo_formula", "+system.zeta=0.3"], "system.zeta"),
    (["system=kubo_formula", "system.zeta=0.3"], "system.zeta"),
    (["system=kubo_formula", "system.parameters={beta: 1}"], "system.parameters"),
    (["system=kubo", "+system.zeta=0.3"], "system.zeta"),      # a built-in system takes no new key
])
def test_the_config_refuses_a_bad_formula_or_key_in_one_line(overrides, key):
    with pytest.raises(ConfigError) as err:
        sgi_run.compose(overrides)
    assert err.value.key == key and "\n" not in str(err.value)


@pytest.mark.parametrize("overrides, key", [
    (["system=custom", "system.H='p**2/2 + 1e200*1e200*q'"], "system.H"),
    (["system=custom", "system.noise=['1e308*10*p']"], "system.noise"),
    (["system=custom", "system.q0='1e200*1e200 + xi1'"], "system.q0"),
    (["system=custom_lie_poisson", "system.h='1e308*10*pi1**2'"], "system.h"),
    (["system=custom_langevin", "system.potential='1e200*1e200*q**2'"], "system.potential"),
])
def test_a_constant_past_float64s_largest_is_refused_in_one_line(overrides, key):
    """Exact arithmetic keeps 1e200*1e200 a number: refused before JAX meets it (an OverflowError traceback)."""
    with pytest.raises(ConfigError) as err:
        sgi_run.compose(overrides)
    assert err.value.key == key and "\n" not in str(err.value) and "past float64's largest" in str(err.value)


def test_a_parameter_can_be_added_on_the_command_line():
    cfg = sgi_run.compose(["system=custom", "+system.omega=4", "system.H=p**2/2 + omega*q**2/2"])
    system = build_system(cfg.system)
    np.testing.assert_array_equal(system.drift(jnp.array([0.5, 1.0])), [1.0, -2.0])


def test_the_formula_system_pickles_by_its_texts():
    system = build_system(sgi_run.compose(["system=kubo_formula"]).system)
    again = pickle.loads(pickle.dumps(system))
    assert again == system and hash(again) == hash(system)
    z = jnp.array([0.7, -1.3])
    np.testing.assert_array_equal(again.ito_drift(z), system.ito_drift(z))


def _pair(formula, builtin, overrides=()):
    return tuple(build_system(sgi_run.compose([f"system={name}", *overrides]).system) for name in (formula, builtin))


PAIRS = [("kubo_formula", "kubo", ()), ("van_der_pol_formula", "van_der_pol", ()),
         ("kubo_formula", "kubo", ("system.beta=0.3",)), ("van_der_pol_formula", "van_der_pol", ("system.sigma=0.4",)),
         ("langevin_double_well_formula", "langevin_double_well", ()),
         ("langevin_double_well_formula", "langevin_double_well", ("system.c=0.3", "system.beta=2", "system.mass=2"))]


@pytest.mark.parametrize("formula, builtin, overrides", PAIRS)
def test_a_formula_file_has_the_builtin_fields(formula, builtin, overrides):
    ours, theirs = _pair(formula, builtin, overrides)
    assert ours.noises == theirs.noises
    np.testing.assert_array_equal(ours.initial_state(None), theirs.initial_state(None))
    for z in np.random.default_rng(0).normal(size=(5, 2)) * 2:
        for field in ("drift", "noise_fields", "ito_drift", "energy"):
            np.testing.assert_allclose(getattr(ours, field)(jnp.asarray(z)), getattr(theirs, field)(jnp.asarray(z)),
                                       rtol=1e-13, atol=1e-15, err_msg=field)


@pytest.mark.parametrize("formula, builtin, overrides, method", [
    *[(*pair, method) for pair in PAIRS for method in ("midpoint", "heun")],
    *[("langevin_double_well_formula", "langevin_double_well", overrides, method)
      for overrides in ((), ("system.c=0.3", "system.beta=2")) for method in ("midpoint", "svia", "svic")]])
def test_a_formula_file_steps_as_the_builtin(formula, builtin, overrides, method, make_integrator):
    """300 steps on the same Brownian increments: the same path to round-off."""
    integrator, dt, steps = make_integrator(method), 0.01, 300
    dw = np.sqrt(dt) * np.random.default_rng(1).normal(size=(steps, 1, 1))

    def path(system):
        step = lambda z, xi: (integrator.step(system, z, dt, xi)[0],) * 2
        return jax.jit(lambda z0: jax.lax.scan(step, z0, jnp.asarray(dw))[1])(system.initial_state(None))

    ours, theirs = _pair(formula, builtin, overrides)
    np.testing.assert_allclose(path(ours), path(theirs), rtol=1e-13, atol=1e-14)


def test_a_parameter_override_is_the_builtin_with_that_parameter():
    ours, theirs = _pair("kubo_formula", "kubo", ("system.beta=0.3",))
    assert dict(ours.parameters)["beta"] == 0.3 == theirs.beta
    z = jnp.array([0.7, -1.3])
    np.testing.assert_allclose(ours.noise_fields(z), theirs.noise_fields(z), rtol=1e-15)
    assert not np.allclose(ours.noise_fields(z), _pair("kubo_formula", "kubo")[0].noise_fields(z))


def test_a_run_of_kubo_formula_is_the_run_of_kubo(runs_root):
    """Through the whole pipeline (config, engine, statistics) at the same seed."""
    common = runs_root + ["integrator=midpoint", "plan.dt=0.05", "plan.T=2", "plan.output_dt=1", "plan.paths=64",
                          "cache=off"]
    ours, theirs = (sgi_run.run(sgi_run.compose([f"system={name}", *common])).ensemble
                    for name in ("kubo_formula", "kubo"))
    np.testing.assert_allclose(ours.mean("H"), theirs.mean("H"), rtol=1e-13)
    np.testing.assert_allclose(ours.paths["q"], theirs.paths["q"], rtol=1e-13, atol=1e-14)


def test_two_degrees_of_freedom():
    """q1, p1, q2, p2 and a forcing per degree of freedom: two coupled oscillators."""
    system = FormulaSystem(H="(p1**2 + p2**2)/2 + (q1**2 + q2**2)/2 + k*q1*q2", noise=("s*q1", "s*p2"),
                           F=("-c*p1", "0"), noise_forcing_formulas=(("0", "0"), ("0", "c*q2")), dof=2,
                           q0=(1.0, 0.5), p0=0.0, parameters=(("c", 0.1), ("k", 0.2), ("s", 0.3)))
    z = jnp.array([1.0, 0.5, 0.3, -0.2])
    np.testing.assert_allclose(system.drift(z), [0.3, -0.2, -1.0 - 0.2 * 0.5 - 0.1 * 0.3, -0.5 - 0.2 * 1.0],
                               rtol=1e-15)
    np.testing.assert_allclose(system.noise_fields(z), [[0, 0, -0.3, 0], [0, 0.3, 0, 0.1 * 0.5]], rtol=1e-15)
    np.testing.assert_array_equal(system.initial_state(None), [1.0, 0.5, 0.0, 0.0])


@pytest.mark.parametrize("overrides", [(), ("system.beta=2",)])
def test_the_langevin_formula_has_the_builtins_force_and_boltzmann_gibbs_means(overrides):
    ours, theirs = _pair("langevin_double_well_formula", "langevin_double_well", overrides)
    for q in (-1.7, 0.2, 1.3):
        np.testing.assert_allclose(ours.potential_force(jnp.array([q])), theirs.potential_force(jnp.array([q])),
                                   rtol=1e-15)
    for observable in ("H", "two_H", "kinetic_temperature"):
        assert ours.ergodic_mean(observable) == pytest.approx(theirs.ergodic_mean(observable), rel=1e-11)
    assert ours.overdamped_svia_mean("two_H") == pytest.approx(theirs.overdamped_svia_mean("two_H"), rel=1e-11)


def test_a_langevin_potential_is_a_formula_of_the_positions_alone():
    with pytest.raises(ConfigError, match=r"^system.potential='q\*p' .*not the name 'p'"):
        sgi_run.compose(["system=custom_langevin", "system.potential=q*p"])
    cfg = sgi_run.compose(["system=custom_langevin", "+system.k=3", "system.potential='k*(1 - cos(q))'",
                           "integrator=svia"])
    np.testing.assert_allclose(build_system(cfg.system).potential_force(jnp.array([0.5])), [-3 * np.sin(0.5)],
                               rtol=1e-15)


def test_a_potential_that_does_not_confine_has_no_boltzmann_gibbs_mean():
    """exp(-beta U) of U = -q^2 is not integrable: no reference, rather than a wrong one."""
    system = build_system(sgi_run.compose(["system=custom_langevin", "system.potential=-q**2"]).system)
    assert system.ergodic_mean("H") is None


def _cli(tmp_path, *args):
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "sgi_run.cli", *args, f"output_root={tmp_path}/runs"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_a_formula_parameter_is_swept_and_cached_like_a_builtins(tmp_path):
    out = _cli(tmp_path, "-m", "system=kubo_formula", "system.beta=0.3,0.5", "plan.paths=16", "plan.T=1")
    assert out.returncode == 0, out.stderr
    assert len(list((tmp_path / "runs" / "custom-midpoint").glob("*/ensemble.h5"))) == 2
    again = _cli(tmp_path, "system=kubo_formula", "system.beta=0.3", "plan.paths=16", "plan.T=1")
    assert again.returncode == 0 and "cached" in again.stdout


def test_the_readmes_command_lines_compose(tmp_path):
    """As a shell passes them: Hydra reads a quoted formula with parentheses and spaces as one value."""
    out = _cli(tmp_path, "system=custom", "+system.omega=2", "system.H='p**2/2 + omega**2*q**2/2'",
               "system.noise=[0.1*q]", "--cfg", "job")
    assert out.returncode == 0, out.stderr
    assert "H: p**2/2 + omega**2*q**2/2" in out.stdout and "omega: 2" in out.stdout
    refused = _cli(tmp_path, "system=custom", "system.H='__import__(\"os\").system(\"echo hi\")'", "--cfg", "job")
    assert refused.returncode != 0 and refused.stderr.count("\n") == 1 and "system.H=" in refused.stderr
    assert "hi\n" not in refused.stdout


# --- Lie-Poisson systems of formulas (system=custom_lie_poisson) --------------------------------------------------
LP_PAIRS = [("rigid_body_formula", "rigid_body", ()), ("heavy_top_formula", "heavy_top", ()),
            ("rigid_body_formula", "rigid_body", ("system.inertia=[1.0,2.0,3.0]", "system.noise_amplitude=0.3")),
            ("heavy_top_formula", "heavy_top", ("system.inertia=[4.0,2.0,1.0]", "system.chi=[0.1,0.2,1.0]",
                                                "system.alpha=[0.1,0.0,0.2]", "system.gravity_sign=1"))]
LP_METHODS = ("tmk", "lp_midpoint", "lp_trapezoidal", "isomp", "lgvi_cayley")


def _random_states(system, count=4, seed=0):
    """States near the initial one (each leaf perturbed), for fields compared away from t = 0."""
    rng, z0 = np.random.default_rng(seed), system.initial_state(None)
    return [jax.tree.map(lambda x: x + rng.normal(size=x.shape), z0) for _ in range(count)]


def _assert_trees_close(a, b, **tolerance):
    jax.tree.map(lambda x, y: np.testing.assert_allclose(x, y, **tolerance), a, b)


@pytest.mark.parametrize("formula, builtin, overrides", LP_PAIRS)
def test_a_lie_poisson_formula_file_has_the_builtin_fields(formula, builtin, overrides):
    ours, theirs = _pair(formula, builtin, ("integrator=tmk", *overrides))
    assert ours.noises == theirs.noises and type(ours.algebra) is type(theirs.algebra)
    assert ours.space.leaves == theirs.space.leaves and ours.space.bare == theirs.space.bare
    _assert_trees_close(ours.initial_state(None), theirs.initial_state(None), rtol=0, atol=0)
    dw = jnp.array([0.3, -0.2, 0.5])[: ours.noises]
    for z in _random_states(ours):
        mu = ours.dual(z)
        _assert_trees_close(ours.drift(mu), theirs.drift(mu), rtol=1e-13, atol=1e-15)
        _assert_trees_close(ours.noise_action(z, dw), theirs.noise_action(z, dw), rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(ours.energy(z), theirs.energy(z), rtol=1e-14)
        np.testing.assert_allclose(ours.noise_hamiltonians(mu), theirs.noise_hamiltonians(mu), rtol=1e-14, atol=1e-16)
        for name, f in theirs.casimir_observables().items():
            assert float(ours.observables()[name](z)) == float(f(z))


@pytest.mark.parametrize("formula, builtin, overrides", LP_PAIRS[:2] + LP_PAIRS[3:])
@pytest.mark.parametrize("method", LP_METHODS)
def test_a_lie_poisson_formula_file_steps_as_the_builtin(formula, builtin, overrides, method, make_integrator):
    """100 steps on the same Brownian increments with every Lie-Poisson integrator that fits: the same path to
    round-off (isomp needs a matrix form, which se(3) has not: refused for both)."""
    integrator, dt, steps = make_integrator(method), 0.02, 100
    ours, theirs = _pair(formula, builtin, ("integrator=tmk", *overrides))
    if method == "isomp" and builtin == "heavy_top":
        for system in (ours, theirs):
            with pytest.raises(ConfigError, match="se3"):
                integrator.check_fits(system)
        return
    dw = np.sqrt(dt) * np.random.default_rng(1).normal(size=(steps, 1, ours.noises))

    def path(system):
        integrator.check_fits(system)
        step = lambda z, xi: (integrator.step(system, z, dt, xi)[0],) * 2
        return jax.jit(lambda z0: jax.lax.scan(step, z0, jnp.asarray(dw))[1])(system.initial_state(None))

    _assert_trees_close(path(ours), path(theirs), rtol=1e-13, atol=1e-14)


def test_a_run_of_rigid_body_formula_is_the_run_of_rigid_body(runs_root):
    """Through the whole pipeline (config, engine, statistics) at the same seed."""
    common = runs_root + ["integrator=tmk", "plan.dt=0.05", "plan.T=2", "plan.output_dt=1", "plan.paths=64",
                          "plan.observables=[H,C2,pi1]", "cache=off"]
    ours, theirs = (sgi_run.run(sgi_run.compose([f"system={name}", *common])).ensemble
                    for name in ("rigid_body_formula", "rigid_body"))
    for name in ("H", "C2", "pi1"):
        np.testing.assert_allclose(ours.mean(name), theirs.mean(name), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(ours.paths["pi"], theirs.paths["pi"], rtol=1e-13, atol=1e-14)


def test_a_vector_parameter_override_is_the_builtin_with_that_parameter():
    ours, theirs = _pair("rigid_body_formula", "rigid_body", ("integrator=tmk", "system.inertia=[1.0,2.0,3.0]"))
    assert dict(ours.parameters)["inertia"] == (1.0, 2.0, 3.0) == theirs.inertia
    z = jnp.array([0.7, -1.3, 0.4])
    np.testing.assert_allclose(ours.drift(z), theirs.drift(z), rtol=1e-15)
    assert not np.allclose(ours.drift(z), _pair("rigid_body_formula", "rigid_body", ("integrator=tmk",))[0].drift(z))


def test_a_vector_parameter_in_a_canonical_formula():
    """A list parameter is its entries k1 .. kn in every formula system (the same parameter code)."""
    system = FormulaSystem(H="p**2/2 + k1*q**2/2", noise=("k2*p",), parameters=(("k", [4.0, 0.5]),))
    assert system.parameters == (("k", (4.0, 0.5)),)
    np.testing.assert_allclose(system.drift(jnp.array([0.5, 1.0])), [1.0, -2.0], rtol=1e-15)
    cfg = sgi_run.compose(["system=custom", "+system.k=[4,0.5]", "system.H='p**2/2 + k1*q**2/2'", "system.noise=[k2*p]"])
    assert build_system(cfg.system) == system


def _so4():
    """so(4) written as formulas: Manakov's system (manakov.py) with n = 4, its moments d_ij = 1 .. 6."""
    from sgi_run.systems import Manakov
    builtin = Manakov(n=4, noise_amplitude=0.3)
    upper = np.asarray(builtin.initial_state(None))[np.triu_indices(4, 1)]
    pairs = ["12", "13", "14", "23", "24", "34"]
    ours = LiePoissonFormulaSystem(algebra_name="so(4)", h=" + ".join(f"m{ij}**2/{d}" for d, ij in enumerate(pairs, 1)),
                                   noise=tuple(f"a*m{ij}**2" for ij in pairs), pi0=None, m0=tuple(upper),
                                   parameters=(("a", 0.3),))
    return ours, builtin


class _WeightedSU3(LiePoissonSystem):
    """A hand-written su(3) system, H = 1/2 sum W_ij |M_ij|^2 and one noise h_1 = c Im M_11 + Re M_23."""
    W = np.array([[1.0, 2.0, 3.0], [2.0, 0.5, 4.0], [3.0, 4.0, 2.0]])

    @property
    def algebra(self):
        from sgi_run.core import lie
        return lie.MatrixAlgebra(3, complex=True)

    def hamiltonian(self, mu):
        return 0.5 * jnp.sum(jnp.asarray(self.W) * jnp.abs(mu) ** 2)

    def noise_hamiltonians(self, mu):
        return jnp.stack([0.2 * jnp.imag(mu[0, 0]) + jnp.real(mu[1, 2])])


def _su3():
    ours = LiePoissonFormulaSystem(
        algebra_name="su(3)", h="im11**2/2 + im22**2/4 + im33**2 + 2*(re12**2 + im12**2) + 3*(re13**2 + im13**2) "
                                "+ 4*(re23**2 + im23**2)", noise=("c*im11 + re23",), pi0=None,
        m0=(0.3, 1.0, 0.5, 0.2, 0.5, -0.1, 0.4, 1.0, -0.2), parameters=(("c", 0.2),))
    return ours, _WeightedSU3()


def test_the_matrix_coordinates_and_initial_state():
    ours, _ = _so4()
    assert ours._chart.symbols == ("m12", "m13", "m14", "m23", "m24", "m34")
    assert LiePoissonFormulaSystem(algebra_name="so(10)", h="m1_10", noise=("m9_10",), pi0=None)._chart.symbols[8] == "m1_10"
    su3, _ = _su3()
    assert su3._chart.symbols == ("im11", "re12", "im12", "re13", "im13", "im22", "re23", "im23", "im33")
    m = np.asarray(su3.initial_state(None))
    np.testing.assert_array_equal(m, [[0.3j, 1 + 0.5j, 0.2 + 0.5j], [-1 + 0.5j, -0.1j, 0.4 + 1j],
                                      [-0.2 + 0.5j, -0.4 + 1j, -0.2j]])
    names = su3.observables()
    assert float(names["re23"](m)) == 0.4 and float(names["im33"](m)) == -0.2


@pytest.mark.parametrize("systems", [_so4, _su3], ids=["so4", "su3"])
def test_a_matrix_formula_system_has_the_hand_written_fields(systems):
    """so(4) as Manakov's n = 4, su(3) as a hand-written system: a formula in the coordinates above the
    diagonal has the gradient of the matrix function it restates. H and the Casimirs are real."""
    ours, theirs = systems()
    ours.check()
    dw = jnp.array([0.3, -0.2, 0.5, 0.1, -0.4, 0.2])[: ours.noises]
    rng = np.random.default_rng(2)
    for _ in range(3):
        x = rng.normal(size=(ours.algebra.n,) * 2) + (1j * rng.normal(size=(3, 3)) if ours.algebra.complex else 0)
        z = ours.algebra.project(jnp.asarray(x))
        np.testing.assert_allclose(ours.energy(z), theirs.energy(z), rtol=1e-14)
        np.testing.assert_allclose(ours.drift(z), theirs.drift(z), rtol=1e-13, atol=1e-14)
        np.testing.assert_allclose(ours.noise_action(z, dw), theirs.noise_action(z, dw), rtol=1e-13, atol=1e-14)
        assert ours.energy(z).dtype == jnp.float64
        assert all(jnp.asarray(c).dtype == jnp.float64 for c in ours.algebra.casimirs(z).values())


@pytest.mark.parametrize("systems", [_so4, _su3], ids=["so4", "su3"])
def test_the_casimirs_of_a_matrix_formula_system_stay_under_isomp(systems, make_integrator):
    ours, _ = systems()
    integrator, dt, steps = make_integrator("isomp"), 0.02, 100
    integrator.check_fits(ours)
    dw = np.sqrt(dt) * np.random.default_rng(1).normal(size=(steps, 1, ours.noises))
    step = lambda z, xi: (integrator.step(ours, z, dt, xi)[0],) * 2
    z0 = ours.initial_state(None)
    zs = jax.jit(lambda z: jax.lax.scan(step, z, jnp.asarray(dw))[1])(z0)
    for name, f in ours.casimir_observables().items():
        np.testing.assert_allclose(jax.vmap(f)(zs), f(z0), rtol=1e-13, err_msg=name)
    assert np.ptp(np.asarray(jax.vmap(ours.energy)(zs))) > 1e-6        # the noise moves the energy


def test_the_lie_poisson_formula_system_pickles_by_its_texts():
    for system in (build_system(sgi_run.compose(["system=heavy_top_formula", "integrator=tmk"]).system), _su3()[0]):
        again = pickle.loads(pickle.dumps(system))
        assert again == system and hash(again) == hash(system)
        z = system.initial_state(None)
        _assert_trees_close(again.drift(again.dual(z)), system.drift(system.dual(z)), rtol=0, atol=0)
    assert _su3()[0] != _so4()[0]


@pytest.mark.parametrize("overrides, key, words", [
    (["system.algebra='sp(4)'"], "system.algebra", "one of so3, se3, so(n) or su(N)"),
    (["system.algebra='so(17)'"], "system.algebra", "from 2 to 16"),
    (["system.h=pi1*gamma1"], "system.h", "not the name 'gamma1'"),                # a symbol of se3 on so3
    (["system.h='sqrt(-1)*pi1'"], "system.h", "not a complex"),                      # not real
    (["system.noise=[]"], "system.noise", "a list of formulas"),
    (["system.pi0=[1,2]"], "system.pi0", "3 numbers: the initial pi on so3"),
    (["system.gamma0=[1,2,3]"], "system.gamma0", "null with algebra so3"),
    (["system.algebra=se3", "system.h=pi1*gamma3"], "system.gamma0", "3 numbers: the initial gamma on se3"),
    (["system.algebra='so(4)'", "system.h=m12**2", "system.noise=[m34]"], "system.m0",
     "6 numbers: the initial M on so(4) (m12, m13, .., m34, in that order)"),
    (["system.algebra='su(2)'", "system.h=im11**2", "system.noise=[re12]", "system.pi0=null",
      "system.m0=[1,0,0,1]"], "system.m0", "sums to 0 (traceless)"),
    (["system=rigid_body_formula", "system.inertia=[1,abc,3]"], "system.inertia", "a list of 1 to 1000 finite numbers"),
    (["system=rigid_body_formula", "system.inertia=2"], "system.inertia", "a list of numbers: the formulas use inertia1"),
    (["system=rigid_body_formula", "system.noise_amplitude=[1,2]"], "system.noise_amplitude", "a number"),
    (["system=rigid_body_formula", "+system.inertia1=2"], "system.inertia1", "inertia1 is also inertia's"),
    (["system=rigid_body_formula", "+system.zeta=[1,2]"], "system.zeta",
     "a parameter its formulas use (inertia (inertia1 .. inertia3), noise_amplitude)"),
    (["system=rigid_body_formula", "+system.pi=[1,2]"], "system.pi", "a parameter named as a formula names it"),
    (["system=heavy_top_formula", "+system.gamma=[1,2]"], "system.gamma", "gamma1 is also the state's"),
    (["system=heavy_top_formula", "+system.algebra_name=so3"], "system.algebra_name", "the key algebra"),
    (["system=heavy_top_formula", "integrator=isomp"], "integrator", "on se3"),
    (["system=heavy_top_formula", "system.R0=null"], "system.R0", "a known key"),
])
def test_the_lie_poisson_formula_config_refuses_in_one_line(overrides, key, words):
    args = overrides if overrides[0].startswith("system=") else ["system=custom_lie_poisson", *overrides]
    with pytest.raises(ConfigError) as err:
        sgi_run.compose([*args, "integrator=tmk"] if not any(a.startswith("integrator=") for a in args) else args)
    message = str(err.value)
    assert err.value.key == key and "\n" not in message and words in message, message


def test_the_documented_constrained_command_lines_compose():
    """README.md's and conf/system/custom_constrained_langevin.yaml's examples, as Hydra reads them."""
    sgi_run.compose(["system=circle_pendulum_formula", "integrator=csvia"])
    cfg = sgi_run.compose(["system=custom_constrained_langevin", "system.constraints=['q1**2 + q2**2 + q3**2 - 1']",
                           "integrator=csvia"])
    assert build_system(cfg.system).constraints == 1
    cfg = sgi_run.compose(["system=circle_pendulum_formula", "system.q0=['cos(2*pi*u1)','sin(2*pi*u1)',0]",
                           "integrator=csvia"])
    assert build_system(cfg.system).random_initial
    for args in (["system.q0='2 + 0.1*xi1'", "system.p0='sqrt(-2*log(1 - u1))*cos(2*pi*u2)'"], ["system.q0='2 + 0.1*xi1'"]):
        assert build_system(sgi_run.compose(["system=custom", *args]).system).random_initial


def test_the_documented_lie_poisson_command_lines_compose():
    """README.md's and conf/system/custom_lie_poisson.yaml's examples, as Hydra reads them."""
    sgi_run.compose(["system=custom_lie_poisson", "system.h='pi1**2/2 + pi2**2 + pi3**2/4'", "integrator=tmk"])
    sgi_run.compose(["system=rigid_body_formula", "system.inertia=[1,2,3]", "integrator=tmk"])
    cfg = sgi_run.compose(["system=custom_lie_poisson", "system.algebra='so(4)'", "system.pi0=null",
                           "system.m0=[1,0,0,0,0,1]", "system.h='m12**2 + m13**2/2 + m14**2/3 + m23**2/4 + m24**2/5 "
                           "+ m34**2/6'", "system.noise=[0.1*m12]", "integrator=isomp"])
    assert build_system(cfg.system).algebra.name == "so(4)"
    cfg = sgi_run.compose(["system=custom_lie_poisson", "system.algebra='so3 x so3'", "system.h='pi1_1**2/2 + pi2_2**2/2'",
                           "system.noise=[0.1*pi3_1, 0.1*pi3_2]", "system.pi0=[1,0,0,0,1,0]", "integrator=isomp"])
    assert build_system(cfg.system).algebra.name == "so3 x so3"


# --- constrained Langevin systems of formulas (system=custom_constrained_langevin) ---------------------------------
def _constrained_path(system, integrator, dt=0.02, steps=100, z0=None):
    dw = np.sqrt(dt) * np.random.default_rng(1).normal(size=(steps, 1, system.noises))
    integrator.check_fits(system)
    step = lambda z, xi: (integrator.step(system, z, dt, xi)[0],) * 2
    z0 = system.initial_state(None) if z0 is None else z0
    return np.asarray(jax.jit(lambda z: jax.lax.scan(step, z, jnp.asarray(dw))[1])(z0))


@pytest.mark.parametrize("overrides", [(), ("system.mass=[1,2,3]", "system.c=0.3", "system.beta=2")])
@pytest.mark.parametrize("method", ["csvia", "csvib", "csvic"])
def test_the_circle_pendulum_formula_steps_as_the_builtin(overrides, method, make_integrator):
    """The built-in circle solves its SHAKE step by Newton too: 100 steps on the same increments, the same path
    to round-off (a diagonal mass included)."""
    ours, theirs = _pair("circle_pendulum_formula", "circle_pendulum", ("integrator=csvia", *overrides))
    assert (ours.constraints, ours.noises, ours.kinetic_dimension) == (2, 3, 1) and not ours.unit_sphere
    z = jnp.array([0.6, -0.8, 0.0, 0.3, 0.2, 0.1])
    np.testing.assert_array_equal(ours.constraint_jacobian(z[:3]), theirs.constraint_jacobian(z[:3]))
    np.testing.assert_allclose(ours.energy(z), theirs.energy(z), rtol=1e-15)
    integrator = make_integrator(method)
    np.testing.assert_allclose(_constrained_path(ours, integrator), _constrained_path(theirs, integrator),
                               rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("method", ["csvia", "csvic"])
def test_the_spherical_pendulum_formula_agrees_with_the_builtin_within_the_shake_tolerance(method, make_integrator):
    """The built-in takes the closed-form SHAKE root on the unit sphere, a formula system Newton's, which stops at
    |g(q)| <= SHAKE_TOL (1 + |h mu|) = 1e-14: one step from the same state agrees within 10 SHAKE_TOL, and 100
    steps within 100 SHAKE_TOL; with integrator.shake=newton (the built-in's Newton path) to round-off."""
    from sgi_run.integrators.langevin_splitting import SHAKE_TOL
    ours, theirs = _pair("spherical_pendulum_formula", "spherical_pendulum", ("integrator=csvia",))
    closed, newton = make_integrator(method), make_integrator(method, shake="newton")
    z0 = jnp.array([0.6, 0.0, -0.8, 0.5, 0.3, 0.375])       # on the sphere, p tangent
    one = lambda system, integrator: _constrained_path(system, integrator, steps=1, z0=z0)
    np.testing.assert_allclose(one(ours, closed), one(theirs, closed), rtol=0, atol=10 * SHAKE_TOL)
    np.testing.assert_allclose(_constrained_path(ours, closed), _constrained_path(theirs, closed), rtol=0,
                               atol=100 * SHAKE_TOL)
    np.testing.assert_allclose(_constrained_path(ours, newton), _constrained_path(theirs, newton), rtol=1e-13,
                               atol=1e-14)


@pytest.mark.parametrize("overrides, key, words", [
    (["system.q0=[0.0,-0.9,0.0]"], "system.q0", "a point on the constraint manifold (|g(q0)| = 0.19)"),
    (["system.p0=[0.0,1.0,0.0]"], "system.p0", "a momentum tangent to the manifold"),
    (["system.constraints=[q1**2 + q2**2 + q3**2 - 1, q3*p3]"], "system.constraints", "not the name 'p3'"),
    (["system.constraints=[q1, q2, q3]"], "system.constraints", "a list of 1 to 2 formulas"),
    (["system.potential=q2*p1"], "system.potential", "not the name 'p1'"),
    (["+system.constraint_formulas=[q3]"], "system.constraint_formulas", "the key constraints"),
    (["integrator=svia"], "integrator", "Langevin systems with structure 'canonical'"),
    (["integrator=midpoint"], "integrator", "has structure 'constrained'"),
])
def test_the_constrained_formula_config_refuses_in_one_line(overrides, key, words):
    args = ["system=circle_pendulum_formula", *overrides]
    with pytest.raises(ConfigError) as err:
        sgi_run.compose(args if any(a.startswith("integrator=") for a in args) else [*args, "integrator=csvia"])
    message = str(err.value)
    assert err.value.key == key and "\n" not in message and words in message, message


def test_constraints_on_the_flat_langevin_formula_name_the_constrained_one():
    with pytest.raises(ConfigError) as err:
        sgi_run.compose(["system=custom_langevin", "+system.constraints=[q]", "integrator=svia"])
    assert err.value.key == "system.constraints" and "system=custom_constrained_langevin" in str(err.value)


def test_the_constrained_integrators_fit_and_the_refusal_lists_the_formula_system():
    for name in ("csvia", "csvib", "csvic"):
        sgi_run.compose(["system=custom_constrained_langevin", f"integrator={name}"])
    with pytest.raises(ConfigError, match="custom_constrained_langevin") as err:
        sgi_run.compose(["system=langevin_double_well", "integrator=csvia"])
    assert "spherical_pendulum" in str(err.value)


def test_a_run_of_circle_pendulum_formula_is_the_run_of_circle_pendulum(runs_root):
    """Through the whole pipeline (config, engine, SHAKE counts, statistics) at the same seed."""
    common = runs_root + ["integrator=csvic", "plan.dt=0.05", "plan.T=1", "plan.output_dt=0.5", "plan.paths=32",
                          "plan.observables=[H,q2]", "cache=off"]
    ours, theirs = (sgi_run.run(sgi_run.compose([f"system={name}", *common])).ensemble
                    for name in ("circle_pendulum_formula", "circle_pendulum"))
    for name in ("H", "q2"):
        np.testing.assert_allclose(ours.mean(name), theirs.mean(name), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(ours.paths["q1"], theirs.paths["q1"], rtol=1e-13, atol=1e-14)


# --- initial laws as formulas (xi1, xi2, .. standard normals; u1, u2, .. uniform on [0, 1)) -----------------------
LAW = ["system=custom", "system.q0='2 + 0.5*xi1'", "system.p0='sqrt(-2*log(1 - u1))*cos(2*pi*u2)'"]


def test_an_initial_law_has_its_mean_and_variance_over_the_paths(runs_root):
    """Through the engine (each path's start from its own key): q0 = 2 + 0.5 xi1 is N(2, 1/4), p0 by Box-Muller
    N(0, 1); the means and variances at t = 0 over 4000 paths within 4 standard errors."""
    n = 4000
    ensemble = sgi_run.run(sgi_run.compose([*LAW, *runs_root, "integrator=midpoint", "plan.dt=0.1", "plan.T=0.1",
                                            "plan.output_dt=0.1", f"plan.paths={n}", "plan.observables=[q,p]", "cache=off"])).ensemble
    for name, mean, var in (("q", 2.0, 0.25), ("p", 0.0, 1.0)):
        assert abs(ensemble.mean(name)[0] - mean) <= 4 * np.sqrt(var / n), name
        assert abs(ensemble.var(name)[0] - var) <= 4 * var * np.sqrt(2 / (n - 1)), name


def test_an_initial_law_is_the_same_whatever_the_shards(runs_root):
    common = [*LAW, *runs_root, "integrator=midpoint", "plan.dt=0.1", "plan.T=0.1", "plan.output_dt=0.1",
              "plan.paths=24", "cache=off"]
    one, four = (sgi_run.run(sgi_run.compose([*common, f"plan.shards={k}"])).ensemble for k in (1, 4))
    for name in ("q", "p"):
        assert np.ptp(one.paths[name][:, 0]) > 0.1          # random indeed
        np.testing.assert_array_equal(one.paths[name], four.paths[name])


def test_an_initial_law_is_drawn_from_the_paths_key_and_a_number_stays_a_number():
    system = build_system(sgi_run.compose([*LAW, "+system.s=0.5", "system.q0='2 + s*xi1'"]).system)
    assert system.random_initial and system.q0 == "2 + s*xi1"
    key = jax.random.key(7)
    np.testing.assert_array_equal(system.initial_state(key), system.initial_state(key))
    assert not np.array_equal(system.initial_state(key), system.initial_state(jax.random.key(8)))
    xi = jax.random.normal(jax.random.split(key)[0], (1,), jnp.float64)
    assert float(system.initial_state(key)[0]) == float(2 + 0.5 * xi[0])
    deterministic = build_system(sgi_run.compose(["system=kubo_formula", "system.q0=2"]).system)
    assert deterministic.q0 == 2.0 and isinstance(deterministic.q0, float) and not deterministic.random_initial
    np.testing.assert_array_equal(deterministic.initial_state(None), [2.0, 0.0])
    with pytest.raises(ValueError, match="a random initial law"):
        system.initial_state(None)


@pytest.mark.parametrize("overrides, key, words", [
    (["system.q0=xi0"], "system.q0", "not the name 'xi0'"),
    (["system.q0=z1"], "system.q0", "not the name 'z1'"),
    (["system.p0=q*xi1"], "system.p0", "not the name 'q'"),
    (["system.q0=xi1001"], "system.q0", "at most xi1000"),
    (["system.q0=[xi1,xi2]"], "system.q0", "one number or 1 numbers"),
    (["+system.u=[1,2]", "system.H='u1*p**2 + q**2'"], "system.u", "u1 is also an initial law's random variable"),
])
def test_an_initial_law_refuses_in_one_line(overrides, key, words):
    with pytest.raises(ConfigError) as err:
        sgi_run.compose(["system=custom", *overrides])
    message = str(err.value)
    assert err.value.key == key and "\n" not in message and words in message, message
    if "xi0" in message:
        assert "xi1, xi2, .. (independent standard normals), u1, u2, .. (uniform on [0, 1))" in message


def test_a_random_start_on_the_manifold_is_checked_on_draws():
    """A constraint holds on every draw or is refused: checked on CHECKED_DRAWS draws of keys of its own."""
    on = ["system.q0=['cos(2*pi*u1)', 'sin(2*pi*u1)', 0]", "system.p0=['-xi1*sin(2*pi*u1)', 'xi1*cos(2*pi*u1)', 0]"]
    system = build_system(sgi_run.compose(["system=circle_pendulum_formula", *on, "integrator=csvia"]).system)
    z = system.initial_state(jax.random.key(1))
    assert system.random_initial and abs(float(system.constraint(z[:3])[0])) < 1e-15
    for off, key in ((["system.q0=[xi1,xi2,0]"], "system.q0"), ([on[0], "system.p0=[xi1,xi2,0]"], "system.p0")):
        with pytest.raises(ConfigError) as err:
            sgi_run.compose(["system=circle_pendulum_formula", *off, "integrator=csvia"])
        assert err.value.key == key and "\n" not in str(err.value)


def test_a_lie_poisson_initial_law():
    """so3: pi0 in xi; su(2): a random diagonal that sums to 0 on every draw, and one that does not (refused)."""
    cfg = sgi_run.compose(["system=rigid_body_formula", "system.pi0=[xi1,'0.5*xi2',u1]", "integrator=tmk"])
    system = build_system(cfg.system)
    pi = np.asarray(jax.vmap(system.initial_state)(jax.random.split(jax.random.key(0), 2000)))
    assert pi.shape == (2000, 3) and abs(pi[:, 1].std() - 0.5) < 0.05 and 0 <= pi[:, 2].min() and pi[:, 2].max() < 1
    su2 = ["system=custom_lie_poisson", "system.algebra='su(2)'", "system.h=im11**2", "system.noise=[re12]",
           "system.pi0=null", "integrator=tmk"]
    m = build_system(sgi_run.compose([*su2, "system.m0=[xi1,u1,xi2,'-xi1']"]).system).initial_state(jax.random.key(2))
    assert float(jnp.abs(jnp.trace(m))) == 0.0
    with pytest.raises(ConfigError, match=r"^system.m0=.*sums to 0 \(traceless\)"):
        sgi_run.compose([*su2, "system.m0=[xi1,u1,xi2,xi3]"])


# --- product algebras (algebra: so3 x so3, lie.Product) --------------------------------------------------------------
def _two_bodies():
    """Two decoupled rigid bodies (Ephrati et al.'s (2024) quadratic noise) on so3 x so3, and each as the built-in rigid_body."""
    from sgi_run.systems import RigidBody
    body = lambda k, inertia: f"(pi1_{k}**2/{inertia}1 + pi2_{k}**2/{inertia}2 + pi3_{k}**2/{inertia}3)/2"
    first, second = RigidBody(), RigidBody(inertia=(1.0, 2.0, 3.0), pi0=(0.0, 0.6, 0.8))
    ours = LiePoissonFormulaSystem(
        algebra_name="so3 x so3", h=f"{body(1, 'I')} + {body(2, 'J')}",
        noise=tuple(f"a*pi{i}_{k}**2/2" for k in (1, 2) for i in (1, 2, 3)), pi0=first.pi0 + second.pi0,
        parameters=(("I", first.inertia), ("J", second.inertia), ("a", 0.1)))
    return ours, first, second


def test_a_product_algebra_has_per_factor_symbols_states_and_casimirs():
    ours, first, second = _two_bodies()
    ours.check()
    assert ours._chart.symbols == ("pi1_1", "pi2_1", "pi3_1", "pi1_2", "pi2_2", "pi3_2")
    assert ours.algebra.name == "so3 x so3" and ours.invariants() == ("C2_1", "C2_2") and ours.noises == 6
    z = ours.initial_state(None)
    np.testing.assert_array_equal(z["pi_1"], first.initial_state(None))
    np.testing.assert_array_equal(z["pi_2"], second.initial_state(None))
    names = ours.observables()
    assert float(names["pi2_2"](z)) == 0.6 and float(names["C2_2"](z)) == pytest.approx(1.0, rel=1e-15)
    assert not any(name.startswith("pi_") for name in names)
    np.testing.assert_allclose(ours.energy(z), first.energy(first.initial_state(None)) + second.energy(
        second.initial_state(None)), rtol=1e-15)


@pytest.mark.parametrize("method", ["tmk", "lp_midpoint", "isomp"])
def test_two_decoupled_rigid_bodies_on_so3_x_so3_step_as_two_builtin_runs(method, make_integrator):
    """100 steps, the first three increments to body 1, the others to body 2: each factor's path is the built-in's
    path to round-off (isomp too: a product of matrix algebras has a matrix form), and under isomp the Casimirs
    C2_1, C2_2 stay to round-off."""
    ours, first, second = _two_bodies()
    integrator, dt, steps = make_integrator(method), 0.02, 100
    dw = np.sqrt(dt) * np.random.default_rng(1).normal(size=(steps, 1, 6))

    def path(system, increments):
        integrator.check_fits(system)
        step = lambda z, xi: (integrator.step(system, z, dt, xi)[0],) * 2
        return jax.jit(lambda z0: jax.lax.scan(step, z0, jnp.asarray(increments))[1])(system.initial_state(None))

    zs = path(ours, dw)
    np.testing.assert_allclose(zs["pi_1"], path(first, dw[..., :3]), rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(zs["pi_2"], path(second, dw[..., 3:]), rtol=1e-13, atol=1e-14)
    if method == "isomp":
        z0 = ours.initial_state(None)
        for name, f in ours.casimir_observables().items():
            np.testing.assert_allclose(jax.vmap(f)(zs), f(z0), rtol=1e-13, err_msg=name)


def test_a_product_algebra_from_the_config():
    """so3 x se3 x so(3): keys pi0 (the so3 and se3 factors' pi, in factor order), gamma0, m0; refusals name the
    product's coordinates."""
    base = ["system=custom_lie_poisson", "system.algebra='so3 x se3 x so(3)'", "integrator=tmk",
            "system.h='pi1_1**2 + pi2_2*gamma3_2 + m12_3**2'", "system.noise=[pi1_1, m23_3]"]
    system = build_system(sgi_run.compose([*base, "system.pi0=[1,0,0,0,1,0]", "system.gamma0=[0,0,1]",
                                           "system.m0=[1,2,3]"]).system)
    z = system.initial_state(None)
    assert sorted(z) == ["M_3", "gamma_2", "pi_1", "pi_2"] and not system.algebra.matrix_form
    assert set(system.invariants()) == {"C2_1", "C1_2", "C2_2", "C2_3"}
    np.testing.assert_array_equal(z["M_3"], [[0, 1, 2], [-1, 0, 3], [-2, -3, 0]])
    with pytest.raises(ConfigError) as err:
        sgi_run.compose([*base, "system.pi0=[1,0,0]", "system.gamma0=[0,0,1]", "system.m0=[1,2,3]"])
    assert err.value.key == "system.pi0" and "6 numbers: the initial pi on so3 x se3 x so(3) (pi1_1, pi2_1, .., pi3_2" \
        in str(err.value)
    for algebra in ("'so3 x sp(4)'", "'so3 x'", "'so3 x so(17)'"):
        with pytest.raises(ConfigError, match="or a product a x b x"):
            sgi_run.compose(["system=custom_lie_poisson", f"system.algebra={algebra}", "integrator=tmk"])


# --- invariants a formula system declares (plan.invariants=declared) -------------------------------------------------
@pytest.mark.parametrize("overrides, declared", [
    (["system.nu=0"], ("H",)),                                       # no forcing, h = beta H commutes with H
    ([], ()),                                                        # the default nu: F = -nu p damps H
    (["system.nu=0", "system.noise=[0.1*q]"], ()),                   # {H, 0.1 q} = -0.1 p
    (["system.nu=0", "system.noise=['beta*(p**2 + q**2)**2']"], ("H",)),               # a function of H commutes
])
def test_a_canonical_formula_system_declares_h_where_the_flow_keeps_it(overrides, declared):
    assert build_system(sgi_run.compose(["system=kubo_formula", *overrides]).system).invariants() == declared


def test_two_degrees_of_freedom_declare_h_with_a_commuting_noise():
    """The isotropic oscillator keeps H under rotations (the angular momentum commutes with H), not under a shear."""
    H = "(p1**2 + p2**2 + q1**2 + q2**2)/2"
    assert FormulaSystem(H=H, noise=("a*(q1*p2 - q2*p1)",), dof=2, parameters=(("a", 0.1),)).invariants() == ("H",)
    assert FormulaSystem(H=H, noise=("a*q1*p2",), dof=2, parameters=(("a", 0.1),)).invariants() == ()
    assert FormulaSystem(H=H, noise=("a*(q1*p2 - q2*p1)",), F=("0", "a - 0.1"), dof=2,
                         parameters=(("a", 0.1),)).invariants() == ("H",)     # F = 0 once a = 0.1 is substituted


def test_undamped_kubo_formula_declares_h_and_midpoint_keeps_it(make_integrator):
    """Through a convergence study's plan: declared at nu = 0 (midpoint keeps the quadratic H to round-off on every
    path), refused at the default nu, as the built-in Kubo."""
    from sgi_run.engine.convergence import study
    from sgi_run.engine.convergence_plan import ConvergencePlan
    midpoint = make_integrator("midpoint")
    undamped = build_system(sgi_run.compose(["system=kubo_formula", "system.nu=0"]).system)
    plan = ConvergencePlan(dts=[0.125, 0.0625], paths=20, T=1.0, bootstrap=0, invariants="declared")
    kept = study(undamped, midpoint, plan.fitted_to(undamped, midpoint))[0]
    assert kept.invariants == ("H",) and np.all(kept.drift_max < 1e-13), kept.drift_max
    with pytest.raises(ConfigError, match="^plan.invariants='declared' .*FormulaSystem declares no invariant"):
        plan.fitted_to(build_system(sgi_run.compose(["system=kubo_formula"]).system), midpoint)


@pytest.mark.parametrize("config, key", [
    ({"name": "custom_lie_poisson", "algebra": 3}, "system.algebra"),
    ({"name": "custom_constrained_langevin", "constraints": [[1]]}, "system.constraints"),
    ({"name": "custom", "noise_forcing": 3}, "system.noise_forcing"),
    ({"name": "custom_langevin", "potential": ["q"]}, "system.potential"),
])
def test_a_refused_value_names_the_key_typed_not_the_field_it_is_kept_in(config, key):
    """algebra is kept as algebra_name (algebra is the Lie algebra itself), potential as potential_formula, ...:
    the refusal names what the user typed (the command line once said system.algebra_name=3)."""
    with pytest.raises(ConfigError) as err:
        build_system(config)
    assert err.value.key == key and "\n" not in str(err.value)
