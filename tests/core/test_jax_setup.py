"""sgi_run.core.jax_setup: importing sgi-run sets nothing; configure() sets float64, the compilation cache and
threefry's CPU lowering for a process sgi-run owns, scope() for one call, put back after."""
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from sgi_run.core import jax_setup
from sgi_run.core.errors import ConfigError

from tests.conftest import ROOT

# What a caller's JAX is before and after: each setting the brief of jax_setup names.
SETTINGS = """
import json, jax
from jax._src.interpreters import mlir
from jax._src.random import threefry2x32 as threefry
from jax.extend.random import threefry2x32_p
def settings():
    rule = mlir._platform_specific_lowerings["cpu"].get(threefry2x32_p).rule
    named = {threefry._threefry2x32_cpu_lowering_rule: "rolled (JAX's)", threefry._threefry2x32_lowering_rule: "unrolled"}
    return {"x64": jax.config.jax_enable_x64, "cache_dir": jax.config.jax_compilation_cache_dir,
            "min_compile_secs": jax.config.jax_persistent_cache_min_compile_time_secs,
            "cache_max_size": jax.config.jax_compilation_cache_max_size, "threefry_cpu": named.get(rule, repr(rule))}
"""


def test_the_cache_is_on_in_this_process_where_the_environment_says():
    where = jax_setup.compilation_cache_dir()
    assert where is not None and jax.config.jax_compilation_cache_dir == str(where)
    assert jax.config.jax_persistent_cache_min_compile_time_secs == jax_setup.CACHE_MIN_COMPILE_SECONDS


def test_where_it_lives(monkeypatch, tmp_path):
    for var in ("JAX_COMPILATION_CACHE_DIR", jax_setup.COMPILATION_CACHE_ENV, "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert jax_setup.compilation_cache_dir() == tmp_path / ".cache" / "sgi-run" / "jax"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert jax_setup.compilation_cache_dir() == tmp_path / "xdg" / "sgi-run" / "jax"
    monkeypatch.setenv(jax_setup.COMPILATION_CACHE_ENV, str(tmp_path / "mine"))
    assert jax_setup.compilation_cache_dir() == tmp_path / "mine"
    monkeypatch.setenv(jax_setup.COMPILATION_CACHE_ENV, "off")
    assert jax_setup.compilation_cache_dir() is None
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(tmp_path / "jax_own"))
    assert jax_setup.compilation_cache_dir() == Path(tmp_path / "jax_own")


def _in_a_fresh_process(code: str, tmp_path) -> dict:
    out = subprocess.run([sys.executable, "-c", SETTINGS + code], capture_output=True, text=True, cwd=tmp_path,
                         env={"PYTHONPATH": str(ROOT), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_importing_sgi_run_leaves_the_callers_jax_as_it_was(tmp_path):
    seen = _in_a_fresh_process("""
before = settings()
import sgi_run, sgi_run.systems, sgi_run.integrators, sgi_run.config, sgi_run.runner
print(json.dumps({"before": before, "after": settings()}))
""", tmp_path)
    print(json.dumps(seen, indent=1))
    assert seen["after"] == seen["before"]
    assert seen["before"]["x64"] is False and seen["before"]["cache_dir"] is None


@pytest.mark.slow
def test_a_run_computes_in_float64_and_puts_the_callers_settings_back(tmp_path):
    """With float64 off in the caller, a run (and its composition) computes in float64, to the numbers of a
    process sgi-run configured, its two shards in threads of their own too; every setting is the caller's again
    after."""
    seen = _in_a_fresh_process("""
import sgi_run
from sgi_run.systems import Kubo
before = settings()
ens = sgi_run.simulate(Kubo(), "midpoint", sgi_run.plan(paths=20, T=2, shards=2),
                       executor={"name": "local", "shards_at_once": 2}).ensemble
print(json.dumps({"before": before, "after": settings(), "H": ens.mean("H").tolist(), "ran": ens.attrs["executor"],
                  "dtype": str(ens.mean("H").dtype)}))
""", tmp_path)
    assert seen["after"] == seen["before"] and seen["before"]["x64"] is False
    assert seen["dtype"] == "float64" and "2 shards at once" in seen["ran"], seen["ran"]
    configured = _in_a_fresh_process("""
from sgi_run.core import jax_setup
jax_setup.configure()
import sgi_run
from sgi_run.systems import Kubo
ens = sgi_run.simulate(Kubo(), "midpoint", sgi_run.plan(paths=20, T=2, shards=2), output_root="elsewhere").ensemble
print(json.dumps({"H": ens.mean("H").tolist(), "after": settings()}))
""", tmp_path)
    assert configured["H"] == seen["H"]
    assert configured["after"]["x64"] is True and configured["after"]["threefry_cpu"] == "unrolled"
    assert seen["before"]["threefry_cpu"] == "rolled (JAX's)"


def test_scope_turns_float64_on_for_its_block_and_threads_carry_it():
    with jax.enable_x64(False):
        assert jnp.zeros(1).dtype == jnp.float32
        with jax_setup.scope():
            assert jnp.zeros(1).dtype == jnp.float64
            seen = {}
            plain = threading.Thread(target=lambda: seen.update(plain=jnp.zeros(1).dtype))
            carried = threading.Thread(target=jax_setup.carried(lambda: seen.update(carried=jnp.zeros(1).dtype)))
            for thread in (plain, carried):
                thread.start()
                thread.join()
        assert jnp.zeros(1).dtype == jnp.float32
    # A new thread starts from the process's setting (float64: the session is configured), a carried one from
    # the caller's.
    assert seen == {"plain": jnp.float64, "carried": jnp.float64}
    with jax.enable_x64(False):
        thread = threading.Thread(target=jax_setup.carried(lambda: seen.update(carried=jnp.zeros(1).dtype)))
        thread.start()
        thread.join()
    assert seen["carried"] == jnp.float32


def test_float64_is_required_with_what_to_do():
    jax_setup.require_float64()
    with jax.enable_x64(False), pytest.raises(ConfigError) as refused:
        jax_setup.require_float64()
    assert str(refused.value) == ("jax_enable_x64=False is not allowed: True: sgi-run computes in float64; call "
                                  'jax.config.update("jax_enable_x64", True) before making arrays')


@pytest.mark.parametrize("platform", [
    pytest.param("cuda", marks=pytest.mark.skipif(jax.default_backend() != "cpu", reason="this machine has a GPU")),
    "bogus"])
def test_a_platform_jax_cannot_start_is_one_line_naming_those_it_can(platform, tmp_path):
    """JAX_PLATFORMS=cuda without a GPU was an AssertionError traceback from JAX at the first array."""
    out = subprocess.run([sys.executable, "-m", "sgi_run.cli", "plan.paths=10", f"output_root={tmp_path}"],
                         env={**os.environ, "JAX_PLATFORMS": platform}, capture_output=True, text=True, timeout=120)
    [line] = out.stderr.strip().splitlines()
    assert out.returncode == 2 and line.startswith(
        f"sgi-run: error: JAX_PLATFORMS='{platform}' is not allowed: platforms JAX can start on this machine (cpu), "
        f"comma-separated, or unset for JAX's choice; {platform} is not available here"), line
    assert not list(tmp_path.iterdir())
