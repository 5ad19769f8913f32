"""sgi_run.core: compiled programs persist across processes (JAX's persistent compilation cache)."""
from pathlib import Path

import jax

import sgi_run.core as core


def test_the_cache_is_on_in_this_process_where_the_environment_says():
    where = core.compilation_cache_dir()
    assert where is not None and jax.config.jax_compilation_cache_dir == str(where)
    assert jax.config.jax_persistent_cache_min_compile_time_secs == core.CACHE_MIN_COMPILE_SECONDS


def test_where_it_lives(monkeypatch, tmp_path):
    for var in ("JAX_COMPILATION_CACHE_DIR", core.COMPILATION_CACHE_ENV, "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert core.compilation_cache_dir() == tmp_path / ".cache" / "sgi-run" / "jax"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert core.compilation_cache_dir() == tmp_path / "xdg" / "sgi-run" / "jax"
    monkeypatch.setenv(core.COMPILATION_CACHE_ENV, str(tmp_path / "mine"))
    assert core.compilation_cache_dir() == tmp_path / "mine"
    monkeypatch.setenv(core.COMPILATION_CACHE_ENV, "off")
    assert core.compilation_cache_dir() is None
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(tmp_path / "jax_own"))
    assert core.compilation_cache_dir() == Path(tmp_path / "jax_own")
