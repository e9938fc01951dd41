"""Encoder throughput: our Flax MiniLM vs the PyTorch reference (transformers BertModel), same CPU.

    python benchmarks/bench_encoder.py --json benchmarks/results/encoder.json

On a GPU (JAX with CUDA) regimes (a) and (b) run both sides on the card: ours through JAX's GPU
backend, PyTorch on ``cuda`` (``--dtype bfloat16`` for both in bfloat16; ``--matmul-precision
default`` lets both use TF32 for float32 products, ``highest``, the default, keeps true float32).
The decoder row's PyTorch side and regime (d)'s sentence-transformers process stay on the CPU.

Regimes (sentences/second, higher is better):
  (a) fixed batch of 64 x 128 tokens (pure forward; both sides get the same token ids);
  (b) 2,000 real texts from ../shared/data at their natural lengths (1,000 CDS sentences, 500 PASTEL
      sentences, 500 Reuters C50 articles), truncated at 256 tokens as the model card says. Ours:
      `FlaxEncoderEmbedder.embed` (tokenise, length buckets, jitted forward). PyTorch: the
      sentence-transformers recipe (sort by length, batches of `--batch-size` rows (64, ours too)
      padded to the longest member,
      mean pooling, L2 normalisation) under `torch.inference_mode()`.
  (c) decoder row: a Qwen2-shaped decoder of ~100M parameters (hidden 512, 8 layers, 8 heads / 2 KV
      heads, MLP 1408, vocabulary 151,936, QKV bias) with transformers' random initialisation, saved once
      to a temporary directory; `--decoder-texts` real texts truncated at `--decoder-max-length` tokens,
      last-token pooling. Ours: `FlaxDecoderEmbedder.embed`; PyTorch: `Qwen2Model` with the same recipe as
      (b). The tokenizer is the tiny byte-level BPE of tests/fixtures/qwen2 (Qwen's own vocabulary
      cannot be downloaded here), so texts are ~2-3x more tokens than with Qwen's tokenizer. Timed
      as the best of `--repeats` runs of each side in turn (ours, then PyTorch; not interleaved,
      no median); on a GPU machine ours runs on the card and PyTorch on the CPU.
  (d) whole process (`--rows process`): `stylebench embed --long-text truncate` (cold: fresh cache
      directory; warm: XLA's compiled programs kept, no embedding cache) vs a Python process running
      sentence-transformers' `encode` with its defaults, on the first 100 and 2,000 of the texts of
      (b); wall time and peak resident memory of each process (its own VmHWM, read at its exit).
Compile time of our jitted programs is reported separately (first call) and excluded from the
steady-state numbers, as is PyTorch's first-call warm-up. In (a), (b) and (d) both sides are
warmed, then timed in interleaved rounds (ours, PyTorch, ours, ...; `--repeats`), so load changes on
a shared machine hit both alike; best and ratio of medians are printed, every time is in the JSON
with the load average.
Needs `pip install torch==2.13.0 "transformers<5"` (the `torch` extra of setup.py; (d) also
sentence-transformers). `--rows` picks minilm ((a) and (b), the default), process (d), all ((a), (b),
(d)) or decoder (c).
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


def bench_texts(args, n: int) -> list[str]:
    """The first ``n`` texts of ``--texts`` (JSONL, a ``text`` field per line), else
    :func:`real_texts` from ``--data-root``."""
    if args.texts is None:
        return real_texts(args.data_root, n, args.seed)
    with open(args.texts, encoding="utf-8") as handle:
        texts = [json.loads(line)["text"] for line in handle if line.strip()]
    if len(texts) < n:
        raise SystemExit(f"{args.texts}: {len(texts)} texts, fewer than the {n} asked for")
    return texts[:n]


def best_of(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def interleaved(runs: dict, repeats: int) -> dict[str, list[float]]:
    """Wall seconds of each of ``runs`` (name -> callable), ``repeats`` rounds, one call of each per
    round: a load change on a shared machine then hits every contender alike."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, fn in runs.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return times


