"""No input ends in a traceback: every key of every config group, overridden with random strings,
numbers (0, negative, huge, tiny, nan, inf), lists and nulls, and random new keys added with ``+``,
either composes or is refused with one ``ConfigError`` line naming the key (validation only: nothing
is computed). Hypothesis draws the cases deterministically (``derandomize``), so CI is repeatable."""
import functools
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from omegaconf import DictConfig, ListConfig, OmegaConf

import sgi_run
from sgi_run.composition import hydra_compose
from sgi_run.config import GROUPS, ConfigSource, compose, expand_sweeps, group_options



# Options that need a key set before they compose at all (a SLURM cluster has no default partition).
REQUIRED = {"executor=slurm": ("executor.queue=compute",)}


def _fitting(choice: str) -> tuple[str, ...]:
    """``choice`` with an option of the other group that fits it (CSVIA needs a constrained system, ...),
    so that an override of any key goes through every check, past the system/integrator pairing."""
    group = choice.split("=")[0]
    other = {"system": "integrator", "integrator": "system"}.get(group)
    partners = [()] + [(f"{other}={o}",) for o in (group_options(other) if other else [])]
    partners += [REQUIRED[choice]] if choice in REQUIRED else []
    # A large state (Zeitlin su(128)) fits the default 10^4-path shards in no memory: one path then.
    for plan in ((), ("plan.paths=1", "plan.keep_paths=1")):
        for partner in partners:
            try:
                sgi_run.compose([choice, *partner, *plan])
                return (choice, *partner, *plan)
            except sgi_run.ConfigError:
                pass
    raise AssertionError(f"no option of {other} fits {choice}")


@functools.cache
def choices() -> list[tuple[str, ...]]:
    """Every option of every group, each with what fits it: composed when a test first draws, not when
    pytest collects (it composes every option, about 40 s)."""
    return [_fitting(f"{group}={option}") for group in GROUPS for option in group_options(group)]


def _keys(node, prefix=""):
    """Every leaf key of a composed config, dotted (list entries by index)."""
    if isinstance(node, DictConfig):
        for k in node:
            yield from _keys(node[k], f"{prefix}{k}.")
    elif isinstance(node, ListConfig):
        for i in range(len(node)):
            yield from _keys(node[i], f"{prefix}{i}.")
        yield prefix[:-1]
    else:
        yield prefix[:-1]


