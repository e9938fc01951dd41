"""Train-step throughput and in-batch-negative capacity: our JAX step vs sentence-transformers (PyTorch).

    python benchmarks/bench_train.py --batch 16 --length 128 --json benchmarks/results/train.json

Both sides train all-MiniLM-L6-v2 on the same real text pairs (positive pairs of
``stylebench prepare-pairs`` on the shared novels when ``runs/pairs/novels`` exists, else same-author
Reuters C50 article pairs; ``--pairs FILE.jsonl`` gives them ready-made), cut at ``--length``
tokens, ``--batch`` pairs per step, AdamW 2e-5,
hidden dropout 0.1, float32, in one run on the same CPU:

- ours: ``training.step.train_step`` under ``jax.shard_map`` (mean pooling, bidirectional in-batch
  InfoNCE over the all-gathered batch, no classifier or adversary; with ``stylebench train``'s
  global-norm clipping, warm-up schedule and weight decay on matrices only, where MNRL's default is
  one direction and plain AdamW: a negligible compute difference; ours pads every text to
  ``--length``, the peer to the batch's longest, equal for the novels pairs at 128, 99.6% of whose
  texts reach it),
  plain and with gradient caching (``--chunk`` texts per chunk); on 1 device, and on 8 fake CPU devices
  in a child process (XLA_FLAGS must be set before JAX starts); attention as ``stylebench train`` runs
  it (the C++ CPU kernels of ``kernels.cpu_attention``, forward and backward, where they apply; the
  table's last column says), ``--xla-attention-row`` adds our plain step with XLA's attention;
- peer: sentence-transformers ``MultipleNegativesRankingLoss`` (scale 20) and
  ``CachedMultipleNegativesRankingLoss`` (mini-batch ``--chunk``), a plain PyTorch loop
  (``loss(features, None).backward(); optimizer.step()``), torch threads = os CPUs.

Attention-probability dropout (BERT's ``attention_probs_dropout_prob``) at each value of
``--attention-dropout`` (default 0.1 and 0), on both sides alike: ours ``model.attention_dropout``, the
peer's checkpoint config overridden. 0.1 is what both train with by default (MiniLM's config; our
trainer's default); it sends PyTorch's CPU ``scaled_dot_product_attention`` to its unfused math path in
training, so the value 0 (PyTorch's fused CPU attention, forward and backward) is timed too. Ratios are
against the peer with the same gradient caching and the same attention dropout.

Both sides' batches are tokenised (and on the device) before the clock starts. On a GPU (JAX with
CUDA) both sides train on the card (the peer on ``cuda``), float32 products in true float32 unless
``--matmul-precision default`` (TF32 for both); run with ``--devices 1 --skip-memory`` there (the
fake-device and capacity parts are CPU measurements).

Throughput: examples (texts) per second over ``--steps`` steps after ``--warmup`` steps (compile
time reported apart), in ``--rounds`` rounds interleaved across the 1-device systems (ours plain,
ours cached, MNRL, CachedMNRL, then again) after ``--warm-rounds`` untimed rounds of the same
interleaving (default 1: the systems share one process and its heap, and the first system to run
after the others' set-up grew its heap again: 0.8 million page faults and 1.5x its later rounds' time
in the first round, 2026-11-27; a process that runs one system, as ``stylebench train`` does, pays
that in its first two steps only); the best and the median round are reported. The process
first applies the allocator settings ``stylebench train`` applies at start-up (``runtime.tune_malloc``; the
peer, in the same process, gets them too; only where JAX will run on the CPU, as in ``stylebench train``:
the table's ``malloc`` line says); ``--default-malloc`` leaves glibc's defaults.
Capacity: the largest global batch (pairs) whose step fits in ``--memory-gib``:
ours from XLA's compiled memory analysis (arguments + outputs + temporaries, nothing allocated) at
doubling batch sizes, and for the plain step also a linear fit of those points; the peer's from the
peak RSS (``VmHWM``) of two steps at 16/32/64 pairs in child processes, fitted linearly and
extrapolated for MNRL (labelled as such); CachedMNRL's peak is flat over those sizes and its 2B x 2B
scores grow quadratically beyond them, so its capacity is not extrapolated. The two are not one
measure: XLA's analysis leaves out the runtime, the compiler and the heap (at 16 pairs x 128 tokens
ours' analysis said 1.43 GiB and its process peaked at 3.53 GiB with compilation, MNRL's at 2.50 GiB);
the table names each side's method.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
START = time.perf_counter()


def progress(message: str) -> None:
    """One line on stderr with the seconds since start: a run cut by a time limit (a lent GPU's
    lease) still says how far it got and what took the time."""
    print(f"[bench_train {time.perf_counter() - START:7.1f} s] {message}", file=sys.stderr, flush=True)


def text_pairs(n: int, seed: int, pairs_file: Path | None = None) -> tuple[list[str], list[str], str]:
    """``n`` real positive pairs and where they come from: the first ``n`` lines of ``pairs_file``
    (JSONL, ``text1``/``text2`` per line, e.g. written by ``gpu_bundle.py make`` for a machine
    without the data), else drawn with ``seed`` from ``runs/pairs/novels`` or Reuters C50."""
    if pairs_file is not None:
        with open(pairs_file, encoding="utf-8") as handle:
            rows = [json.loads(line) for line in handle if line.strip()]
        if len(rows) < n:
            raise SystemExit(f"{pairs_file}: {len(rows)} pairs, the run needs {n} (--batch x (--steps + "
                             "--warmup))")
        return [r["text1"] for r in rows[:n]], [r["text2"] for r in rows[:n]], f"{pairs_file.name}"
    rng = np.random.default_rng(seed)
    prepared = REPO / "runs" / "pairs" / "novels"
    if (prepared / "pairs.parquet").exists() or (prepared / "pairs.jsonl").exists():
        from stylebench_jax.data.pairs.output import load_pairs

        cols = load_pairs(prepared, "train")
        positive = [i for i, label in enumerate(cols["label"]) if label == 1]
        chosen = rng.choice(positive, size=min(n, len(positive)), replace=False)
        source = "prepare-pairs (novels)"
        return [cols["text1"][i] for i in chosen], [cols["text2"][i] for i in chosen], source
    data = Path(os.environ.get("STYLEBENCH_DATA", REPO.parent / "shared" / "data"))
    with gzip.open(data / "reuters_c50" / "reuters_c50.tsv.gz", "rt", encoding="utf-8", newline="") as handle:
        csv.field_size_limit(1 << 24)
        rows = list(csv.DictReader(handle, delimiter="\t"))
    by_author: dict[str, list[str]] = {}
    for row in rows:
        by_author.setdefault(row["author"], []).append(row["text"])
    authors = sorted(by_author)
    first, second = [], []
    for _ in range(n):
        texts = by_author[authors[rng.integers(len(authors))]]
        i, j = rng.choice(len(texts), size=2, replace=False)
        first.append(texts[i])
        second.append(texts[j])
    return first, second, "reuters_c50 same-author articles"


# ------------------------------------------------------------------------------------------ ours

def ours_setup(batch: int, length: int, chunk: int | None, n_devices: int, xla_attention: bool = False,
               attention_dropout: float = 0.1):
    """Our step as ``stylebench train`` runs it: attention in the C++ CPU kernels where they apply
    (``training_attention``'s auto; ``xla_attention``: XLA's), ``attention_dropout`` as
    ``model.attention_dropout``. Returns ``(state, step, make_batch, rng, attention)``, ``attention``
    naming what runs."""
    import functools

    import jax

    from stylebench_jax.encoders.loading import read_encoder_dir
    from stylebench_jax.encoders.neural import fused_attention_mesh
    from stylebench_jax.encoders.registry import minilm_dir
    from stylebench_jax.kernels.cpu_attention import LOCAL
    from stylebench_jax.parallel import make_mesh
    from stylebench_jax.training.config import LossConfig, OptimConfig
    from stylebench_jax.training.data import PairSet, tokenize_table
    from stylebench_jax.training.model import BiEncoder
    from stylebench_jax.training.step import StepSpec, compile_step, init_state, make_optimizer, train_step
    from stylebench_jax.training.trainer import initial_params

    base = read_encoder_dir(minilm_dir())
    mesh = make_mesh(f"data={n_devices}", jax.devices()[:n_devices])
    fused, attention = fused_attention_mesh(mesh, base.config, "float32", False if xla_attention else None)
    model = BiEncoder(base.config, pooling="mean", classifier="mlp", use_style_features=False, n_topics=0,
                      dropout_rate=0.1, fused_attention=LOCAL if fused is not None else None,
                      attention_dropout=attention_dropout)
    loss = LossConfig(ce_weight=0.0, contrastive="infonce", contrastive_weight=1.0, adversary_weight=0.0)
    spec = StepSpec(loss, total_steps=1000, n_data=n_devices, embed_chunk=chunk, use_ce=False,
                    use_topics=False, train_dropout=True)
    optimizer = make_optimizer(OptimConfig(), 1000)
    params = initial_params(model, base, mesh, 0, 1 / 20)  # temperature 0.05 = MNRL's scale 20
    state = init_state(params, optimizer, mesh)
    step = compile_step(functools.partial(train_step, model=model, spec=spec, optimizer=optimizer), mesh,
                        jax.tree.map(lambda x: x.sharding, state))

    def make_batch(first, second):
        texts = list(first) + list(second)
        groups = np.arange(len(texts)) % len(first)
        table = tokenize_table(texts, groups, np.full(len(texts), -1), base.tokenizer, length)
        pairs = PairSet(table, np.arange(len(first)), np.arange(len(first), len(texts)),
                        np.ones(len(first), np.int32))
        from stylebench_jax.parallel import batch_sharding

        host = pairs.batch(np.arange(len(first)))
        return {k: jax.device_put(v, batch_sharding(mesh, v.ndim)) for k, v in host.items()}

    return state, step, make_batch, jax.random.key(0), f"{attention}, attention dropout {attention_dropout:g}"


def ours_runner(first, second, batch, length, steps, warmup, chunk, n_devices, xla_attention=False,
                attention_dropout=0.1):
    """Our step set up, compiled and warmed: ``(first_step_s, run, attention)``; ``run()`` times
    ``steps`` steps (batches prepared on the devices beforehand) and returns ``(seconds, loss)``."""
    import jax

    state, step, make_batch, rng, attention = ours_setup(batch, length, chunk, n_devices, xla_attention,
                                                         attention_dropout)
    batches = [make_batch(first[i * batch:(i + 1) * batch], second[i * batch:(i + 1) * batch])
               for i in range(steps + warmup)]
    start = time.perf_counter()
    state, metrics = step(state, batches[0], rng)
    jax.block_until_ready(metrics)
    compile_s = time.perf_counter() - start
    for b in batches[1:warmup]:
        state, metrics = step(state, b, rng)
    jax.block_until_ready(metrics)
    holder = [state]

    def run():
        start = time.perf_counter()
        for b in batches[warmup:]:
            holder[0], out = step(holder[0], b, rng)
        jax.block_until_ready(out)
        return time.perf_counter() - start, float(out["loss"])

    return compile_s, run, attention


def ours_memory(batch: int, length: int, chunk: int | None, attention_dropout: float) -> int:
    """Bytes XLA's compiled step needs (arguments + outputs + temporaries - aliased), 1 device."""
    state, step, make_batch, rng, _ = ours_setup(batch, length, chunk, 1, False, attention_dropout)
    vocab_batch = make_batch(["x"] * batch, ["y"] * batch)
    stats = step.lower(state, vocab_batch, rng).compile().memory_analysis()
    return int(stats.argument_size_in_bytes + stats.output_size_in_bytes + stats.temp_size_in_bytes
               - stats.alias_size_in_bytes)


