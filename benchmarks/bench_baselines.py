"""Non-neural baselines: time to fit and to embed / score real sentences.

    python benchmarks/bench_baselines.py --json benchmarks/results/baselines.json

Texts: ``--n`` (default 10,000) CDS sentences from ../shared/data (mean 14 words; all 11 styles).
Vector baselines (``function_words``, ``tfidf``, ``stylometric``): one-off fit on the background
corpus (3,600 paragraphs, spaCy included) and then ``embed`` of the ``--n`` sentences (texts/second).
STEL surface similarities: ``similarity`` of ``--n`` sentence pairs (pairs/second). spaCy runs on one
process (``nlp.pipe``), so the numbers scale with the share of a core this process gets: the load
average at start is printed and stored with the results.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from stylebench_jax.encoders.baselines import BASELINES  # noqa: E402

VECTOR = ("function_words", "tfidf", "stylometric")
SURFACE = ("char3gram", "punctuation", "word_length", "uppercase", "levenshtein")


def cds_sentences(data_root: Path, n: int, seed: int) -> list[str]:
    with open(data_root / "cds_samples" / "cds_samples.tsv", encoding="utf-8", newline="") as handle:
        texts = [row["text"] for row in csv.DictReader(handle, delimiter="\t")]
    rng = np.random.default_rng(seed)
    return [texts[i] for i in rng.choice(len(texts), size=min(n, len(texts)), replace=False)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-root", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    texts = cds_sentences(args.data_root, args.n, args.seed)
    partners = texts[1:] + texts[:1]
    rows = []
    load = os.getloadavg()[0]
    for name in VECTOR:
        model = BASELINES[name](data_root=args.data_root)
        start = time.perf_counter()
        if hasattr(model, "fit"):
            model.fit()
        fit = time.perf_counter() - start
        start = time.perf_counter()
        vectors = model.embed(texts)
        seconds = time.perf_counter() - start
        rows.append({"baseline": name, "kind": "embed", "n": len(texts), "dim": int(vectors.shape[1]),
                     "fit_s": round(fit, 2), "seconds": round(seconds, 2),
                     "per_second": round(len(texts) / seconds, 1)})
    for name in SURFACE:
        model = BASELINES[name]()
        start = time.perf_counter()
        model.similarity(texts, partners)
        seconds = time.perf_counter() - start
        rows.append({"baseline": name, "kind": "pairs", "n": len(texts), "dim": None, "fit_s": 0.0,
                     "seconds": round(seconds, 2), "per_second": round(len(texts) / seconds, 1)})

    print(f"{len(texts)} CDS sentences; load average at start {load:.2f} on {os.cpu_count()} cores")
    print(f"{'baseline':<16}{'kind':<7}{'dim':>6}{'fit s':>9}{'run s':>9}{'per s':>11}")
    for row in rows:
        print(f"{row['baseline']:<16}{row['kind']:<7}{row['dim'] or '-':>6}{row['fit_s']:>9.2f}"
              f"{row['seconds']:>9.2f}{row['per_second']:>11.1f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = {"machine": platform.platform(), "cpus": os.cpu_count(), "load_average": load,
                   "n_texts": len(texts), "rows": rows}
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
