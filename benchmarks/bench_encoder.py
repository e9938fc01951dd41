"""Encoder throughput: our Flax MiniLM vs the PyTorch reference (transformers BertModel), same CPU.

    python benchmarks/bench_encoder.py --json benchmarks/results/encoder.json

Regimes (sentences/second, higher is better):
  (a) fixed batch of 64 x 128 tokens (pure forward; both sides get the same token ids);
  (b) 2,000 real texts from ../shared/data at their natural lengths (1,000 CDS sentences, 500 PASTEL
      sentences, 500 Reuters C50 articles), truncated at 256 tokens as the model card says. Ours:
      `FlaxEncoderEmbedder.embed` (tokenise, length buckets, jitted forward). PyTorch: the
      sentence-transformers recipe (sort by length, batches of 32 padded to the longest member,
      mean pooling, L2 normalisation) under `torch.inference_mode()`.
  (c) decoder row: a Qwen2-shaped decoder of ~100M parameters (hidden 512, 8 layers, 8 heads / 2 KV
      heads, MLP 1408, vocabulary 151,936, QKV bias) with transformers' random initialisation, saved once
      to a temporary directory; `--decoder-texts` real texts truncated at `--decoder-max-length` tokens,
      last-token pooling. Ours: `FlaxDecoderEmbedder.embed`; PyTorch: `Qwen2Model` with the same recipe as
      (b). The tokenizer is the tiny byte-level BPE of tests/fixtures/qwen2 (Qwen's own vocabulary
      cannot be downloaded here), so texts are ~2-3x more tokens than with Qwen's tokenizer.
Compile time of our jitted programs is reported separately (first call) and excluded from the
steady-state numbers, as is PyTorch's first-call warm-up. Needs `pip install torch==2.13.0
"transformers<5"` (the `torch` extra of setup.py). `--rows decoder` runs only (c).
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


QWEN2_100M = dict(hidden_size=512, intermediate_size=1408, num_hidden_layers=8, num_attention_heads=8,
                  num_key_value_heads=2, vocab_size=151936, max_position_embeddings=32768,
                  rope_theta=1000000.0, tie_word_embeddings=True, use_sliding_window=False)


def write_qwen2_100m(folder: Path, seed: int) -> int:
    """Random Qwen2-shaped checkpoint + the fixture tokenizer in ``folder``; returns the parameter count."""
    import shutil

    import torch
    import transformers

    torch.manual_seed(seed)
    model = transformers.Qwen2Model(transformers.Qwen2Config(**QWEN2_100M)).eval()
    model.save_pretrained(folder, safe_serialization=True)
    fixture = REPO / "tests" / "fixtures" / "qwen2" / "model"
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt",
                 "special_tokens_map.json"):
        shutil.copy(fixture / name, folder / name)
    return sum(p.numel() for p in model.parameters())


def bench_decoder(texts, args) -> dict:
    """Regime (c): ours vs PyTorch on the same random Qwen2-shaped checkpoint and texts."""
    import tempfile

    import jax
    import torch
    import transformers

    from stylebench_jax.encoders.neural import FlaxDecoderEmbedder
    from stylebench_jax.parallel import make_mesh

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        n_params = write_qwen2_100m(folder, args.seed)
        ours = FlaxDecoderEmbedder(folder, mesh=make_mesh("data=1,model=1", devices=jax.devices()[:1]),
                                   long_text="truncate", max_length=args.decoder_max_length, progress=False,
                                   batch_size=args.batch_size)
        start = time.perf_counter()
        ours_vectors = ours.embed(texts)
        ours_first = time.perf_counter() - start
        ours_s = best_of(lambda: ours.embed(texts), args.repeats)
        model = transformers.Qwen2Model.from_pretrained(folder).eval()
        tokenizer = transformers.AutoTokenizer.from_pretrained(folder)

    def torch_run():
        order = np.argsort([-len(t) for t in texts], kind="stable")
        out = np.empty((len(texts), model.config.hidden_size), np.float32)
        with torch.inference_mode():
            for start in range(0, len(texts), args.batch_size):
                rows = order[start:start + args.batch_size]
                batch = tokenizer([texts[i] for i in rows], padding=True, truncation=True,
                                  max_length=args.decoder_max_length, return_tensors="pt")
                hidden = model(**batch).last_hidden_state  # right padding: positions are arange
                last = batch["attention_mask"].sum(1) - 1
                pooled = hidden[torch.arange(len(rows)), last]
                out[rows] = torch.nn.functional.normalize(pooled, dim=-1).numpy()
        return out

    torch_vectors = torch_run()
    torch_s = best_of(torch_run, args.repeats)
    tokens = sum(len(ids) for ids in ours.tokenizer.content_ids(texts))
    return {"n_params": n_params, "n_texts": len(texts), "content_tokens": tokens,
            "max_length": args.decoder_max_length, "ours_s": ours_s, "ours_first_call_s": ours_first,
            "torch_s": torch_s, "ours_sent_per_s": len(texts) / ours_s,
            "torch_sent_per_s": len(texts) / torch_s,
            "ratio": torch_s / ours_s, "min_cosine": float(np.min((ours_vectors * torch_vectors).sum(1))),
            "programs": ours._forward._cache_size()}


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
    parser.add_argument("--rows", choices=("all", "minilm", "decoder"), default="all")
    parser.add_argument("--decoder-texts", type=int, default=256)
    parser.add_argument("--decoder-max-length", type=int, default=128)
    args = parser.parse_args(argv)
    if args.rows == "decoder":
        texts = real_texts(args.data_root, args.decoder_texts, args.seed)
        row = bench_decoder(texts, args)
        print(f"{'regime':<34} {'ours sent/s':>12} {'torch sent/s':>13} {'ratio':>7} {'min cos':>9}")
        name = f"(c) Qwen2-shaped {row['n_params'] / 1e6:.0f}M, {len(texts)} texts"
        print(f"{name:<34} "
              f"{row['ours_sent_per_s']:>12.1f} {row['torch_sent_per_s']:>13.1f} {row['ratio']:>6.2f}x "
              f"{row['min_cosine']:>9.6f}")
        print(f"ours: first call incl. compiles {row['ours_first_call_s']:.2f}s over {row['programs']} "
              "programs")
        result = {"machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                              "python": platform.python_version(), "loadavg": os.getloadavg()},
                  "settings": vars(args) | {"data_root": str(args.data_root), "json": str(args.json)},
                  "decoder": row}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
        return 0

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
