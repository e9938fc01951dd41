"""STEB's evaluation code, re-implemented operation by operation as the reference for our STEB protocols.

Source: github.com/rrivera1849/STEB (Apache-2.0; Rivera Soto, Wegmann, Aggazzotti). Each function below
names the file and the commit it was transcribed from. They perform the same operations in the same
order with the same library calls (``linear_sum_assignment``, ``pairwise_distances``, ``np.argsort``,
``pd.qcut``, ``np.random.choice`` ...) as STEB's code, so that our implementations can be checked for
exact agreement on shared inputs. They are written out here rather than pasted; only what a test needs
is kept (no file I/O, no printing, no torch). Where STEB's code needs something we cannot run (a torch
model, the Hugging Face tokenizer object, the spaCy package name ``en_core_web_sm``) the function takes
it as an argument; the note on each function says so.

Nothing in ``stylebench_jax`` imports this module.
"""

from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import pairwise_distances

STEB_REPO = "github.com/rrivera1849/STEB"

# ----------------------------------------------------------------------------------- steb/metrics.py
# steb/metrics.py @ 022c32bccb6ec02fbad33c906c322a93654a6f46


def l2_normalize(embeddings):
    """``l2_normalize``: divide the last axis by its norm; a zero norm divides by 1."""
    norms = np.linalg.norm(embeddings, axis=-1, keepdims=True)
    norms = np.where(norms == 0, 1.0, norms)
    return embeddings / norms


def calculate_retrieval_metrics(embeddings_query, embeddings_target, query_labels, target_labels, ks=None):
    """``calculate_retrieval_metrics``: cosine distances, ``np.argsort`` per query, the 1-based ranks of
    every target with the query's label; sums of ``mean(1/ranks)``, ``mean(ranks)`` and, per K, the
    share of those ranks ``<= K``; each divided by the number of queries."""
    if ks is None:
        ks = [1, 8, 16, 32, 64, 128]
    dist_matrix = pairwise_distances(embeddings_query, embeddings_target, metric="cosine", n_jobs=-1)
    mrr_sum = 0.0
    rank_sum = 0.0
    recall_at_k = defaultdict(float)
    n_queries = query_labels.shape[0]
    for i in range(n_queries):
        order = np.argsort(dist_matrix[i])
        ranks = np.where(query_labels[i] == target_labels[order])[0]
        ranks += 1
        if ranks.size == 0:
            raise ValueError(f"No true matches found for query {i}")
        mrr_sum += np.mean(1.0 / ranks)
        rank_sum += np.mean(ranks)
        for k in ks:
            within = np.where(ranks <= k)[0]
            if within.size > 0:
                recall_at_k[k] += within.size / ranks.size
    metrics = {"mrr": mrr_sum / n_queries, "mean_rank": rank_sum / n_queries}
    for k in ks:
        metrics[f"recall@{k}"] = recall_at_k[k] / n_queries
    return metrics


# ------------------------------------------------------------------------- steb/tasks/order_alignment.py
# steb/tasks/order_alignment.py @ 8a036408567ec1b6a05a5ff947f913b422bab163 (same logic at 021f1770)


def group_indices_by_label(labels):
    """``group_indices_by_label``: label -> indices, labels in first-appearance order."""
    out = {}
    for index, label in enumerate(labels):
        out.setdefault(label, []).append(index)
    return out


def align_and_score(emb_src, emb_tgt, offset=0):
    """``align_and_score``: cosine (rows already unit), clipped at 0, Hungarian on ``1 - sim``, share
    of source rows assigned to ``row + offset``; 0.0 when the target has fewer than 2 rows."""
    n_src = emb_src.shape[0]
    n_tgt = emb_tgt.shape[0]
    if n_tgt < 2:
        return {"accuracy": 0.0}
    sim = emb_src @ emb_tgt.T
    sim = np.maximum(sim, 0.0)
    rows, cols = linear_sum_assignment(1.0 - sim)
    predicted = cols[np.argsort(rows)]
    expected = np.arange(n_src) + offset
    return {"accuracy": float(np.mean(predicted == expected))}


def order_alignment_evaluate(embeddings, labels):
    """``OrderAlignmentTask.evaluate``: every ``itertools.combinations`` pair within a label; the plain
    alignment and two distractor variants (``i``'s last / first row replaces ``j``'s and leaves ``i``);
    returns ``acc_mean`` and ``distractor_acc_mean`` (mean of the concatenated last + first lists)."""
    if not isinstance(embeddings, np.ndarray):
        embeddings = np.array(embeddings, dtype=float)
    normed = l2_normalize(embeddings)
    plain, last, first = [], [], []
    for _, idxs in group_indices_by_label(labels).items():
        if len(idxs) < 2:
            continue
        for i, j in itertools.combinations(idxs, 2):
            emb_i = normed[i]
            emb_j = normed[j]
            plain.append(align_and_score(emb_i, emb_j)["accuracy"])
            if emb_i.shape[0] < 2:
                continue
            ref_last = emb_i[:-1]
            tgt_last = emb_j.copy()
            tgt_last[-1] = emb_i[-1]
            last.append(align_and_score(ref_last, tgt_last)["accuracy"])
            ref_first = emb_i[1:]
            tgt_first = emb_j.copy()
            tgt_first[0] = emb_i[0]
            first.append(align_and_score(ref_first, tgt_first, offset=1)["accuracy"])
    both = last + first
    return {"acc_mean": float(np.mean(plain)) if plain else 0.0,
            "distractor_acc_mean": float(np.mean(both)) if both else 0.0}