def setup_ours(texts, fixed_ids, batch_size, dtype="float32", fused_attention=None):
    """Our embedder, warmed (compiles timed): ``(runs, info, vectors, fixed_out)``;
    ``fused_attention=False``: XLA's attention instead of the CPU kernel (``kernels.cpu_attention``)."""
    import jax

    from stylebench_jax.encoders.registry import resolve_embedder
    from stylebench_jax.parallel import make_mesh

    mesh = make_mesh("data=1,model=1", devices=jax.devices()[:1])
    model = resolve_embedder("minilm", long_text="truncate", mesh=mesh, progress=False,
                             batch_size=batch_size, dtype=dtype, fused_attention=fused_attention)
    mask = np.ones_like(fixed_ids)
    start = time.perf_counter()
    fixed_out = np.asarray(model._forward(model.params, fixed_ids, mask))
    compile_fixed = time.perf_counter() - start
    start = time.perf_counter()
    vectors = model.embed(texts)
    first_call = time.perf_counter() - start
    runs = {"fixed": lambda: model._forward(model.params, fixed_ids, mask).block_until_ready(),
            "natural": lambda: model.embed(texts)}
    info = {"natural_first_call_s": first_call, "compile_fixed_s": compile_fixed,
            "attention_groups": model.module.attention_groups, "attention_kernel": model.attention_kernel}
    return runs, info, vectors, fixed_out, model


def torch_device() -> str:
    """Where the PyTorch peers run: ``"cuda"`` when JAX runs on a GPU and torch sees one (the same
    card for both sides), else ``"cpu"``."""
    import jax
    import torch

    return "cuda" if jax.default_backend() == "gpu" and torch.cuda.is_available() else "cpu"


def accelerator() -> str | None:
    """The accelerator both sides run on (``None`` on CPU), for the JSON and the table's header."""
    import jax

    device = jax.devices()[0]
    return None if device.platform == "cpu" else f"{device.platform}: {device.device_kind}"


def set_matmul_precision(precision: str) -> None:
    """Float32 matrix products of both sides: ``highest`` = true float32 (JAX ``highest``, torch's
    TF32 off: its default), ``default`` = each library's fast default (JAX's ``default`` precision
    and torch with TF32 allowed: TF32 tensor cores on NVIDIA GPUs). Nothing changes on CPUs."""
    import jax

    jax.config.update("jax_default_matmul_precision", "highest" if precision == "highest" else None)
    try:
        import torch
    except ImportError:  # ours alone (e.g. bench_train --skip-peer)
        return
    torch.backends.cuda.matmul.allow_tf32 = precision == "default"


