"""Argument helpers shared by subcommands: mesh, cache, data root, and checks of paths and numbers
that run before any work (a bad flag never costs an hour of embedding first)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

from stylebench_jax.errors import UserInputError


def add_mesh_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--mesh", default=None, metavar="SPEC",
        help="device mesh, e.g. 'data=4,model=2' (default: every device on the data axis)")


def build_mesh(spec: str | None):
    """The run's one ``Mesh`` from ``--mesh`` (every library call of the run gets this object)."""
    from stylebench_jax.parallel import make_mesh
    from stylebench_jax.parallel.distributed import process_count, warm_up

    try:
        mesh = make_mesh(spec)
    except ValueError as error:
        raise UserInputError(f"--mesh {spec}: {error}") from None
    # every process must hold part of the mesh: one without a device has no shard of any input
    # and would stop in the warm-up collective (checked on every process alike, so all leave)
    absent = sorted(set(range(process_count())) - {d.process_index for d in mesh.devices.flat})
    if absent:
        raise UserInputError(f"--mesh {spec}: process {absent[0]} of {process_count()} has no device in "
                             f"the mesh (it takes {mesh.devices.size} devices, the first ones; give a mesh "
                             "over every process's devices, or leave --mesh out)")
    warm_up(mesh)  # several processes: set up the mesh's communicators together
    return mesh


LONG_TEXT_HELP = """\
how neural models embed texts over the token budget: chunk (default; ours: split at sentences with
spaCy's sentencizer, pack chunks within the model's budget (sentence_bert_config.json, 256 for
MiniLM), cut over-long sentences into windows, mean-pool the chunk vectors), truncate (keep the
first budget tokens), steb (STEB's chunk-and-pool: budget = the tokenizer's model_max_length, 512
for MiniLM; sentences from the en_core_web_sm parser; over-long sentences truncated; by default mean
pooling, no normalisation, no prompt, as STEB's generic loader (embed's --pooling/--prompt still apply);
BERT-family encoders only), steb-truncate
(STEB's settings, each text truncated: its App. F comparison)"""


def add_long_text_arguments(parser: argparse.ArgumentParser) -> None:
    """``--long-text`` and ``--max-length`` (neural models; baselines ignore them). Both are part of a
    neural model's identity, hence of the embedding cache's keys and of every cell's fingerprint."""
    parser.add_argument("--long-text", choices=("chunk", "truncate", "steb", "steb-truncate"),
                        default="chunk", help=LONG_TEXT_HELP)
    parser.add_argument("--max-length", type=int, default=None, metavar="N",
                        help="token budget per sequence incl. special tokens (default: the model's; with "
                             "steb modes it caps the tokenizer's limit)")


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


def add_data_root_argument(parser: argparse.ArgumentParser, *, config_key: bool = False) -> None:
    """``--data-root``; ``config_key``: the command's config has a ``data_root`` the flag overrides."""
    where = ("; overrides the config's data_root (default: data_root, else $STYLEBENCH_DATA" if config_key
             else " (default: $STYLEBENCH_DATA")
    parser.add_argument("--data-root", default=None, metavar="DIR",
                        help=f"folder holding the datasets{where}, else ../shared/data)")


def data_root_argument(args: argparse.Namespace, *, fallback: bool = True) -> Path | None:
    """``--data-root`` as a Path, checked to be a directory; without the flag ``default_data_root()``
    (``fallback``; none found is an error) or None (the config's own ``data_root`` applies)."""
    if not args.data_root:
        if not fallback:
            return None
        root = default_data_root()
        if root is None:
            raise UserInputError("no data root: pass --data-root DIR or set $STYLEBENCH_DATA "
                                 "(default ../shared/data was not found)")
        return root
    root = Path(args.data_root)
    if not root.is_dir():
        found = "not a directory" if root.exists() else "no such directory"
        raise UserInputError(f"--data-root {root}: {found}")
    return root


def check_positive(value: int | None, flag: str, *, allow_zero: bool = False) -> None:
    """``UserInputError`` for a number below 1 (below 0 with ``allow_zero``); None passes."""
    if value is None:
        return
    low = 0 if allow_zero else 1
    if value < low:
        raise UserInputError(f"{flag}: expected {'a non-negative' if allow_zero else 'a positive'} "
                             f"integer, got {value}")


def _check_parent(path: Path, flag: str) -> None:
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.exists():
        raise UserInputError(f"{flag} {path}: directory {parent} does not exist (create it first)")
    if not parent.is_dir():
        raise UserInputError(f"{flag} {path}: {parent} is a file, not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UserInputError(f"{flag} {path}: directory {parent} is not writable")


def check_output_file(path: Path, flag: str, *, suffix: str | None = None,
                      inputs: Sequence[Path | None] = ()) -> None:
    """An output file the command will write: its directory must exist (the same rule for every
    command's output file), it must not be a directory, have ``suffix`` when given, and not be one of
    ``inputs``."""
    path = Path(path)
    if suffix is not None and path.suffix != suffix:
        raise UserInputError(f"{flag} {path}: expected a {suffix} path")
    if path.is_dir():
        raise UserInputError(f"{flag} {path}: is a directory; expected a file path")
    _check_parent(path, flag)
    for source in inputs:
        if source is not None and path.exists() and Path(source).exists() and os.path.samefile(path, source):
            raise UserInputError(f"{flag} {path}: is also an input file ({source}); writing it would "
                                 "overwrite the input")


def check_output_dir(path: Path, flag: str) -> None:
    """An output directory the command creates or fills: it must not be a file, nor lie under one.
    Missing parents are created with it (``runs/quick`` on a fresh checkout, like the directories
    that configs name: ``runs/data/<name>``); an output *file*'s directory must exist
    (:func:`check_output_file`), as for a shell redirection."""
    from stylebench_jax.fileio import output_dir_problem

    problem = output_dir_problem(path)
    if problem is not None:
        raise UserInputError(f"{flag} {path}: {problem}")


def check_cache_dir(path: str | Path | None) -> None:
    """``--cache-dir`` (or ``$STYLEBENCH_CACHE``) must be a directory or creatable as one."""
    from stylebench_jax.cache import default_cache_dir

    flag = "--cache-dir" if path is not None else "$STYLEBENCH_CACHE"
    path = Path(path) if path is not None else default_cache_dir()
    for ancestor in (path, *path.parents):
        if ancestor.exists():
            if not ancestor.is_dir():
                raise UserInputError(f"{flag} {path}: {ancestor} is a file, not a directory")
            if not os.access(ancestor, os.W_OK):
                raise UserInputError(f"{flag} {path}: {ancestor} is not writable")
            return
