"""Test set-up: 8 fake CPU devices (before jax is imported), one compiled-program cache for the
session, and paths to the shared material."""

import atexit
import os
import shutil
import tempfile

os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    # one compiled-program cache for the session, this process and the commands tests start as
    # subprocesses (their embedding caches stay per test): a program is compiled once per session
    os.environ["JAX_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp(prefix="stylebench-tests-xla-")
    atexit.register(shutil.rmtree, os.environ["JAX_COMPILATION_CACHE_DIR"], ignore_errors=True)

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("STYLEBENCH_SHARED", REPO.parent / "shared")).resolve()


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.fail(f"shared material not found at {SHARED}; set STYLEBENCH_SHARED")
    return SHARED


@pytest.fixture(scope="session")
def data_root(shared_dir) -> Path:
    return shared_dir / "data"


@pytest.fixture()
def cache_dir(tmp_path, monkeypatch) -> Path:
    """A private embedding cache per test, so tests never share or pollute a user cache."""
    path = tmp_path / "cache"
    monkeypatch.setenv("STYLEBENCH_CACHE", str(path))
    return path
