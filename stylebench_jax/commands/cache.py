"""`stylebench cache info|clean|clear`: show, tidy or empty the embedding cache."""

from __future__ import annotations

import argparse
import json

from stylebench_jax.errors import UserInputError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "cache", help="show the embedding cache's size, tidy it or empty it",
        description="Inspect, tidy or empty the content-addressed embedding cache.")
    parser.add_argument("action", choices=("info", "clean", "clear"),
                        help="info: one line per model identity; clean: remove what killed runs left "
                             "behind (orphaned temporary files, incomplete shards); clear: delete every "
                             "cached vector and the compiled programs kept beside them (xla/)")
    parser.add_argument("--cache-dir", default=None, metavar="DIR",
                        help="cache directory (default: $STYLEBENCH_CACHE or ~/.cache/stylebench)")
    parser.add_argument("--json", action="store_true", help="print info as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from stylebench_jax.cache import EmbeddingCache

    cache = EmbeddingCache(args.cache_dir)
    if cache.root.exists() and not cache.root.is_dir():
        raise UserInputError(f"--cache-dir {cache.root}: is a file, not a directory")
    if args.action == "clean":
        stats = cache.clean()
        print(f"cleaned {cache.root}: {stats['orphans']} orphaned temporary file(s), "
              f"{stats['incomplete_shards']} incomplete shard(s), {stats['damaged_shards']} damaged shard(s) "
              f"({stats['bytes'] / 2**20:.1f} MiB freed)")
        return 0
    if args.action == "clear":
        freed = cache.clear()
        print(f"cleared {cache.root} ({freed / 2**20:.1f} MiB freed)")
        return 0
    rows, programs = cache.info(), cache.programs_bytes()
    if args.json:
        print(json.dumps({"root": str(cache.root), "spaces": rows, "compiled_programs_bytes": programs},
                         indent=2))
        return 0
    total = sum(r["bytes"] for r in rows)
    print(f"{cache.root}: {sum(r['vectors'] for r in rows)} vectors, {total / 2**20:.1f} MiB; "
          f"compiled programs (xla/) {programs / 2**20:.1f} MiB")
    for row in rows:
        print(f"  {row['vectors']:>9} vectors {row['bytes'] / 2**20:>8.1f} MiB  {row['identity']}")
    return 0
