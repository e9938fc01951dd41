"""The C++ kernels for XLA:CPU (``*.cc`` beside this file), built into one library and registered
with ``jax.ffi``: the fused attention (``cpu_attention``), the exact float32 top-k scan
(``cpu_topk``) and the all-pairs rank counting (``cpu_pairs``). ``native_pool.h`` shares their work
over XLA's intra-op threads.

The library is compiled on first use with the system's C++ compiler (``$CXX``, else
``c++``/``g++``) against the installed jaxlib's XLA FFI headers, into ``stylebench_jax/kernels/_build/``
when the package directory is writable (``scripts/setup_env.sh`` builds it there; in a site-packages
install ``pip uninstall`` leaves that folder behind), else ``<cache root>/native`` (``$STYLEBENCH_CACHE``
or ``~/.cache/stylebench``); the file name carries a digest of the sources, the flags and the jaxlib
version, so a changed kernel is rebuilt, and the library is linked in a private temporary folder and
renamed into place (concurrent builders never load half a file). Older versions are removed from
``_build`` only: the cache root may be shared by environments with other jaxlib versions.

``unavailable()`` says why the kernels cannot run here (not x86-64, no AVX2/FMA, no compiler, a failed
build), ``None`` when they can; their callers then use XLA and say so.
``python -m stylebench_jax.kernels.native`` builds (or finds) the library and prints its path.
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import functools
import hashlib
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import jax

from stylebench_jax.runtime import cpu_flags

HERE = Path(__file__).parent
SOURCES = (HERE / "cpu_attention.cc", HERE / "cpu_topk.cc", HERE / "cpu_pairs.cc")
HEADERS = (HERE / "native_pool.h", HERE / "native_isa.h", HERE / "cpu_topk_lanes.h",
           HERE / "cpu_attention_units.h")
# FFI target name -> the library's handler symbol
ATTENTION_TARGET = "stylebench_cpu_attention_f32"  # forward only (inference)
ATTENTION_FORWARD_TARGET = "stylebench_cpu_attention_forward_f32"  # + per-row max and log sum (training)
ATTENTION_BACKWARD_TARGET = "stylebench_cpu_attention_backward_f32"
TOPK_TARGET = "stylebench_topk_scan_f32"
PAIRS_TARGET = "stylebench_pair_ranks"
TARGETS = {ATTENTION_TARGET: "StylebenchCpuAttentionF32",
           ATTENTION_FORWARD_TARGET: "StylebenchCpuAttentionForwardF32",
           ATTENTION_BACKWARD_TARGET: "StylebenchCpuAttentionBackwardF32",
           TOPK_TARGET: "StylebenchTopkScanF32", PAIRS_TARGET: "StylebenchPairRanks"}
CXX_FLAGS = ("-O3", "-mavx2", "-mfma", "-std=c++17", "-fPIC")  # each source to an object
LINK_FLAGS = ("-shared", "-fPIC")
BUILD_TIMEOUT_S = 300
NO_COMPILER = ("no C++ compiler found ($CXX, c++, g++, clang++); install one (Debian: apt install g++) "
               "or use XLA's kernels")
PREFIX = "stylebench_native-"


class NativeBuildError(RuntimeError):
    """The C++ library could not be compiled or loaded (the message names the step and the cause)."""


def _compiler() -> list[str] | None:
    """The compiler command: ``$CXX`` (split like a shell word list, e.g. ``ccache g++``), else the
    first of ``c++``, ``g++``, ``clang++`` on the path."""
    for command in (shlex.split(os.environ.get("CXX", "")), ["c++"], ["g++"], ["clang++"]):
        if command and shutil.which(command[0]):
            return command
    return None


def _build_dirs() -> list[Path]:
    from stylebench_jax.cache import default_cache_dir

    return [HERE / "_build", default_cache_dir() / "native"]


def library_name() -> str:
    """``stylebench_native-<16 hex digits>.so``: digest of the sources, the header, the flags and the
    jaxlib version."""
    import jaxlib

    digest = hashlib.sha256()
    for path in (*SOURCES, *HEADERS):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    digest.update(" ".join((*CXX_FLAGS, *LINK_FLAGS)).encode() + jaxlib.__version__.encode())
    return f"{PREFIX}{digest.hexdigest()[:16]}.so"


def build(directory: str | Path | None = None) -> Path:
    """Path of the compiled library, compiling it first when no build directory holds it (the sources
    in parallel, one per core, then one link: ~8 s on 2 cores, ~15 s on one).

    ``directory``: where to build (default: the package's ``_build`` when writable, else the cache
    root's ``native``). Raises ``NativeBuildError`` naming the compiler's complaint."""
    name = library_name()
    candidates = [Path(directory)] if directory is not None else _build_dirs()
    for folder in candidates:
        if (folder / name).is_file():
            return folder / name
    compiler = _compiler()
    if compiler is None:
        raise NativeBuildError(NO_COMPILER)
    errors = []
    for folder in candidates:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            work = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=folder))
        except OSError as error:
            errors.append(f"{folder}: {error.strerror}")
            continue
        try:
            _compile_and_link(compiler, work)
            os.replace(work / name, folder / name)
        finally:
            shutil.rmtree(work, ignore_errors=True)  # the objects; the library too after a failure
        if folder == candidates[0] and directory is None:  # the package's own _build
            for stale in (*folder.glob(f"{PREFIX}*.so"), *folder.glob("cpu_attention-*.so")):  # older builds
                if stale.name != name:
                    stale.unlink(missing_ok=True)
        return folder / name
    raise NativeBuildError(f"no writable build directory for {name}: {'; '.join(errors)}")


def _compile_and_link(compiler: list[str], work: Path) -> None:
    """``SOURCES`` to objects in ``work`` (in parallel: one compiler process per core, so the build
    takes about as long as its largest source) and those to ``work / library_name()``. Raises
    ``NativeBuildError`` with the command and the compiler's complaint, the first failing source's in
    ``SOURCES`` order."""
    include = f"-I{jax.ffi.include_dir()}"
    objects = [work / f"{source.stem}.o" for source in SOURCES]
    steps = [(f"compiling {source.name}", [*compiler, *CXX_FLAGS, include, "-c", str(source), "-o", str(obj)],
              True) for source, obj in zip(SOURCES, objects)]

    def run(step):  # a compile's error lines (jaxlib's headers add warnings), a link's last lines
        what, command, compiling = step
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"{what} failed ({' '.join(command)}): {error}"
        if result.returncode == 0:
            return None
        lines = result.stderr.strip().splitlines()
        errors = [line for line in lines if "error" in line] if compiling else []
        tail = "\n".join(errors[:5] or lines[-5:])
        return f"{what} failed ({' '.join(command)}):\n{tail}"

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    with concurrent.futures.ThreadPoolExecutor(min(len(steps), cores)) as pool:
        failures = [message for message in pool.map(run, steps) if message]
    if not failures:
        link = ("linking " + ", ".join(obj.name for obj in objects),
                [*compiler, *LINK_FLAGS, *map(str, objects), "-o", str(work / library_name())], False)
        failures = [message for message in [run(link)] if message]
    if failures:
        raise NativeBuildError(failures[0])


def missing_prerequisite() -> str | None:
    """What this machine lacks for the kernels (x86-64 with AVX2 and FMA, a C++ compiler), or None."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return f"the kernels are x86-64 code and this machine is {platform.machine()}"
    flags = cpu_flags()  # checked before loading: the library itself is AVX2 code (empty: unknown)
    if flags and not {"avx2", "fma"} <= flags:
        return "this CPU lacks AVX2 or FMA"
    if _compiler() is None and not any((folder / library_name()).is_file() for folder in _build_dirs()):
        return NO_COMPILER
    return None


@functools.cache
def _register() -> str | None:
    """Build, load and register the kernels once per process; the reason they cannot run, or None."""
    missing = missing_prerequisite()
    if missing is not None:
        return missing
    try:
        library = ctypes.CDLL(str(build()))
    except (NativeBuildError, OSError) as error:
        return str(error)
    if not library.stylebench_native_supported():
        return "this CPU lacks AVX2 or FMA"
    for target, symbol in TARGETS.items():
        jax.ffi.register_ffi_target(target, jax.ffi.pycapsule(getattr(library, symbol)), platform="cpu")
    return None


def unavailable() -> str | None:
    """Why the C++ kernels cannot run in this process (built and registered on first call), or
    ``None`` when they can."""
    return _register()


def varying_axes(x) -> frozenset:
    """The manual mesh axes over which ``x`` varies inside a ``shard_map`` (empty outside one)."""
    aval = jax.typeof(x)
    manual = getattr(aval, "manual_axis_type", None)  # jax 0.10; ``vma`` in earlier versions
    return frozenset(manual.varying) if manual is not None else frozenset(getattr(aval, "vma", ()))


def varying_like(outputs, reference):
    """Inside a ``shard_map`` with ``check_vma`` (the train step, the top-k scan) an FFI call's results
    are typed as the same on every device of the manual axes; they vary as ``reference`` does (the
    kernel ran on each device's own rows), which ``custom_vjp`` and ``out_specs`` check."""
    axes = varying_axes(reference)
    return tuple(jax.lax.pcast(x, tuple(sorted(axes - varying_axes(x))), to="varying")
                 if axes - varying_axes(x) else x for x in outputs)


def main() -> int:
    reason = unavailable()
    if reason is not None:
        print(f"C++ kernels unavailable: {reason}", file=sys.stderr)
        return 1
    print(build())
    return 0


if __name__ == "__main__":
    sys.exit(main())
