"""Encoder throughput: our Flax MiniLM vs the PyTorch reference (transformers BertModel), same CPU.

    python benchmarks/bench_encoder.py --json benchmarks/results/encoder.json

Regimes (sentences/second, higher is better):
  (a) fixed batch of 64 x 128 tokens (pure forward; both sides get the same token ids);
  (b) 2,000 real texts from ../shared/data at their natural lengths (1,000 CDS sentences, 500 PASTEL
      sentences, 500 Reuters C50 articles), truncated at 256 tokens as the model card says. Ours:
      `FlaxEncoderEmbedder.embed` (tokenise, length buckets, jitted forward). PyTorch: the
      sentence-transformers recipe (sort by length, batches of 32 padded to the longest member,
      mean pooling, L2 normalisation) under `torch.inference_mode()`.
Compile time of our jitted programs is reported separately (first call) and excluded from the
steady-state numbers, as is PyTorch's first-call warm-up. Needs `pip install torch==2.13.0
"transformers<5"` (the `torch` extra of setup.py).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def real_texts(data_root: Path, n: int, seed: int) -> list[str]:
    """``n`` texts: half CDS sentences, a quarter PASTEL sentences, a quarter Reuters articles."""
    rng = np.random.default_rng(seed)
    with open(data_root / "cds_samples" / "cds_samples.tsv", encoding="utf-8", newline="") as handle:
        cds = [row["text"] for row in csv.DictReader(handle, delimiter="\t")]
    with open(data_root / "pastel" / "pastel_v1_sentences.tsv", encoding="utf-8", newline="") as handle:
        pastel = [row["output_sentence"] for row in csv.DictReader(handle, delimiter="\t")]
    with gzip.open(data_root / "reuters_c50" / "reuters_c50.tsv.gz", "rt", encoding="utf-8",
                   newline="") as handle:
        csv.field_size_limit(1 << 24)
        reuters = [row["text"] for row in csv.DictReader(handle, delimiter="\t")]
    counts = (n - 2 * (n // 4), n // 4, n // 4)
    texts = []
    for pool, count in zip((cds, pastel, reuters), counts):
        texts += [pool[i] for i in rng.choice(len(pool), size=count, replace=False)]
    return [texts[i] for i in rng.permutation(len(texts))]


def best_of(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def bench_ours(texts, fixed_ids, repeats, batch_size):
    import jax

    from stylebench_jax.encoders.registry import resolve_embedder
    from stylebench_jax.parallel import make_mesh

    mesh = make_mesh("data=1,model=1", devices=jax.devices()[:1])
    model = resolve_embedder("minilm", long_text="truncate", mesh=mesh, progress=False,
                             batch_size=batch_size)
    mask = np.ones_like(fixed_ids)
    start = time.perf_counter()
    model._forward(model.params, fixed_ids, mask).block_until_ready()
    compile_fixed = time.perf_counter() - start
    fixed = best_of(lambda: model._forward(model.params, fixed_ids, mask).block_until_ready(), repeats)
    fixed_out = np.asarray(model._forward(model.params, fixed_ids, mask))
    start = time.perf_counter()
    vectors = model.embed(texts)
    first_call = time.perf_counter() - start
    natural = best_of(lambda: model.embed(texts), repeats)
    return {"fixed_s": fixed, "natural_s": natural, "natural_first_call_s": first_call,
            "compile_fixed_s": compile_fixed, "programs": model._forward._cache_size()}, vectors, fixed_out


def bench_torch(texts, fixed_ids, repeats, batch_size, threads):
    import torch
    from transformers import AutoTokenizer, BertModel

    from stylebench_jax.encoders.registry import minilm_dir

    torch.set_num_threads(threads)
    model = BertModel.from_pretrained(str(minilm_dir()), local_files_only=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(minilm_dir()), local_files_only=True)

    def pool(hidden, mask):
        mask = mask.unsqueeze(-1).to(hidden.dtype)
        vectors = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(vectors, dim=-1)

    ids = torch.from_numpy(fixed_ids.astype(np.int64))
    mask = torch.ones_like(ids)

    def fixed_run():
        with torch.inference_mode():
            return pool(model(input_ids=ids, attention_mask=mask).last_hidden_state, mask)

    fixed_run()
    fixed = best_of(fixed_run, repeats)
    fixed_out = fixed_run().numpy()

    def natural_run():
        order = np.argsort([-len(t) for t in texts], kind="stable")
        out = np.empty((len(texts), model.config.hidden_size), np.float32)
        with torch.inference_mode():
            for start in range(0, len(texts), batch_size):
                rows = order[start:start + batch_size]
                batch = tokenizer([texts[i] for i in rows], padding=True, truncation=True,
                                  max_length=256, return_tensors="pt")
                hidden = model(**batch).last_hidden_state
                out[rows] = pool(hidden, batch["attention_mask"]).numpy()
        return out

    start = time.perf_counter()
    vectors = natural_run()
    first_call = time.perf_counter() - start
    natural = best_of(natural_run, repeats)
    return {"fixed_s": fixed, "natural_s": natural, "natural_first_call_s": first_call,
            "torch": torch.__version__, "threads": threads}, vectors, fixed_out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-root", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--n-texts", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64, help="ours and PyTorch's (regime b)")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=REPO / "benchmarks" / "results" / "encoder.json")
    args = parser.parse_args(argv)

    texts = real_texts(args.data_root, args.n_texts, args.seed)
    fixed_ids = np.random.default_rng(args.seed).integers(1000, 30000, size=(64, 128)).astype(np.int32)
    fixed_ids[:, 0], fixed_ids[:, -1] = 101, 102
    ours, ours_vectors, ours_fixed = bench_ours(texts, fixed_ids, args.repeats, args.batch_size)
    peer, torch_vectors, torch_fixed = bench_torch(texts, fixed_ids, args.repeats, args.batch_size,
                                                   args.threads)
    cos_natural = float(np.min((ours_vectors * torch_vectors).sum(1)))
    cos_fixed = float(np.min((ours_fixed * torch_fixed).sum(1)))

    rows = [
        ("(a) 64 x 128 tokens", 64 / ours["fixed_s"], 64 / peer["fixed_s"], cos_fixed),
        (f"(b) {len(texts)} real texts", len(texts) / ours["natural_s"], len(texts) / peer["natural_s"],
         cos_natural),
    ]
    print(f"{'regime':<24} {'ours sent/s':>12} {'torch sent/s':>13} {'ratio':>7} {'min cos':>9}")
    for name, a, b, cos in rows:
        print(f"{name:<24} {a:>12.1f} {b:>13.1f} {a / b:>6.2f}x {cos:>9.6f}")
    print(f"ours: compile (a) {ours['compile_fixed_s']:.2f}s; first call (b) incl. compiles "
          f"{ours['natural_first_call_s']:.2f}s over {ours['programs']} programs")
    result = {
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version()},
        "settings": vars(args) | {"data_root": str(args.data_root), "json": str(args.json)},
        "ours": ours, "torch": peer,
        "fixed_batch": {"ours_sent_per_s": rows[0][1], "torch_sent_per_s": rows[0][2],
                        "ratio": rows[0][1] / rows[0][2], "min_cosine": cos_fixed},
        "real_texts": {"n": len(texts), "ours_sent_per_s": rows[1][1], "torch_sent_per_s": rows[1][2],
                       "ratio": rows[1][1] / rows[1][2], "min_cosine": cos_natural},
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
