"""Argument helpers shared by subcommands (mesh, cache, data root)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def add_mesh_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--mesh", default=None, metavar="SPEC",
        help="device mesh, e.g. 'data=4,model=2' (default: every device on the data axis)")


def add_cache_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cache-dir", default=None, metavar="DIR",
        help="embedding cache directory (default: $STYLEBENCH_CACHE or ~/.cache/stylebench)")
    parser.add_argument("--no-cache", action="store_true",
                        help="neither read nor write the embedding cache")


def default_data_root() -> Path | None:
    """``$STYLEBENCH_DATA``, else ``../shared/data`` (relative to cwd or the repo) when it exists."""
    env = os.environ.get("STYLEBENCH_DATA")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parents[2]
    for candidate in (Path.cwd() / ".." / "shared" / "data", here.parent / "shared" / "data"):
        if candidate.is_dir():
            return candidate.resolve()
    return None


def add_data_root_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-root", default=None, metavar="DIR",
        help="folder holding the datasets (default: $STYLEBENCH_DATA, else ../shared/data)")
