"""Process start-up settings (stylebench_jax.runtime): the allocator tuning keeps XLA:CPU's
per-call buffers mapped, so repeated calls stop page-faulting; a MALLOC_* variable wins, and a JAX
that will run on an accelerator leaves glibc's settings alone."""

import json
import os
import platform
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                                reason="glibc malloc tuning")

PROBE = """
import json, resource, sys
from stylebench_jax.runtime import tune_malloc
tuned = tune_malloc() if sys.argv[1] == "tune" else False
import jax, jax.numpy as jnp
f = jax.jit(lambda x: jnp.cumsum(jnp.sin(x), axis=0)[-1])  # a 64 MB temporary per call
x = jnp.ones((4096, 4096), jnp.float32)
for _ in range(10):  # the heap settles after a few calls (first-fit placement)
    f(x).block_until_ready()
faults = []
for _ in range(11):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    f(x).block_until_ready()
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(json.dumps({"tuned": tuned, "faults_per_call": sorted(faults)[5]}))  # the median call
"""


def probe(mode: str, **env) -> dict:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, timeout=300,
                         cwd=REPO, env={**clean, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu", **env})
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_tuned_malloc_keeps_buffers_mapped():
    tuned, plain = probe("tune"), probe("plain")
    assert tuned["tuned"] is True
    # 64 MB is 16,384 pages: with glibc's defaults each call maps (and faults) its buffers afresh.
    assert tuned["faults_per_call"] < 1000, (tuned, plain)
    assert plain["faults_per_call"] > 10 * max(tuned["faults_per_call"], 100), (tuned, plain)


def test_malloc_environment_wins():
    assert probe("tune", MALLOC_ARENA_MAX="2")["tuned"] is False


def test_malloc_left_alone_when_jax_runs_on_an_accelerator(monkeypatch):
    from stylebench_jax.runtime import tune_malloc

    for name in ("MALLOC_ARENA_MAX", "MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JAX_PLATFORMS", "cuda,cpu")
    assert tune_malloc() is False  # returns before any mallopt: this process keeps glibc's settings


@pytest.mark.parametrize("platforms, plugins, on_cpu", [
    ("cpu", ["jax_cuda13_plugin"], True), ("cuda", [], False), ("tpu,cpu", [], False), (" CPU ", [], True),
    ("", [], True), ("", ["jax_plugins.xla_cuda13"], False)])
def test_jax_starts_on_cpu(monkeypatch, platforms, plugins, on_cpu):
    from stylebench_jax import runtime

    monkeypatch.setenv("JAX_PLATFORMS", platforms)
    monkeypatch.setattr(runtime, "accelerator_plugins", lambda: plugins)
    assert runtime.jax_starts_on_cpu() is on_cpu


def test_accelerator_plugins_finds_namespace_modules(monkeypatch, tmp_path):
    from stylebench_jax.runtime import accelerator_plugins

    assert "jax_plugins.fake_accelerator" not in accelerator_plugins()
    (tmp_path / "jax_plugins").mkdir()
    (tmp_path / "jax_plugins" / "fake_accelerator.py").write_text("def initialize(): pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "jax_plugins.fake_accelerator" in accelerator_plugins()


@pytest.mark.parametrize("argv, tuned", [(["train", "run.yaml"], True),
                                         (["embed", "--model", "minilm"], False), (["--version"], False)])
def test_entry_tunes_only_the_train_command(monkeypatch, argv, tuned):
    from stylebench_jax import cli

    calls = []
    monkeypatch.setattr(cli, "tune_malloc", lambda: calls.append("tune") or True)
    monkeypatch.setattr(cli, "main", lambda: calls.append("main") or 0)
    monkeypatch.setattr(sys, "argv", ["stylebench", *argv])
    assert cli.entry() == 0
    assert calls == (["tune", "main"] if tuned else ["main"])


TRIM_PROBE = """
import ctypes, json
from stylebench_jax.runtime import release_free_heap
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, (ctypes.c_size_t,)
libc.free.argtypes = (ctypes.c_void_p,)
def rss_mb():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
blocks = [libc.malloc(4096) for _ in range(50_000)]  # ~200 MB of small blocks on the main heap
for b in blocks:
    ctypes.memset(b, 1, 4096)
pin = libc.malloc(4096)  # above them: the heap's top cannot shrink on its own
before = rss_mb()
for b in blocks:
    libc.free(b)
freed = rss_mb()
released = release_free_heap()
print(json.dumps({"before": before, "freed": freed, "after": rss_mb(), "released": released}))
"""


def test_release_free_heap_returns_freed_pages():
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run([sys.executable, "-c", TRIM_PROBE], capture_output=True, text=True, timeout=120,
                         cwd=REPO, env={**clean, "PYTHONPATH": str(REPO)})
    assert out.returncode == 0, out.stderr[-2000:]
    rss = json.loads(out.stdout.strip().splitlines()[-1])
    assert rss["freed"] > rss["before"] - 20  # glibc keeps the freed blocks resident
    assert rss["released"] and rss["after"] < rss["freed"] - 150


def test_the_compilation_cache_goes_where_jax_own_variable_says(tmp_path, monkeypatch):
    """``<cache root>/xla`` by default; ``$JAX_COMPILATION_CACHE_DIR`` wins when set (the tests' session
    cache is one: conftest.py)."""
    import jax

    from stylebench_jax.runtime import enable_compilation_cache

    before = jax.config.jax_compilation_cache_dir
    try:
        monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(tmp_path / "programs"))
        assert enable_compilation_cache(tmp_path / "root") == tmp_path / "programs"
        assert jax.config.jax_compilation_cache_dir == str(tmp_path / "programs")
        monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR")
        assert enable_compilation_cache(tmp_path / "root") == tmp_path / "root" / "xla"
        assert jax.config.jax_compilation_cache_dir == str(tmp_path / "root" / "xla")
    finally:
        jax.config.update("jax_compilation_cache_dir", before)