def setup_torch(texts, fixed_ids, batch_size, threads, dtype="float32"):
    """The PyTorch reference (transformers ``BertModel``, sentence-transformers' recipe), warmed; on
    the GPU when JAX runs on one (:func:`torch_device`); ``dtype`` bfloat16: the model cast to
    bfloat16 (``model.to(torch.bfloat16)``, as sentence-transformers' ``model.bfloat16()``)."""
    import torch
    from transformers import AutoTokenizer, BertModel

    from stylebench_jax.encoders.registry import minilm_dir

    torch.set_num_threads(threads)
    device = torch_device()
    model = BertModel.from_pretrained(str(minilm_dir()), local_files_only=True).eval()
    model = model.to(device=device, dtype=getattr(torch, dtype))
    tokenizer = AutoTokenizer.from_pretrained(str(minilm_dir()), local_files_only=True)

    def pool(hidden, mask):  # float32 sums, like ours; .cpu() waits for the device
        mask = mask.unsqueeze(-1).to(torch.float32)
        vectors = (hidden.float() * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(vectors, dim=-1).cpu().numpy()

    ids = torch.from_numpy(fixed_ids.astype(np.int64)).to(device)
    mask = torch.ones_like(ids)

    def fixed_run():
        with torch.inference_mode():
            return pool(model(input_ids=ids, attention_mask=mask).last_hidden_state, mask)

    fixed_out = fixed_run()

    def natural_run():
        order = np.argsort([-len(t) for t in texts], kind="stable")
        out = np.empty((len(texts), model.config.hidden_size), np.float32)
        with torch.inference_mode():
            for start in range(0, len(texts), batch_size):
                rows = order[start:start + batch_size]
                batch = tokenizer([texts[i] for i in rows], padding=True, truncation=True,
                                  max_length=256, return_tensors="pt").to(device)
                hidden = model(**batch).last_hidden_state
                out[rows] = pool(hidden, batch["attention_mask"])
        return out

    start = time.perf_counter()
    vectors = natural_run()
    first_call = time.perf_counter() - start
    attention = getattr(model.config, "_attn_implementation", None)
    info = {"natural_first_call_s": first_call, "torch": torch.__version__, "threads": threads,
            "device": device if device == "cpu" else torch.cuda.get_device_name(), "dtype": dtype,
            "attention": "torch.nn.functional.scaled_dot_product_attention (transformers' default sdpa)"
            if attention == "sdpa" else attention}
    return {"fixed": fixed_run, "natural": natural_run}, info, vectors, fixed_out


SENTENCE_TRANSFORMERS_SCRIPT = """
import json, sys
import numpy as np
from sentence_transformers import SentenceTransformer
from stylebench_jax.encoders.registry import minilm_dir
texts = [json.loads(line)["text"] for line in open(sys.argv[1], encoding="utf-8")]
model = SentenceTransformer(str(minilm_dir()), device="cpu", local_files_only=True)
np.save(sys.argv[2], model.encode(texts, normalize_embeddings=True, convert_to_numpy=True))
"""


# Runs ``python -m MODULE ...`` or ``python -c CODE ...`` as given and, at exit, writes the process's
# own peak resident size (VmHWM, kB) to stderr.
PEAK_WRAPPER = """
import atexit, runpy, sys
def _peak():
    for line in open('/proc/self/status'):
        if line.startswith('VmHWM'):
            sys.stderr.write('STYLEBENCH_VMHWM ' + line.split()[1] + '\\n')
atexit.register(_peak)
mode, target, *rest = sys.argv[1:]
if mode == '-m':
    sys.argv = [target, *rest]
    runpy.run_module(target, run_name='__main__', alter_sys=True)
else:
    sys.argv = ['-c', *rest]
    exec(compile(target, '<string>', 'exec'), {'__name__': '__main__'})
"""


def run_process(command: list[str]) -> tuple[float, float]:
    """``(wall seconds, peak resident MiB)`` of ``command`` (``[python, -m|-c, ...]``) run to
    completion. The peak is the child's own ``VmHWM``, printed at its exit by ``PEAK_WRAPPER``: not
    ``getrusage``'s ``ru_maxrss``, which Linux carries over from the parent at the fork (with MiniLM
    and PyTorch loaded in this process, both sides reported this process's ~1 GB)."""
    import subprocess

    if command[1] not in ("-m", "-c"):
        raise ValueError(f"run_process: expected [python, -m|-c, ...], found {command[:3]}")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    start = time.perf_counter()
    done = subprocess.run([command[0], "-c", PEAK_WRAPPER, *command[1:]], env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    if done.returncode:
        raise RuntimeError(f"{command[:4]} failed ({done.returncode}): {done.stderr[-3000:]}")
    peaks = [line.split()[1] for line in done.stderr.splitlines() if line.startswith("STYLEBENCH_VMHWM ")]
    return wall, int(peaks[-1]) / 1024


def bench_process(texts: list[str], counts: list[int], repeats: int) -> list[dict]:
    """Regime (d): whole processes on the first ``n`` texts, as a user runs them. Ours: ``stylebench
    embed --long-text truncate`` with a fresh cache directory (cold: every program compiled) and again
    with only the compiled programs kept (warm: XLA's persistent compilation cache, no embedding
    cache). Peer: a Python process running sentence-transformers' ``SentenceTransformer(...).encode``
    with its defaults (batch 32, truncation at the model's 256 tokens). Interleaved repeats."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        return [_process_row(Path(tmp), texts[:n], repeats) for n in counts]


def _process_row(tmp: Path, texts: list[str], repeats: int) -> dict:
    import shutil

    n = len(texts)
    source = tmp / f"texts_{n}.jsonl"
    source.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    cache = tmp / f"cache_{n}"
    ours_out, peer_out = tmp / f"ours_{n}.npy", tmp / f"peer_{n}.npy"
    ours_cmd = [sys.executable, "-m", "stylebench_jax.cli", "embed", "--model", "minilm",
                "--input", str(source), "--output", str(ours_out), "--long-text", "truncate",
                "--cache-dir", str(cache), "--quiet"]
    peer_cmd = [sys.executable, "-c", SENTENCE_TRANSFORMERS_SCRIPT, str(source), str(peer_out)]

    def cold():
        shutil.rmtree(cache, ignore_errors=True)
        ours_out.unlink(missing_ok=True)
        return run_process(ours_cmd)

    def warm():
        for entry in cache.iterdir():  # keep the compiled programs, drop the embeddings
            if entry.name != "xla":
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        ours_out.unlink(missing_ok=True)
        return run_process(ours_cmd)

    results: dict[str, list[tuple[float, float]]] = {"cold": [], "warm": [], "peer": []}
    for _ in range(repeats):
        for name, fn in (("cold", cold), ("warm", warm), ("peer", lambda: run_process(peer_cmd))):
            results[name].append(fn())
    row = {"n": n, "min_cosine": float(np.min((np.load(ours_out) * np.load(peer_out)).sum(1))),
           "loadavg_after": os.getloadavg()}
    for name, values in results.items():
        row[f"{name}_s"] = [v[0] for v in values]
        row[f"{name}_peak_mib"] = max(v[1] for v in values)
    return row


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
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help="PyTorch's intra-op threads (default: every core, as XLA:CPU uses for ours, "
                             "which this flag does not change: keep the default for a like-for-like row)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=REPO / "benchmarks" / "results" / "encoder.json")
    parser.add_argument("--rows", choices=("all", "minilm", "process", "decoder"), default="minilm",
                        help="all: minilm and process")
    parser.add_argument("--xla-attention-row", action="store_true",
                        help="(a)/(b): also time ours with XLA's attention instead of the fused CPU kernel, "
                             "in the same interleaved rounds")
    parser.add_argument("--process-n", default="100,2000", help="text counts of regime (d)")
    parser.add_argument("--process-repeats", type=int, default=2)
    parser.add_argument("--decoder-texts", type=int, default=256)
    parser.add_argument("--decoder-max-length", type=int, default=128)
    parser.add_argument("--texts", type=Path, default=None,
                        help="JSONL file with a 'text' field per line: benchmark these texts instead of "
                             "sampling --n-texts from --data-root (e.g. the same texts on another machine)")
    parser.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32",
                        help="compute dtype of both sides in (a) and (b) (ours: stylebench embed --dtype; "
                             "torch: the model cast to it)")
    parser.add_argument("--matmul-precision", choices=("highest", "default"), default="highest",
                        help="float32 matrix products of both sides: highest = true float32; default = "
                             "each library's fast default (TF32 on NVIDIA GPUs; no change on CPUs)")
    args = parser.parse_args(argv)
    if args.rows == "decoder":
        texts = bench_texts(args, args.decoder_texts)
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
                  "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
                  "decoder": row}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
        return 0

    machine = {"cpu_count": os.cpu_count(), "platform": platform.platform(),
               "python": platform.python_version(), "loadavg_before": os.getloadavg()}
    result = {"machine": machine,
              "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}}
    machine["accelerator"] = accelerator()
    texts = bench_texts(args, args.n_texts)
    if args.rows in ("all", "minilm"):
        result.update(bench_minilm(texts, args))
    if args.rows in ("all", "process"):
        counts = [int(n) for n in args.process_n.split(",")]
        if max(counts) > len(texts):
            parser.error(f"--process-n {max(counts)} exceeds --n-texts {len(texts)}")
        rows = bench_process(texts, counts, args.process_repeats)
        print(f"{'(d) whole process':<24} {'ours cold s':>12} {'ours warm s':>12} {'s-t s':>8} "
              f"{'cold/s-t':>9} {'warm/s-t':>9} {'peak MiB ours/s-t':>18} {'min cos':>9}")
        for row in rows:
            best = {name: min(row[f"{name}_s"]) for name in ("cold", "warm", "peer")}
            print(f"{str(row['n']) + ' texts':<24} {best['cold']:>12.2f} {best['warm']:>12.2f} "
                  f"{best['peer']:>8.2f} {best['cold'] / best['peer']:>8.2f}x "
                  f"{best['warm'] / best['peer']:>8.2f}x "
                  f"{max(row['cold_peak_mib'], row['warm_peak_mib']):>9.0f}/{row['peer_peak_mib']:<8.0f} "
                  f"{row['min_cosine']:>9.6f}")
            rounds = ", ".join(f"{c / p:.2f}x/{w / p:.2f}x" for c, w, p in
                               zip(row["cold_s"], row["warm_s"], row["peer_s"]))
            print(f"{'':<24} cold/warm vs s-t per round: {rounds}")
        result["process"] = rows
    machine["loadavg_after"] = os.getloadavg()
    print(f"load average (1, 5, 15 min) before {machine['loadavg_before']}, after {machine['loadavg_after']}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.json}")
    return 0


def bench_minilm(texts, args) -> dict:
    """Regimes (a) and (b): both sides warmed, then interleaved repeats; best and median reported."""
    fixed_ids = np.random.default_rng(args.seed).integers(1000, 30000, size=(64, 128)).astype(np.int32)
    fixed_ids[:, 0], fixed_ids[:, -1] = 101, 102
    set_matmul_precision(args.matmul_precision)
    ours_runs, ours, ours_vectors, ours_fixed, model = setup_ours(texts, fixed_ids, args.batch_size,
                                                                  args.dtype)
    torch_runs, peer, torch_vectors, torch_fixed = setup_torch(texts, fixed_ids, args.batch_size,
                                                               args.threads, args.dtype)
    runs = {"ours_fixed": ours_runs["fixed"], "torch_fixed": torch_runs["fixed"],
            "ours_natural": ours_runs["natural"], "torch_natural": torch_runs["natural"]}
    sides = [("ours", ours), ("torch", peer)]
    if args.xla_attention_row and ours["attention_kernel"] == "fused-cpu":
        xla_runs, xla, *_ = setup_ours(texts, fixed_ids, args.batch_size, args.dtype, fused_attention=False)
        runs.update({"oursxla_fixed": xla_runs["fixed"], "oursxla_natural": xla_runs["natural"]})
        sides.append(("oursxla", xla))
    times = interleaved(runs, args.repeats)
    ours["programs"] = model._forward._cache_size()
    for side, info in sides:
        for regime in ("fixed", "natural"):
            info[f"{regime}_s"] = min(times[f"{side}_{regime}"])
            info[f"{regime}_all_s"] = times[f"{side}_{regime}"]
    cos_natural = float(np.min((ours_vectors * torch_vectors).sum(1)))
    cos_fixed = float(np.min((ours_fixed * torch_fixed).sum(1)))
    rows = [("(a) 64 x 128 tokens", 64, "fixed", cos_fixed),
            (f"(b) {len(texts)} real texts", len(texts), "natural", cos_natural)]
    print(f"MiniLM {args.dtype}, float32 matmuls: {args.matmul_precision}; ours on "
          f"{accelerator() or 'CPU'}, torch on {peer['device']}")
    print(f"{'regime':<24} {'ours sent/s':>12} {'torch sent/s':>13} {'ratio':>7} {'ratio med':>10} "
          f"{'min cos':>9}")
    xla = dict(sides).get("oursxla")
    out = {"ours": ours, "torch": peer, **({"oursxla": xla} if xla is not None else {})}
    for (name, n, regime, cos), key in zip(rows, ("fixed_batch", "real_texts")):
        a, b = n / ours[f"{regime}_s"], n / peer[f"{regime}_s"]
        median = float(np.median(times[f"torch_{regime}"]) / np.median(times[f"ours_{regime}"]))
        print(f"{name:<24} {a:>12.1f} {b:>13.1f} {a / b:>6.2f}x {median:>9.2f}x {cos:>9.6f}")
        out[key] = {"n": n, "ours_sent_per_s": a, "torch_sent_per_s": b, "ratio": a / b,
                    "ratio_of_medians": median, "min_cosine": cos}
        if xla is not None:
            c = n / xla[f"{regime}_s"]
            median = float(np.median(times[f"torch_{regime}"]) / np.median(times[f"oursxla_{regime}"]))
            print(f"{'  ours, XLA attention':<24} {c:>12.1f} {b:>13.1f} {c / b:>6.2f}x {median:>9.2f}x")
            out[key].update({"ours_xla_attention_sent_per_s": c, "ratio_xla_attention": c / b,
                             "ratio_of_medians_xla_attention": median})
    print(f"ours: attention {ours['attention_kernel']}; compile (a) {ours['compile_fixed_s']:.2f}s; first "
          f"call (b) incl. compiles {ours['natural_first_call_s']:.2f}s over {ours['programs']} programs; "
          f"attention groups {ours['attention_groups']}")
    return out


if __name__ == "__main__":
    sys.exit(main())