# ------------------------------------------------------------------------------------------ peer

def peer_setup(loss_name: str, chunk: int, length: int, attention_dropout: float = 0.1):
    import torch
    from sentence_transformers import SentenceTransformer
    try:  # 6.x deprecates the top-level alias; before 5.7 only it exists
        from sentence_transformers.sentence_transformer import losses
    except ImportError:
        from sentence_transformers import losses

    from benchmarks.bench_encoder import torch_device
    from stylebench_jax.encoders.registry import minilm_dir

    torch.manual_seed(0)
    torch.set_num_threads(os.cpu_count() or 1)
    model = SentenceTransformer(str(minilm_dir()), device=torch_device(),
                                config_kwargs={"attention_probs_dropout_prob": attention_dropout})
    model.max_seq_length = length
    model.train()
    if loss_name == "mnrl":
        loss = losses.MultipleNegativesRankingLoss(model, scale=20.0)
    else:
        loss = losses.CachedMultipleNegativesRankingLoss(model, scale=20.0, mini_batch_size=chunk)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5, weight_decay=0.01)

    def prepare(first, second):
        """Tokenised batch on the model's device (like ours, made before the clock starts)."""
        return [{key: value.to(model.device) if hasattr(value, "to") else value  # s-t 6 adds non-tensors
                 for key, value in model.tokenize(list(texts)).items()} for texts in (first, second)]

    def step(features):
        optimizer.zero_grad()
        value = loss(features, None)
        value.backward()
        optimizer.step()
        return value.item()  # waits for the device

    hf_config = model[0].auto_model.config
    step.attention = (f"pytorch ({getattr(hf_config, '_attn_implementation', '?')}), attention dropout "
                      f"{hf_config.attention_probs_dropout_prob:g}")
    return step, prepare


