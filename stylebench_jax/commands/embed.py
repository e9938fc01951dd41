"""`stylebench embed`: texts from a file -> float32 ``[N, D]`` ``.npy`` in input order."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from stylebench_jax.commands.common import (
    add_cache_arguments,
    add_data_root_argument,
    add_long_text_arguments,
    add_mesh_argument,
    build_mesh,
    check_cache_dir,
    check_output_file,
    check_positive,
    default_data_root,
)
from stylebench_jax.errors import UserInputError

EPILOG = """\
examples:
  stylebench embed --model minilm --input texts.txt --output emb.npy
  stylebench embed --model minilm --input docs.jsonl --text-field body --output emb.npy \\
      --long-text chunk --mesh data=4,model=2
  stylebench embed --model ./my_model_dir --input texts.txt --output emb.npy --no-cache

Texts longer than the model's token budget are split at sentence boundaries, packed into chunks
within the budget, embedded chunk by chunk and mean-pooled (--long-text chunk, ours; --long-text
steb, STEB's exact settings), or cut at the budget (--long-text truncate / steb-truncate). Vectors
are cached by (model identity, settings, text): a second run on the same input runs no encoder
forward pass.
"""


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "embed", help="embed texts from a .txt or .jsonl file into a .npy matrix",
        description="Embed every text of a .txt (one per line) or .jsonl file; write float32 [N, D].",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="minilm",
                        help="'minilm', 'baseline:<name>' or a local model directory (default: minilm)")
    parser.add_argument("--input", required=True, type=Path, help=".txt or .jsonl file of texts")
    parser.add_argument("--output", required=True, type=Path, help="output .npy path")
    parser.add_argument("--text-field", default="text", help="JSONL field holding the text (default: text)")
    parser.add_argument("--batch-size", type=int, default=64, help="sequences per batch (default: 64)")
    add_long_text_arguments(parser)
    add_mesh_argument(parser)
    add_cache_arguments(parser)
    add_data_root_argument(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from stylebench_jax.cache import EmbeddingCache
    from stylebench_jax.data.readers import MissingField, read_texts
    from stylebench_jax.encoders.base import Embedder
    from stylebench_jax.encoders.registry import resolve_embedder
    from stylebench_jax.fileio import save_npy_atomic

    # Every check that needs no model runs first: a bad path never costs a model load or an embedding.
    check_output_file(args.output, "--output", suffix=".npy", inputs=[args.input])
    check_positive(args.batch_size, "--batch-size")
    check_positive(args.max_length, "--max-length")
    if not args.no_cache:
        check_cache_dir(args.cache_dir)
    mesh = build_mesh(args.mesh)
    try:
        texts = read_texts(args.input, text_field=args.text_field)
    except MissingField as error:
        raise UserInputError(f"{error} (choose the field with --text-field)") from None
    model = resolve_embedder(
        args.model, max_length=args.max_length, long_text=args.long_text, batch_size=args.batch_size,
        mesh=mesh, progress=not args.quiet,
        data_root=args.data_root or default_data_root())
    if not isinstance(model, Embedder):
        raise UserInputError(f"{args.model} is a pairwise similarity without vectors; it cannot embed")
    cache = EmbeddingCache(args.cache_dir, enabled=not args.no_cache)
    vectors = cache.embed(model, texts)
    save_npy_atomic(args.output, vectors)
    if not args.quiet:
        print(f"wrote {args.output}: {vectors.shape[0]} x {vectors.shape[1]} float32 "
              f"({cache.hits} cached, {cache.misses} embedded)", file=sys.stderr)
    return 0
