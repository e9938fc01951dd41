"""`stylebench data build CONFIG [key=value ...]`: build an authorship benchmark from raw collections."""

from __future__ import annotations

import argparse
from pathlib import Path

from stylebench_jax.commands.common import add_data_root_argument

DESCRIPTION = """\
Build an authorship attribution / verification benchmark from author-labelled text collections,
following AuthBench's construction pipeline (App. A):

  ingest      JSONL / TSV / CSV (.gz) files or directories, one declarative field mapping per
              source; bad records (missing author, empty text, wrong types, invalid UTF-8 or JSON)
              are counted with file and line in the manifest and skipped
  normalise   NFC, control characters, boilerplate lines, whitespace; authors stored as a salted
              SHA-256; token length under one named tokenizer
  dedup       exact SHA-256 and character 5-gram MinHash LSH near duplicates
  structure   required fields per task type; long documents cut into contiguous chunks
  filter      length bounds, token/character quality rules, script match, optional language-id
              and toxicity hooks, each with its own drop count
  sample      (language, length bin, genre, task type) buckets with quotas, per-author caps,
              deficit moves; exact or single-pass reservoir mode
  canonical   trim, quotes, trailing newline; re-tokenise, re-check bounds, final dedup
  split       deterministic hash of ids, stratified by bucket; no author, duplicate or (optionally)
              source / thread in two splits

Writes the config's `output` folder as a whole (built beside it, then moved in place; an existing
non-empty folder is refused unless overwrite=true, and then replaced, no earlier file kept):
manifest.json (counts per stage, rule, bucket and split,
candidate-pool statistics, bad records, the resolved config with the salt replaced by its
SHA-256 and author names in aliases/exclusions by salted hashes, SHA-256 of every split file),
splits/<split>.jsonl, release/<split>.jsonl (manifest-only release: ids, hashes, offsets, no
text), parquet/<split>.parquet (the same records; export.parquet=false turns it off) and
optionally a TensorFlow Datasets builder directory (tfds/), and build_info.json (timings). The same
config twice gives byte-identical manifest.json, splits and Parquet files. Config schema:
stylebench_jax/data/construct/config.py; a ready config: configs/data/authbench_en.yaml.
"""

EPILOG = """\
examples:
  stylebench data build configs/data/authbench_en.yaml
  stylebench data build configs/data/authbench_en.yaml output=runs/data/en_small sampling.total=2000
  stylebench data build my.yaml export.tfds=array_record export.parquet=false overwrite=true

A config problem is reported as FILE:LINE: key.path: what was expected (exit code 2).
"""


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "data", help="build benchmark data sets (stylebench data build CONFIG)",
        description="Benchmark data commands.", formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = parser.add_subparsers(dest="data_command", metavar="ACTION")
    build = actions.add_parser(
        "build", help="build an authorship benchmark from a YAML config", description=DESCRIPTION,
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    build.add_argument("config", type=Path, help="build config (YAML)")
    build.add_argument("overrides", nargs="*", default=[], metavar="key=value",
                       help="override config keys, e.g. sampling.total=5000 output=runs/x")
    add_data_root_argument(build, config_key=True)
    build.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    build.set_defaults(func=run_build, no_cache=True)
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1], no_cache=True)


def run_build(args: argparse.Namespace) -> int:
    import dataclasses

    from stylebench_jax.commands.common import data_root_argument, default_data_root
    from stylebench_jax.config import InvalidField, locate_field
    from stylebench_jax.data.construct import BuildConfig, build_benchmark, load_build_config
    from stylebench_jax.errors import UserInputError

    config = load_build_config(args.config, args.overrides)
    flag_root = data_root_argument(args, fallback=False)
    if flag_root is not None:
        config = dataclasses.replace(config, data_root=flag_root)
    if config.data_root is None:
        root = default_data_root()
        if root is None:
            raise UserInputError(f"{args.config}: data_root is null and neither $STYLEBENCH_DATA nor "
                                 "../shared/data exists; set data_root (or pass data_root=DIR)")
        config = dataclasses.replace(config, data_root=root)
    try:
        build_benchmark(config, quiet=args.quiet, keep=[args.config])
    except InvalidField as error:  # a file, tokenizer, hook or package the config names
        raise locate_field(args.config, BuildConfig, list(args.overrides), error) from None
    return 0