@functools.cache
def _keys_of(choice: tuple[str, ...]) -> list[str]:
    cfg = hydra_compose(choice)
    keys = sorted(set(_keys(OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"]))))
    # List entries (tableau rows) are overridden by their list's key: Hydra has no index syntax. The claims keys
    # are drawn by a test of their own (test_any_claim_composes_or_is_refused_for_what_was_typed), so that the
    # draws of these tests stay those they were.
    return [k for k in keys if not any(part.isdigit() for part in k.split(".")) and not k.startswith(CLAIMS)]


CLAIMS = "integrator.claims"




def _quoted(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _hydra(value) -> str:
    """``value`` as Hydra's override grammar writes it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ",".join(_hydra(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_hydra(v)}" for k, v in value.items()) + "}"
    return _quoted(value)


scalars = st.one_of(
    st.none(), st.booleans(),
    st.sampled_from([0, -1, 1, 2, 10**30, -(10**30), 2**63]),
    st.integers(min_value=-10**6, max_value=10**6),
    st.sampled_from([0.0, -0.0, -1.5, 1e-320, 1e-300, 1e308, math.nan, math.inf, -math.inf, 0.5, 1e9]),
    st.sampled_from(["", "abc", "ü∂", "[", "{", ":", "${x}", "???", "null", "1e", " ", "a,b", "0x10", "auto"]),
    st.text(max_size=8))
values = st.one_of(scalars, st.lists(scalars, max_size=3), st.lists(st.lists(scalars, max_size=2), max_size=2),
                   st.dictionaries(st.sampled_from(["a", "name", "x"]), scalars, max_size=2))


@st.composite
def overrides(draw):
    choice = draw(st.sampled_from(choices()))
    key = draw(st.sampled_from(_keys_of(choice) + ["<new>"]))
    if key == "<new>":
        group = draw(st.sampled_from(["", "plan.", "system.", "integrator.", "executor.", "integrator.tableau."]))
        key = "+" + group + draw(st.sampled_from(["foo", "x1", "name2"]))
    return [*choice, f"{key}={_hydra(draw(values))}"]


def refused_properly(args):
    try:
        sgi_run.compose(args)
    except sgi_run.ConfigError as err:
        text = str(err)
        assert "\n" not in text and err.key and text.startswith(f"{err.key}="), (args, text)
        assert " is not allowed: " in text, (args, text)
        return
    # anything else propagates: the test fails with its traceback


# The tests that draw from choices() run in one process under pytest-xdist (--dist loadgroup): composing every
# option once (functools.cache) costs ~40 s, which a second process would pay again.
FUZZ_GROUP = pytest.mark.xdist_group("config_fuzz")


@pytest.mark.slow
@FUZZ_GROUP
@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(overrides())
def test_any_override_of_any_key_composes_or_is_one_line(args):
    assert expand_sweeps(args) == [args]     # the command line composes exactly these (no sweep here)
    refused_properly(args)


@pytest.mark.parametrize("args", [
    ["system.q0=abc"], ["system.p0=abc"], ["system.q0=null"], ["system.q0=[1,2]"], ["system.beta=abc"],
    ["plan.dt=1e-300"], ["plan.T=1000000000"], ["integrator.tol=-1"], ["integrator.max_iter=0"], ["+plan.foo=1"],
    ["integrator.name=foo"], ["plan.keep_paths=5000", "plan.paths=500"], ["plan.paths=1000000000000"],
    ["plan.paths=300000000", "plan.shards=1"], ["plan.dt=1e-9"], ["+foo=1"], ["system.name=van_der_pol"],
    ["system=spherical_pendulum", "integrator=csvia", "system.q0=[1,2]"]])
def test_the_issues_bad_inputs_are_refused(args):
    with pytest.raises(sgi_run.ConfigError) as err:
        sgi_run.compose(args)
    assert "\n" not in str(err.value)


@pytest.mark.slow
def test_the_command_line_refuses_in_one_line_and_exit_2(tmp_path):
    for args in (["system.q0=abc"], ["system.q0=null"], ["plan.T=1000000000"], ["+plan.foo=1"], ["integrator.name=foo"],
                 ["plan=convergence", "plan.paths=1000000000000"], ["output_root=1"]):
        out = subprocess.run([sys.executable, "-m", "sgi_run.cli", *args], cwd=tmp_path, capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 2 and "Traceback" not in out.stderr, (args, out.stderr)
        [line] = out.stderr.strip().splitlines()
        assert line.startswith("sgi-run: error: "), line
        assert not (tmp_path / "outputs").exists()


def test_every_group_has_options():
    assert all(group_options(g) for g in GROUPS)


# --- issue 24: combinations, --config-dir groups, the figures CLI ---------------------------------------------
def _related(key: str, typed: str) -> bool:
    """The refused key is the one typed, a key under it or the node it is under (integrator.tableau -> integrator)."""
    return key == typed or key.startswith(typed + ".") or typed.startswith(key + ".")


def refused_for_what_was_typed(args, source=ConfigSource()):
    """Composes, or one ConfigError line about a key the command line typed: a default is never refused. A
    memory refusal may name the key that sizes the memory when its advice names the typed one."""
    try:
        compose(args, source)
    except sgi_run.ConfigError as err:
        text, typed = str(err), [a.split("=", 1)[0].lstrip("+") for a in args]
        assert "\n" not in text and text.startswith(f"{err.key}=") and " is not allowed: " in text, (args, text)
        assert any(_related(err.key, t) or f" {t}" in err.allowed for t in typed) or \
            (err.key == "override" and err.value == " ".join(args)), (args, text)


@st.composite
def combinations(draw):
    """Two or three keys of one choice's config at once, random values, every other key at its default."""
    choice = draw(st.sampled_from([(), *choices()]))
    keys = draw(st.lists(st.sampled_from(_keys_of(choice)), min_size=2, max_size=3, unique=True))
    return [*choice, *(f"{key}={_hydra(draw(values))}" for key in keys)]




@pytest.mark.slow
@FUZZ_GROUP
@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(combinations())
def test_two_or_three_keys_at_once_compose_or_are_refused_for_what_was_typed(args):
    refused_for_what_was_typed(args)


@pytest.mark.slow
@FUZZ_GROUP
@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_claim_composes_or_is_refused_for_what_was_typed(data):
    """A claim typed on the command line (what sgi-bench checks, never what a run computes) composes or is refused
    in one line naming it."""
    choice = data.draw(st.sampled_from([(), *(c for c in choices() if c[0].startswith("integrator="))]))
    cfg = hydra_compose(choice)
    keys = sorted(k for k in set(_keys(OmegaConf.masked_copy(cfg, ["integrator"]))) if k.startswith(CLAIMS))
    key = data.draw(st.sampled_from([*keys, f"+{CLAIMS}.strong.scalar", f"+{CLAIMS}.orders"]))
    refused_for_what_was_typed([*choice, f"{key}={_hydra(data.draw(values))}"])


@pytest.fixture(scope="module")
def config_dir(tmp_path_factory):
    """A --config-dir with options of its own in two groups."""
    directory = tmp_path_factory.mktemp("more")
    (directory / "plan").mkdir()
    (directory / "system").mkdir()
    (directory / "plan" / "small.yaml").write_text("defaults:\n  - default\n  - _self_\npaths: 10\nT: 1.0\n")
    (directory / "system" / "stiff_kubo.yaml").write_text("defaults:\n  - kubo\n  - _self_\nnu: 1.5\n")
    return ConfigSource(added=str(directory))


def test_a_config_dirs_options_compose(config_dir):
    cfg = compose(["plan=small", "system=stiff_kubo"], config_dir)
    assert (cfg.plan.paths, cfg.system.nu, cfg.system.name) == (10, 1.5, "kubo")
    assert group_options("plan", config_dir) == ["convergence", "default", "small"]


@pytest.mark.slow
@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_config_dirs_groups_compose_or_are_refused_for_what_was_typed(config_dir, data):
    plan = data.draw(st.sampled_from(["plan=small", "plan=default", "plan=smal"]))
    system = data.draw(st.sampled_from(["system=stiff_kubo", "system=kubo", "system=stiff"]))
    keys = data.draw(st.lists(st.sampled_from(_keys_of(())), max_size=2, unique=True))
    refused_for_what_was_typed([plan, system, *(f"{k}={_hydra(data.draw(values))}" for k in keys)], config_dir)


# --- the figures CLI: sgi-figures' flags with random values --------------------------------------------------
EXPERIMENTS = Path(__file__).parents[1] / "experiments"
FIGURE_IDS = sorted(f"{p.parent.name}/{p.stem}" for p in EXPERIMENTS.glob("*/*.yaml"))
junk = st.sampled_from(["", " ", "bogus", "fig99", "a/b/c", "-x", "--", "ü∂", "'", "${x}", "a=b=c", "/proc/x", "\x00"])
only_values = st.one_of(st.sampled_from(FIGURE_IDS), st.sampled_from(FIGURE_IDS).map(lambda i: i.split("/")[1]),
                        st.sampled_from(["fig1", "fig2"]), junk, st.text(max_size=6))   # fig1, fig2: several papers'


@st.composite
def figures_argv(draw):
    """An ``sgi-figures`` command line: a figure or more (bare, paper/id, ambiguous, unknown, junk), the other
    flags each absent, valid or junk, and now and then a stray argument or a flag without its value."""
    argv = ["--experiments", str(EXPERIMENTS)]      # the tests run elsewhere; a drawn --experiments comes later
    argv += [token for value in draw(st.lists(only_values, min_size=1, max_size=2)) for token in ("--only", value)]
    flags = {"--fidelity": st.sampled_from(["smoke", "reduced", "paper"]), "--cache": st.sampled_from(["reuse", "off"]),
             "--executor": st.sampled_from(["local", "dask", "slurm"]), "--experiments": st.just(str(EXPERIMENTS)),
             "--executor-option": st.sampled_from(["workers=2", "workers=0", "nodes=4", "queue=compute", "junk"]),
             "--runs-root": st.sampled_from(["runs", "/proc/x"]), "--output": st.sampled_from(["out", "/proc/x"])}
    for flag, valid in flags.items():
        if draw(st.booleans()):
            argv += [flag, draw(junk if draw(st.integers(0, 3)) == 3 else valid)]
    if draw(st.booleans()):
        argv.append("--strict")
    if draw(st.integers(0, 3)) == 3:
        argv.insert(draw(st.integers(0, len(argv))), draw(st.sampled_from(["--bogus", "stray", "--strict=1", "--ex"])))
    if draw(st.integers(0, 3)) == 3:
        argv.append(draw(st.sampled_from(["--only", "--fidelity", "--cache"])))
    return argv


class Accepted(Exception):
    """Raised in place of drawing the first figure: the command line was accepted."""


@pytest.mark.slow
@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(argv=figures_argv())
def test_any_figures_command_line_is_accepted_or_one_line_and_exit_2(argv, tmp_path, monkeypatch, capsys):
    from sgi_run.figures import cli, pipeline

    def accepted(*args, **kwargs):
        raise Accepted

    monkeypatch.chdir(tmp_path)            # relative --runs-root and --output go there
    monkeypatch.setattr(pipeline, "make_figure", accepted)
    capsys.readouterr()
    try:
        status = cli.main(argv)
    except Accepted:
        return
    err = capsys.readouterr().err
    assert status == 2 and err.startswith("sgi-figures: error: ") and err.count("\n") == 1, (argv, status, err)
    assert not list(tmp_path.rglob("*.h5")), argv


# --- issue 45: the environment variables the package reads (grep os.environ in sgi_run/), and JAX_PLATFORMS -------
env_values = st.one_of(
    st.sampled_from(["", " ", "abc", "0", "1", "-5GiB", "1e400GiB", "1e300TiB", "nan", "inf", "4GiB", "12 MB", "GiB",
                     "0x10", "~nouser/x", "~", "off", "/proc/x", ":", "1:", "2:/nonexistent", "bogus", "cpu,", "ü∂"]),
    st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=8))


def one_line_about(variable: str, call) -> None:
    """``call()`` returns, or raises one ConfigError line that names ``variable`` (a memory refusal names the plan key
    to change, and the variable's limit: a size, never -5 GiB)."""
    try:
        call()
    except sgi_run.ConfigError as err:
        text = str(err)
        assert "\n" not in text and " is not allowed: " in text, text
        assert err.key == variable or re.search(rf" and [0-9][^ ]* [KMGTP]?i?B is {variable}\b", text), text


@pytest.mark.slow
@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=env_values)
def test_any_memory_limit_composes_or_is_one_line_naming_it(value, monkeypatch):
    monkeypatch.setenv("SGI_RUN_MEMORY_LIMIT", value)
    one_line_about("SGI_RUN_MEMORY_LIMIT", lambda: compose(["plan.paths=10"]))


CACHE_VARIABLES = ("JAX_COMPILATION_CACHE_DIR", "SGI_RUN_COMPILATION_CACHE", "XDG_CACHE_HOME")   # the first set wins


@pytest.mark.parametrize("variable", CACHE_VARIABLES)
@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=env_values)
def test_any_compilation_cache_setting_is_a_place_or_one_line_naming_it(variable, value, monkeypatch):
    from sgi_run.core import jax_setup
    for other in CACHE_VARIABLES:
        monkeypatch.delenv(other, raising=False)
    monkeypatch.setenv(variable, value)
    one_line_about(variable, jax_setup.compilation_cache_dir)


@pytest.mark.slow
@pytest.mark.parametrize("variable, value", [("SGI_RUN_COMPILATION_CACHE", "~nouser/x"), ("JAX_PLATFORMS", "bogus"),
                                             ("SGI_RUN_CORE_SLOTS", "bogus"), ("SGI_RUN_COMMIT", "ü∂ :")])
def test_a_variable_read_as_a_command_starts_runs_or_is_one_line_and_exit_2(variable, value, tmp_path):
    """What the command reads before any config (JAX's platforms, the compilation cache) or as its job starts."""
    out = subprocess.run([sys.executable, "-m", "sgi_run.cli", "plan.paths=10", "plan.T=1", f"output_root={tmp_path}"],
                         env={**os.environ, variable: value}, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in out.stderr and out.returncode in (0, 2), out.stderr
    if out.returncode == 2:
        [line] = out.stderr.strip().splitlines()
        assert line.startswith(f"sgi-run: error: {variable}="), line
