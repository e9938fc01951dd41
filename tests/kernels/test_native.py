"""Building the C++ kernels' library (``kernels.native``): one digest-named library for every
source, reused, older builds removed, and errors that name the cause."""

import subprocess
import sys

import pytest

from stylebench_jax.kernels import native

MISSING = native.missing_prerequisite()


@pytest.mark.skipif(MISSING is not None, reason=f"the C++ kernels cannot run: {MISSING}")
def test_build_reuses_the_digest_named_library(tmp_path, monkeypatch):
    """A build lands under its digest name in the first writable folder, leaves no temporary file,
    removes older versions (this name's and the earlier attention-only library's) from the package's
    folder only, and a second call reuses it; every FFI target's symbol is in it."""
    package, cache = tmp_path / "package", tmp_path / "cache"
    package.mkdir()
    (package / "stylebench_native-0000000000000000.so").write_bytes(b"old")
    (package / "cpu_attention-0000000000000000.so").write_bytes(b"old")
    monkeypatch.setattr(native, "_build_dirs", lambda: [package, cache])
    path = native.build()
    assert path == package / native.library_name()
    assert sorted(p.name for p in package.iterdir()) == [path.name]
    stamp = path.stat().st_mtime_ns
    assert native.build() == path and path.stat().st_mtime_ns == stamp
    assert not cache.exists()
    import ctypes

    library = ctypes.CDLL(str(path))
    assert all(hasattr(library, symbol) for symbol in native.TARGETS.values())


def test_build_errors_name_the_cause(tmp_path, monkeypatch):
    """No compiler: a message saying what to install. A source that does not compile: the command and
    the compiler's last lines; nothing is left in the build directory. The digest follows every
    source and the shared header."""
    monkeypatch.setattr(native, "_compiler", lambda: None)
    with pytest.raises(native.NativeBuildError, match=r"no C\+\+ compiler found.*apt install g\+\+"):
        native.build(tmp_path / "none")
    monkeypatch.undo()
    if native._compiler() is None:
        pytest.skip("no C++ compiler here")
    name = native.library_name()
    header = tmp_path / "native_pool.h"
    header.write_text(native.HEADERS[0].read_text() + "\n// changed\n")
    monkeypatch.setattr(native, "HEADERS", (header,))
    assert native.library_name() != name  # the digest follows the header
    monkeypatch.undo()
    bad = tmp_path / "cpu_topk.cc"
    bad.write_text("this is not C++;\n")
    monkeypatch.setattr(native, "SOURCES", (native.SOURCES[-1], bad))  # cpu_pairs.cc compiles
    assert native.library_name() != name  # and the sources
    with pytest.raises(native.NativeBuildError, match=r"^compiling cpu_topk.cc failed \(.* -c \S+/cpu_topk.cc"
                                                      r".*\n.*error"):
        native.build(tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []
    # each source compiles, the link does not (a second definition of a handler's symbol)
    bad.write_text(f'extern "C" void* {native.TARGETS[native.PAIRS_TARGET]}(void*) {{ return nullptr; }}\n')
    with pytest.raises(native.NativeBuildError, match=r"(?s)^linking cpu_pairs.o, cpu_topk.o failed \(.*\n"
                                                      r".*multiple definition of .StylebenchPairRanks"):
        native.build(tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []


@pytest.mark.skipif(MISSING is not None, reason=f"the C++ kernels cannot run: {MISSING}")
def test_module_entry_point_builds_and_prints_the_library():
    """What scripts/setup_env.sh runs: exit 0, the library's path on stdout, nothing on stderr."""
    proc = subprocess.run([sys.executable, "-m", "stylebench_jax.kernels.native"], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith(native.library_name()) and proc.stderr == ""