def peer_runner(first, second, batch, length, steps, warmup, chunk, loss_name, attention_dropout=0.1):
    """The peer set up and warmed like :func:`ours_runner`: ``(first_step_s, run, attention)``."""
    step, prepare = peer_setup(loss_name, chunk, length, attention_dropout)
    batches = [prepare(first[i * batch:(i + 1) * batch], second[i * batch:(i + 1) * batch])
               for i in range(steps + warmup)]
    start = time.perf_counter()
    step(batches[0])
    first_s = time.perf_counter() - start
    for features in batches[1:warmup]:
        step(features)

    def run():
        start = time.perf_counter()
        for features in batches[warmup:]:
            value = step(features)
        return time.perf_counter() - start, value

    return first_s, run, step.attention


def timed_rounds(runners: dict, rounds: int, steps: int, batch: int, warm_rounds: int = 1) -> dict:
    """Runs each ``(first_step_s, run, attention)`` of ``runners`` once per round, in turn
    (interleaved, so that a slow minute of a shared machine falls on every system alike), after
    ``warm_rounds`` untimed rounds; examples/s of the best round, the median round and every round."""
    for _ in range(warm_rounds):
        for _, run, _ in runners.values():
            run()
    seconds = {name: [] for name in runners}
    faults = {name: [] for name in runners}  # minor page faults per round (the process's)
    losses = {}
    for round_index in range(rounds):
        for name, (_, run, _) in runners.items():
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            elapsed, losses[name] = run()
            seconds[name].append(elapsed)
            faults[name].append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
        progress(f"round {round_index + 1}/{rounds}: "
                 + ", ".join(f"{values[-1]:.2f}" for values in seconds.values()) + " s")
    examples = 2 * batch * steps
    return {name: {"examples_per_s": examples / min(values), "median_examples_per_s":
                   examples / float(np.median(values)), "round_s": values, "round_page_faults": faults[name],
                   "step_s": min(values) / steps, "first_step_s": runners[name][0], "loss": losses[name],
                   "attention": runners[name][2]}
            for name, values in seconds.items()}


