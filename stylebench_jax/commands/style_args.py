"""Flags shared by the commands that score style similarity (``calibrate``, ``score``, ``transfer``):
the embedder and its options, and the inference settings of ``similarity.StyleSettings``."""

from __future__ import annotations

import argparse

from stylebench_jax.commands.common import (
    add_cache_arguments,
    add_data_root_argument,
    add_mesh_argument,
    check_cache_dir,
    check_positive,
    default_data_root,
)
from stylebench_jax.errors import UserInputError

SETTING_FLAGS = ("chunk_size", "overlap", "max_tokens", "num_chunks", "max_chunks", "aggregate", "topk")


def add_style_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("style similarity settings (seed 003 §6; default: the calibration "
                                      "file's, else Writing7's)")
    group.add_argument("--chunk-size", type=int, default=None, help="sentences per window (14)")
    group.add_argument("--overlap", type=int, default=None,
                       help="sentences shared by neighbouring windows (4)")
    group.add_argument("--max-tokens", type=int, default=None,
                       help="tokens per chunk before a text counts as long (512)")
    group.add_argument("--num-chunks", default=None, help="windows per long text: 'auto' or a number (auto)")
    group.add_argument("--max-chunks", type=int, default=None, help="cap on windows per text with auto (8)")
    group.add_argument("--aggregate", choices=("mean", "topk_mean"), default=None,
                       help="how chunk-pair cosines combine (mean)")
    group.add_argument("--topk", type=int, default=None, help="k of topk_mean (5)")


def add_embedder_arguments(parser: argparse.ArgumentParser, *, model_required: bool = True) -> None:
    parser.add_argument("--model", required=model_required, default=None if model_required else "minilm",
                        help="'minilm', 'baseline:<name>', a local model directory or a `stylebench "
                             "train` run")
    parser.add_argument("--batch-size", type=int, default=64, help="sequences per batch (default: 64)")
    parser.add_argument("--max-length", type=int, default=None,
                        help="embedder token budget per sequence (default: the model's, at most 512)")
    add_mesh_argument(parser)
    add_cache_arguments(parser)
    add_data_root_argument(parser)


def style_settings(args: argparse.Namespace, calibration=None):
    """``StyleSettings`` from the flags given; the others from ``calibration.meta`` when a calibration
    file is used, else the defaults."""
    from stylebench_jax.similarity import StyleSettings, parse_num_chunks

    values = {k: calibration.meta[k] for k in SETTING_FLAGS} if calibration is not None else {}
    for name in SETTING_FLAGS:
        given = getattr(args, name, None)
        if given is not None:
            values[name] = parse_num_chunks(given) if name == "num_chunks" else given
    settings = StyleSettings(**values)
    if getattr(args, "topk", None) is not None and settings.aggregate != "topk_mean":
        raise UserInputError(f"topk {args.topk}: the k of the topk_mean aggregate; the aggregate here is "
                             f"{settings.aggregate!r}")
    return settings


def check_embedder_arguments(args: argparse.Namespace) -> None:
    check_positive(args.batch_size, "--batch-size")
    check_positive(args.max_length, "--max-length")
    if args.max_length is not None and str(args.model).strip().startswith("baseline:"):
        raise UserInputError(f"--max-length: an option of neural models; {args.model.strip()} has none")
    if not args.no_cache:
        check_cache_dir(args.cache_dir)


def build_embedder(name: str, args: argparse.Namespace, mesh, *, progress: bool):
    from stylebench_jax.similarity import resolve_style_embedder

    return resolve_style_embedder(name, max_length=args.max_length, batch_size=args.batch_size, mesh=mesh,
                                  progress=progress, data_root=args.data_root or default_data_root())


def embedding_cache(args: argparse.Namespace):
    from stylebench_jax.cache import EmbeddingCache

    return EmbeddingCache(args.cache_dir, enabled=not args.no_cache)
