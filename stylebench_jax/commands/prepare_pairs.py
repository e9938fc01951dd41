"""`stylebench prepare-pairs CONFIG [key=value ...]`: Writing7 training pairs from book collections."""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

from stylebench_jax.commands.common import (
    add_cache_arguments,
    add_data_root_argument,
    add_mesh_argument,
    build_mesh,
    check_output_dir,
    data_root_argument,
    default_data_root,
)
from stylebench_jax.errors import UserInputError

DESCRIPTION = """\
Build training data for style encoders the way Writing7 does (seed paper 003, section 3): books are
standardised (NFC, Project Gutenberg boilerplate, whitespace), split into sentences (spaCy
sentencizer; regex without spaCy) and cut into overlapping windows (14 sentences, overlap 4,
>= 200 characters, <= 800 per book); non-English and cross-book boilerplate chunks are dropped;
books are split 70/15/15 by book or by author; up to 80 chunks per book are embedded with MiniLM
(through the embedding cache) to find each book's 50 nearest books, and every book gets 20
positive pairs (two chunks of the book) and 40 negatives (36 from neighbour books, 4 random), each
chunk labelled with a coarse topic."""

EPILOG = """\
examples:
  stylebench prepare-pairs configs/pairs/novels.yaml
  stylebench prepare-pairs configs/pairs/novels_small.yaml output.dir=runs/pairs/tiny seed=1
  stylebench prepare-pairs configs/pairs/novels.yaml split.by=author output.format=jsonl \\
      output.dir=runs/pairs/novels_by_author

Every config key can be overridden as key.path=value (validated like the file). The output
directory receives pairs.parquet (text1, text2, label, book1, book2, pair_type, topic1, topic2,
same_topic, split, author1, author2, negative_type, chunk1, chunk2), chunks.parquet (every kept
chunk with its book, author, split and topic: group-labelled texts for group-contrastive
training), stats.json (counts per stage, split, pair type and topic), config.json and run.json
(timings). It appears complete or not at all; an existing directory is replaced only with
output.overwrite=true. The same config and seed give the same bytes in every file but run.json
(timings). A JSONL source
(`- jsonl: FILE`, objects with "text" and "group") is any author-labelled collection.
"""


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "prepare-pairs", help="build Writing7 training pairs (and group-labelled chunks) from books",
        description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", type=Path, help="YAML config (e.g. configs/pairs/novels.yaml)")
    parser.add_argument("overrides", nargs="*", default=[], metavar="key=value",
                        help="config overrides, e.g. split.by=author pairs.negatives_per_book=20")
    add_mesh_argument(parser)
    add_cache_arguments(parser)
    add_data_root_argument(parser, config_key=True)
    parser.add_argument("--quiet", action="store_true", help="no progress bars or summary")
    parser.set_defaults(func=run)


def _check_output(directory: Path, overwrite: bool) -> None:
    check_output_dir(directory, "output.dir")
    if directory.exists() and not overwrite:
        raise UserInputError(f"output.dir {directory}: already exists; choose another output.dir or set "
                             "output.overwrite=true to replace it")


def run(args: argparse.Namespace) -> int:
    from stylebench_jax.cache import EmbeddingCache
    from stylebench_jax.config import config_to_dict, load_config
    from stylebench_jax.data.pairs import PreparePairsConfig, load_lexicon, prepare_pairs, write_prepared
    from stylebench_jax.data.pairs.output import require_format
    from stylebench_jax.data.pairs.sources import check_source
    from stylebench_jax.encoders.base import Embedder
    from stylebench_jax.encoders.registry import resolve_embedder

    started = time.perf_counter()
    config = load_config(args.config, PreparePairsConfig, args.overrides)
    data_root = data_root_argument(args, fallback=False) or config.data_root or default_data_root()
    # Everything a user can get wrong is checked before the first book is read.
    require_format(config.output.format)
    _check_output(config.output.dir, config.output.overwrite)
    for source in config.sources:
        check_source(source, data_root)
    lexicon = load_lexicon(config.topics.lexicon)
    mesh = build_mesh(args.mesh)
    m = config.mining
    try:
        model = resolve_embedder(m.model, max_length=m.max_length, long_text=m.long_text,
                                 batch_size=m.batch_size, mesh=mesh, progress=not args.quiet,
                                 data_root=data_root)
    except UserInputError as error:
        raise UserInputError(f"{args.config}: mining.model: {error}") from None
    if not isinstance(model, Embedder):
        raise UserInputError(f"mining.model {m.model!r} is a pairwise similarity without vectors; "
                             "hard-negative mining needs an embedder")
    cache = EmbeddingCache(args.cache_dir, enabled=not args.no_cache)
    try:
        result = prepare_pairs(config, embed=lambda texts: cache.embed(model, texts), data_root=data_root,
                               mesh=mesh, lexicon=lexicon, progress=not args.quiet, embedder_name=model.name)
    except ValueError as error:  # data that cannot give pairs (too few books for the splits, ...)
        raise UserInputError(f"{args.config}: cannot prepare pairs: {error}") from None
    run_info = {
        "command": "stylebench prepare-pairs " + " ".join([str(args.config), *args.overrides]),
        "seconds_total": round(time.perf_counter() - started, 3),
        "seconds_per_stage": result.timings,
        "embedder_identity": model.identity,
        "cache": {"enabled": cache.enabled, "root": str(cache.root), "hits": cache.hits,
                  "misses": cache.misses},
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    write_prepared(config.output.dir, chunks=result.chunks, pairs=result.pairs, stats=result.stats,
                   config=config_to_dict(config), run=run_info, fmt=config.output.format,
                   overwrite=config.output.overwrite)
    if not args.quiet:
        stages = result.stats["stages"]
        per_split = ", ".join(f"{name} {s['books']} books / {s['pairs']} pairs"
                              for name, s in result.stats["splits"].items())
        print(f"wrote {config.output.dir}: {stages['chunks']} chunks of {stages['books']} books; "
              f"{per_split}; {run_info['seconds_total']:.0f} s ({cache.hits} cached, {cache.misses} "
              "embedded)",
              file=sys.stderr)
    return 0