def child_peak_rss(kind: str, batch: int, length: int, chunk: int, attention_dropout: float) -> int:
    """Peak RSS (bytes) of a child process running two steps of ``kind`` at ``batch`` pairs: the
    child's own ``VmHWM``, read at its exit (``bench_encoder.run_process``). Not ``getrusage``'s
    ``ru_maxrss``: Linux keeps that across ``execve``, so a child forked from this process (several
    GB after the timed systems) reported the parent's size at the fork for every batch."""
    from benchmarks.bench_encoder import run_process

    code = (f"import sys; sys.path.insert(0, {str(REPO)!r}); import benchmarks.bench_train as b; "
            f"f, s, _ = b.text_pairs({2 * batch}, 0); "
            f"step, prep = b.peer_setup({kind!r}, {chunk}, {length}, {attention_dropout!r}); "
            f"step(prep(f[:{batch}], s[:{batch}])); step(prep(f[{batch}:], s[{batch}:]))")
    _, peak_mib = run_process([sys.executable, "-c", code])
    return round(peak_mib * 2**20)


# ------------------------------------------------------------------------------------------ main

def largest_batch(measure, start: int, limit: int, ceiling: int) -> tuple[int, list]:
    """Double the batch from ``start`` while ``measure(batch) <= limit`` bytes (up to ``ceiling``)."""
    points, batch, best = [], start, None
    while batch <= ceiling:
        began = time.perf_counter()
        used = measure(batch)
        points.append((batch, used))
        # each size compiles a program (minutes at tens of thousands of pairs): say where it stands
        print(f"  capacity: {batch} pairs need {used / 2**30:.2f} GiB of {limit / 2**30:.2f} "
              f"({time.perf_counter() - began:.0f} s)", file=sys.stderr, flush=True)
        if used > limit:
            break
        best = batch
        batch *= 2
    return best, points


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=16, help="pairs per step (default 16)")
    parser.add_argument("--length", type=int, default=128, help="tokens per text (default 128)")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--chunk", type=int, default=16, help="texts per gradient-caching chunk")
    parser.add_argument("--devices", default="1,8", help="device counts for our step (default 1,8)")
    parser.add_argument("--memory-gib", type=float, default=20.0)
    parser.add_argument("--capacity-ceiling", type=int, default=1 << 16,
                        help="largest global batch the capacity search tries (default 65536 pairs; "
                             "gradient caching stays flat, so its search runs up to here)")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--skip-peer", action="store_true")
    parser.add_argument("--matmul-precision", choices=("highest", "default"), default="highest",
                        help="float32 matrix products of both sides: highest = true float32; default = each "
                             "library's fast default (TF32 on NVIDIA GPUs; no change on CPUs)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="interleaved timing rounds of --steps steps per system (best and median kept)")
    parser.add_argument("--warm-rounds", type=int, default=1,
                        help="untimed interleaved rounds before the timed ones (default 1; see above)")
    parser.add_argument("--default-malloc", action="store_true",
                        help="leave glibc malloc at its defaults instead of the settings `stylebench train` "
                             "applies at start-up (stylebench_jax.runtime.tune_malloc)")
    parser.add_argument("--xla-attention-row", action="store_true",
                        help="also time our plain step with XLA's attention instead of the C++ CPU kernels "
                             "(in the same interleaved rounds, at the first --attention-dropout value)")
    parser.add_argument("--attention-dropout", default="0.1,0",
                        help="attention-probability dropout values, comma-separated: each times ours and the "
                             "peer at that value (default 0.1,0; the first is the 8-device and capacity one)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--pairs", type=Path, default=None,
                        help="JSONL of text1/text2 pairs to train on (default: drawn from runs/pairs/novels "
                             "or Reuters C50; the capacity part always draws its own)")
    parser.add_argument("--json", type=Path, default=REPO / "benchmarks" / "results" / "train.json")
    args = parser.parse_args()
    try:
        rates = [float(x) for x in args.attention_dropout.split(",")]
    except ValueError:
        rates = []
    if not rates or not all(0.0 <= rate < 1.0 for rate in rates) or len(set(rates)) < len(rates):
        parser.error(f"--attention-dropout: expected distinct comma-separated rates in [0, 1), found "
                     f"{args.attention_dropout!r}")
    from stylebench_jax.runtime import tune_malloc

    # As `stylebench train` does, before JAX starts; the peer runs in this process and gets it too.
    malloc_tuned = False if args.default_malloc else tune_malloc()
    from benchmarks.bench_encoder import accelerator, set_matmul_precision, torch_device

    set_matmul_precision(args.matmul_precision)
    n_pairs = args.batch * (args.steps + args.warmup)
    first, second, source = text_pairs(n_pairs, 0, args.pairs)
    timing = (args.steps, args.warmup)
    if args.child:  # ours on N fake devices, printed as JSON for the parent
        n = int(args.child)
        runner = ours_runner(first, second, args.batch, args.length, *timing, None, n, False, rates[0])
        timed = timed_rounds({"ours": runner}, args.rounds, args.steps, args.batch, args.warm_rounds)
        print(json.dumps(timed["ours"]))
        return 0
    runners, rows = {}, []

    def add(key, make):
        start = time.perf_counter()
        runners[key] = make()
        progress(f"{key[0]} (caching {key[2]}, attention dropout {key[3]:g}): set up and warmed in "
                 f"{time.perf_counter() - start:.1f} s, first step {runners[key][0]:.1f} s")

    progress(f"{len(first)} pairs ({source}); timing {args.rounds} rounds after {args.warm_rounds} warm")
    for rate in rates:  # keys (system, devices, gradient caching, attention dropout)
        if 1 in [int(x) for x in args.devices.split(",")]:
            for chunk in (None, args.chunk):
                add(("ours", 1, chunk is not None, rate), lambda chunk=chunk, rate=rate: ours_runner(
                    first, second, args.batch, args.length, *timing, chunk, 1, False, rate))
            if args.xla_attention_row and rate == rates[0]:
                add(("ours, XLA attention", 1, False, rate), lambda rate=rate: ours_runner(
                    first, second, args.batch, args.length, *timing, None, 1, True, rate))
        if not args.skip_peer:
            for loss_name in ("mnrl", "cached_mnrl"):
                add((f"sentence-transformers {loss_name}", 1, loss_name == "cached_mnrl", rate),
                    lambda loss_name=loss_name, rate=rate: peer_runner(
                        first, second, args.batch, args.length, *timing, args.chunk, loss_name, rate))
    timed = timed_rounds(runners, args.rounds, args.steps, args.batch, args.warm_rounds)
    progress("timed rounds done")
    for (system, devices, caching, rate), result in timed.items():
        rows.append({"system": system, "devices": devices, "gradient_caching": caching,
                     "attention_dropout": rate, **result})
    for n in (int(x) for x in args.devices.split(",") if int(x) > 1):
        env = {**os.environ, "XLA_FLAGS": f"--xla_force_host_platform_device_count={n}",
               "JAX_PLATFORMS": "cpu"}
        out = subprocess.run([sys.executable, __file__, "--child", str(n), "--batch", str(args.batch),
                              "--length", str(args.length), "--steps", str(args.steps), "--warmup",
                              str(args.warmup), "--rounds", str(args.rounds),
                              "--warm-rounds", str(args.warm_rounds)]
                             + ["--attention-dropout", str(rates[0])]
                             + (["--default-malloc"] if args.default_malloc else [])
                             + (["--pairs", str(args.pairs)] if args.pairs else []),
                             env=env, capture_output=True, text=True, timeout=7200)
        if out.returncode:
            raise RuntimeError(out.stderr[-3000:])
        rows.append({"system": "ours (separate process, not interleaved)", "devices": n,
                     "gradient_caching": False, "attention_dropout": rates[0],
                     **json.loads(out.stdout.strip().splitlines()[-1])})
    peers = {(r["gradient_caching"], r["attention_dropout"]): r for r in rows
             if r["system"].startswith("sentence")}
    print(f"\nTrain step, MiniLM, {args.batch} pairs x {args.length} tokens, {source}; "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()}; "
          f"ours on {accelerator() or 'CPU'}, peer on {torch_device() if not args.skip_peer else '-'}")
    settings = "stylebench train's settings (runtime.tune_malloc)" if malloc_tuned else "glibc defaults"
    print(f"malloc: {settings}"
          f"; {args.rounds} interleaved rounds of {args.steps} steps; ratios: best round / median round")
    print("vs peer: against sentence-transformers with the same gradient caching and attention dropout")
    print(f"{'system':<42} {'dev':>3} {'cache':>5} {'a-drop':>6} {'ex/s':>8} {'median':>8} {'first s':>8} "
          f"{'vs peer':>13}  attention")
    for r in rows:
        peer = peers.get((r["gradient_caching"], r["attention_dropout"]))
        ratio = r["examples_per_s"] / peer["examples_per_s"] if peer else float("nan")
        median_ratio = r["median_examples_per_s"] / peer["median_examples_per_s"] if peer else float("nan")
        r["ratio_vs_peer_same_caching"], r["median_ratio_vs_peer_same_caching"] = ratio, median_ratio
        print(f"{r['system']:<42} {r['devices']:>3} {str(r['gradient_caching']):>5} "
              f"{r['attention_dropout']:>6g} {r['examples_per_s']:>8.2f} {r['median_examples_per_s']:>8.2f} "
              f"{r['first_step_s']:>8.1f} "
              f"{ratio:>6.2f}/{median_ratio:<6.2f}  {r.get('attention', '')}")
    memory = {}
    if not args.skip_memory:
        limit = int(args.memory_gib * 2**30)
        for chunk in (None, args.chunk):
            best, points = largest_batch(lambda b, c=chunk: ours_memory(b, args.length, c, rates[0]),
                                         args.batch, limit, args.capacity_ceiling)
            entry = {"largest_batch": best, "points": points, "method": "XLA compiled memory analysis"}
            within = [(b, used) for b, used in points if used <= limit]
            if chunk is None and len(within) >= 2:  # linear in the batch: the fit compares with the peer's
                slope, intercept = np.polyfit(*zip(*within), 1)
                entry |= {"largest_batch_fit": int((limit - intercept) / slope), "bytes_per_pair": slope}
            memory[f"ours{'_cached' if chunk else ''}"] = entry
        if not args.skip_peer:
            for kind in ("mnrl", "cached_mnrl"):
                points = [(b, child_peak_rss(kind, b, args.length, args.chunk, rates[0]))
                          for b in (16, 32, 64)]
                xs, ys = np.array([p[0] for p in points], float), np.array([p[1] for p in points], float)
                slope, intercept = np.polyfit(xs, ys, 1)
                if kind == "mnrl" and slope > 0:
                    predicted, method = int((limit - intercept) / slope), \
                        "peak RSS at 16/32/64 pairs, linear fit, extrapolated"
                else:  # gradient caching: flat at small batches, then the 2B x 2B scores grow quadratically
                    predicted, method = None, "peak RSS at 16/32/64 pairs (not extrapolated)"
                memory[f"peer_{kind}"] = {"largest_batch": predicted, "points": points, "method": method,
                                          "bytes_per_pair": slope}
        print(f"\nLargest global batch (pairs) within {args.memory_gib} GiB:")
        for name, entry in memory.items():
            fit = f" (linear fit {entry['largest_batch_fit']})" if "largest_batch_fit" in entry else ""
            print(f"  {name:<20} {str(entry['largest_batch']):>8}{fit}  ({entry['method']})")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    record = {"rows": rows, "memory": memory, "args": vars(args) | {"json": str(args.json)}, "source": source,
              "accelerator": accelerator() or "CPU", "malloc_tuned": malloc_tuned,
              "load": os.getloadavg(), "ru_maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}
    args.json.write_text(json.dumps(record, indent=1, default=str) + "\n")
    print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
