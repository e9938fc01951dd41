"""Process-wide settings a command applies once at start-up (never library code): the C
allocator's behaviour (:func:`tune_malloc`) and JAX's persistent compilation cache; and
:func:`release_free_heap`, which a long kernel may call between phases; :func:`cpu_flags`, the
CPU's feature flags that kernels consult; :func:`jax_starts_on_cpu`, where JAX will run, read before
it starts."""

from __future__ import annotations

import ctypes
import functools
import importlib.metadata
import importlib.util
import os
import pkgutil
import platform
from pathlib import Path

XLA_CACHE_DIR = "xla"  # under the cache root, beside the embedding spaces


def installed_version(package: str) -> str | None:
    """The installed distribution's version from its metadata (nothing is imported), or None."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def enable_compilation_cache(cache_root: str | Path | None = None) -> Path:
    """Persist compiled XLA programs under ``<cache root>/xla`` (cache root: ``cache_root``, else
    ``$STYLEBENCH_CACHE``, else ``~/.cache/stylebench``) so later runs skip compilation; programs
    that compile in under 0.5 s are not stored. ``$JAX_COMPILATION_CACHE_DIR`` (JAX's own variable),
    when set, wins: one program cache for runs with different cache roots. Returns the directory."""
    import jax

    from stylebench_jax.cache import default_cache_dir

    if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        path = Path(os.environ["JAX_COMPILATION_CACHE_DIR"])
    else:
        path = (Path(cache_root) if cache_root is not None else default_cache_dir()) / XLA_CACHE_DIR
    jax.config.update("jax_compilation_cache_dir", str(path.resolve()))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
    return path


@functools.lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (``avx2``, ``fma``, ``amx_bf16``, ...) from ``/proc/cpuinfo``; empty
    where that file does not exist (not Linux) or has no flags line."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="ascii", errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.partition(":")[2].split())
    return frozenset()


def _glibc() -> bool:
    return platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"


# glibc's mallopt parameters (malloc.h).
M_TRIM_THRESHOLD, M_MMAP_MAX, M_ARENA_MAX = -1, -4, -8
MALLOC_ENV = ("MALLOC_ARENA_MAX", "MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_",
              "MALLOC_TOP_PAD_")


def tune_malloc() -> bool:
    """Keep freed memory mapped so that XLA:CPU's per-call buffers stop costing page faults.

    XLA:CPU allocates every call's temporaries (a train step's activations: ~2 GB for MiniLM at 32 x
    128) with ``malloc`` from its worker threads. glibc serves those from per-thread arenas, whose
    heaps are capped at 64 MB, so large blocks are ``mmap``-ed and unmapped again on ``free``: the
    next call touches fresh pages and the kernel zeroes each one. Measured on the 2-core EPYC, one
    MiniLM train step (16 pairs x 128 tokens): ~440,000-510,000 minor faults and 1.4 s of system
    time per step with glibc's defaults, 0 faults and 0.02 s with these settings (step 4.6 -> 4.2 s
    in that run), peak resident memory unchanged (2.8 GB). Sets, through ``mallopt``: one arena
    (``M_ARENA_MAX`` 1), no ``mmap`` for large blocks (``M_MMAP_MAX`` 0: they come from the main
    heap, which is reused), and no trimming of the heap's top (``M_TRIM_THRESHOLD`` -1, i.e. the
    largest size). Freed memory stays with the process, so resident memory stays at its peak and
    can fragment: a process that frees large buffers of changing sizes keeps more (bench_topk's peak
    RSS 1.0 -> 3.2 GB, no speed gained there). Call it first thing, before JAX starts its threads;
    ``stylebench train`` does (``cli.entry``). Does nothing (returns False) off glibc, when any
    ``MALLOC_*`` tuning variable is set in the environment (the user's choice wins), or when JAX will
    not run on the CPU (:func:`jax_starts_on_cpu`): on an accelerator the step's buffers are device
    memory, and one arena shared by a GPU host's compiler, runtime and PyTorch threads is measured
    nowhere (the one GPU train benchmark run with it, an H100 on 2026-11-27, did not finish its
    set-up in 280 s; the cause was not established)."""
    if not _glibc() or any(name in os.environ for name in MALLOC_ENV) or not jax_starts_on_cpu():
        return False
    mallopt = ctypes.CDLL(None).mallopt
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    settings = ((M_ARENA_MAX, 1), (M_MMAP_MAX, 0), (M_TRIM_THRESHOLD, -1))
    return all(mallopt(param, value) == 1 for param, value in settings)


def accelerator_plugins() -> list[str]:
    """The PJRT plugins (CUDA, ROCm, TPU, ...) JAX would load at start-up, found without importing JAX
    the way ``jax._src.xla_bridge.discover_pjrt_plugins`` finds them: modules of the ``jax_plugins``
    namespace package and entry points of the ``jax_plugins`` group; plus ``libtpu`` (JAX's TPU
    backend loads it without a plugin module). Sorted names."""
    found = {entry.value for entry in importlib.metadata.entry_points(group="jax_plugins")}
    namespace = importlib.util.find_spec("jax_plugins")
    if namespace is not None and namespace.submodule_search_locations:
        found.update(f"jax_plugins.{module.name}"
                     for module in pkgutil.iter_modules(namespace.submodule_search_locations))
    if importlib.util.find_spec("libtpu") is not None:
        found.add("libtpu")
    return sorted(found)


def jax_starts_on_cpu() -> bool:
    """Whether JAX, once started in this process, will run on the CPU, decided before it starts:
    the first entry of ``$JAX_PLATFORMS`` when that is set, else whether no accelerator plugin is
    installed (:func:`accelerator_plugins`). A plugin installed on a machine without its device
    counts as an accelerator (JAX would fall back to the CPU there): the settings this guards are
    measured on XLA:CPU only, so the doubt goes to leaving them off."""
    requested = os.environ.get("JAX_PLATFORMS", "").strip()
    if requested:
        return requested.split(",")[0].strip().lower() == "cpu"
    return not accelerator_plugins()


def release_free_heap() -> bool:
    """Hand the C heap's free pages back to the system (glibc ``malloc_trim(0)``): memory a finished
    phase freed (its XLA temporaries, its compilation) otherwise stays resident beside the next
    phase's buffers. Measured in the all-pairs minority method at N = 50,000 (hard data): the
    collection phase's freed heap stayed resident: 18-20 MB less resident memory before the counting
    pass with the call (156 -> 136-138 MB above start-up); the pass's peak moved within run-to-run
    noise. Returns whether anything was released; False off glibc."""
    if not _glibc():
        return False
    trim = ctypes.CDLL(None).malloc_trim
    trim.argtypes, trim.restype = (ctypes.c_size_t,), ctypes.c_int
    return trim(0) == 1
