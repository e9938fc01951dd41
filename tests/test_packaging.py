"""A wheel built from this checkout carries what the code reads at run time (suites, word lists, the
C++ kernel source)."""

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHECK = """
from stylebench_jax.data.suites import SUITES_DIR, available_suites, load_suite
from stylebench_jax.encoders.baselines.function_words import FunctionWordEmbedder
assert SUITES_DIR.name == "bundled_suites", SUITES_DIR
assert available_suites() == ["authbench", "full", "quick", "stel"], available_suites()
for name in available_suites():
    assert load_suite(name).datasets, name
from stylebench_jax.data.pairs.topics import load_lexicon
assert load_lexicon().topics == ("religious", "historical", "adventure", "romance", "general")
from stylebench_jax.kernels.native import HEADERS, SOURCES
assert all(p.is_file() and "XLA_FFI_DEFINE_HANDLER_SYMBOL" in p.read_text() for p in SOURCES), SOURCES
assert all(p.is_file() for p in HEADERS), HEADERS
print("ok", len(FunctionWordEmbedder().entries))
"""


def test_wheel_install_finds_suites_and_resources(tmp_path):
    # Build from a copy: setuptools reuses a checkout's build/ directory, stale files included.
    source = tmp_path / "src"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".git", ".venv*", "build", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis", "runs", "results"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "dist"),
                    str(source)], check=True, capture_output=True, timeout=300)
    wheel = next((tmp_path / "dist").glob("stylebench_jax-*.whl"))
    subprocess.run([*pip, "install", "--no-deps", "--target", str(tmp_path / "site"), str(wheel)],
                   check=True, capture_output=True, timeout=300)
    # Run from an empty directory with only the installed copy on the path: no checkout to fall back on.
    proc = subprocess.run([sys.executable, "-c", CHECK], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env={"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ok ")
