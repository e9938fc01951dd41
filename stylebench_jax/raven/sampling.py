"""HITS topic sampling (RAVEN §4), the random control, cross-topic folds and verification pairs.

References: RAVEN (seed 004) §4-§6 and github.com/jitkapat/hits_authorship (commit 70aa982):
``hits/utils/train_test_split.py`` (``cross_topic_kfold_cv``), ``hits/utils/dset_utils.py``
(``sample_pairs``). The HITS sampler itself (``topic_cosine_similarity_sample_iterative``) is imported
there from a module the repository does not contain, so :func:`hits_select` follows the paper's
text (steps 2-3, Eq. 2-3).

Departures, each for determinism or clarity:

- folds: RAVEN chunks ``list(set(df.topic))`` into k consecutive groups, an order that depends on
  Python's string hashing (different in every process). We chunk a permutation of the selected topics
  drawn from ``fold_seed`` and the dataset's name.
- pairs: RAVEN draws with Python's ``random`` seeded once at import; we draw from a NumPy generator
  per dataset, fold and side (``pair_seed``), so every fold's pairs are reproducible on their own.
  Authors are visited in sorted order, documents in corpus order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from stylebench_jax.data.sampling import unit_rng


def hits_select(similarity: np.ndarray, m: int) -> list[int]:
    """Indices of the ``m`` topics HITS selects, in selection order.

    ``similarity [T, T]``: cosine similarities of topic vectors. Start: the topic with the lowest mean
    similarity to all *other* topics. Then, until ``m`` are selected, add the unselected topic ``i``
    with the lowest leakage ``l_i = mean(S_i) * max(S_i)``, ``S_i`` its similarities to the selected
    topics (Eq. 2-3; recomputed every step). Ties go to the lowest index. Deterministic.
    """
    similarity = np.asarray(similarity, dtype=np.float64)
    t = similarity.shape[0]
    if similarity.shape != (t, t):
        raise ValueError(f"similarity must be square, got {similarity.shape}")
    if not 1 <= m <= t:
        raise ValueError(f"cannot select m={m} of {t} topics")
    others = (similarity.sum(axis=1) - np.diag(similarity)) / max(t - 1, 1)
    selected = [int(np.argmin(others))]
    chosen = np.zeros(t, bool)
    chosen[selected[0]] = True
    while len(selected) < m:
        block = similarity[:, selected]
        leakage = block.mean(axis=1) * block.max(axis=1)
        leakage[chosen] = np.inf
        best = int(np.argmin(leakage))
        selected.append(best)
        chosen[best] = True
    return selected


def random_select(n_topics: int, m: int, seed: int) -> list[int]:
    """``m`` of ``n_topics`` topic indices drawn uniformly without replacement (sorted)."""
    if not 1 <= m <= n_topics:
        raise ValueError(f"cannot select m={m} of {n_topics} topics")
    return sorted(int(i) for i in unit_rng(seed, "raven", "random-topics").choice(n_topics, m, replace=False))


def group_topics(similarity: np.ndarray, selected: Sequence[int]) -> np.ndarray:
    """Grouping (§7.2): ``[T]`` index into ``selected`` for every topic - itself when selected, else
    the selected topic it is most similar to (ties: the earlier selected)."""
    similarity = np.asarray(similarity, dtype=np.float64)
    selected = list(selected)
    group = np.argmax(similarity[:, selected], axis=1)
    group[selected] = np.arange(len(selected))
    return group


def topic_folds(topics: Sequence[str], k: int, seed: int, name: str) -> list[list[str]]:
    """``k`` disjoint groups of ``len(topics) / k`` topics (a seeded permutation, chunked)."""
    if len(topics) % k:
        raise ValueError(f"{len(topics)} topics cannot be split into {k} equal folds")
    order = unit_rng(seed, "raven", "folds", name).permutation(len(topics))
    size = len(topics) // k
    return [sorted(topics[int(i)] for i in order[f * size:(f + 1) * size]) for f in range(k)]


@dataclasses.dataclass(frozen=True)
class Pairs:
    """Verification pairs over document indices: ``first [P]``, ``second [P]`` int64, ``labels [P]``
    int8 (1 = same author)."""

    first: np.ndarray
    second: np.ndarray
    labels: np.ndarray

    def __len__(self) -> int:
        return int(self.labels.size)


def sample_pairs(docs: Sequence[int], authors: Sequence[str], rng: np.random.Generator) -> Pairs:
    """RAVEN's ``sample_pairs`` over the documents ``docs`` (indices; ``authors[i]`` of document i).

    For every author (sorted) and each of their documents (in ``docs`` order): one same-author pair
    with another of that author's documents drawn uniformly, when the author has two or more
    documents here; then one different-author pair: another author drawn uniformly among the authors
    present, then one of their documents drawn uniformly. A negative is never from the same author.
    **Single-document authors** get only the different-author pair (no positive exists for them);
    their document can still be drawn as the second text of other documents' negatives. As in RAVEN,
    positives and negatives are therefore balanced only when no author has a single document.
    """
    by_author: dict[str, list[int]] = {}
    for doc in docs:
        by_author.setdefault(authors[doc], []).append(int(doc))
    names = sorted(by_author)
    if len(names) < 2:
        raise ValueError(f"pair sampling needs documents of at least two authors, found {len(names)}")
    first, second, labels = [], [], []
    for a, author in enumerate(names):
        own = by_author[author]
        for position, doc in enumerate(own):
            if len(own) > 1:
                pick = int(rng.integers(len(own) - 1))
                first.append(doc)
                second.append(own[pick + (pick >= position)])
                labels.append(1)
            other = int(rng.integers(len(names) - 1))
            other_docs = by_author[names[other + (other >= a)]]
            first.append(doc)
            second.append(other_docs[int(rng.integers(len(other_docs)))])
            labels.append(0)
    return Pairs(np.asarray(first, np.int64), np.asarray(second, np.int64), np.asarray(labels, np.int8))


@dataclasses.dataclass(frozen=True)
class Fold:
    """One cross-topic split: test topics are disjoint from train topics."""

    index: int
    train_topics: tuple[str, ...]
    test_topics: tuple[str, ...]
    train_docs: np.ndarray  # [n_train] int64 document indices
    test_docs: np.ndarray
    train_pairs: Pairs
    test_pairs: Pairs


@dataclasses.dataclass(frozen=True)
class SampledDataset:
    """A HITS or random topic sample of the corpus and its k folds.

    ``doc_topic[i]`` is document i's topic in this dataset (with grouping: its group's selected
    topic; "" for documents not in the dataset)."""

    name: str  # "hits" or "random_<seed>"
    kind: str  # "hits" | "random"
    seed: int | None
    topics: tuple[str, ...]  # the m selected topics, in selection order
    doc_topic: tuple[str, ...]
    folds: tuple[Fold, ...]

    @property
    def documents(self) -> np.ndarray:
        return np.flatnonzero(np.asarray(self.doc_topic) != "")


def build_dataset(name: str, kind: str, seed: int | None, topics: Sequence[str], doc_topic: Sequence[str],
                  authors: Sequence[str], *, k: int, fold_seed: int, pair_seed: int) -> SampledDataset:
    """Folds (``topic_folds``) and their train/test pairs (``sample_pairs``) for one topic sample."""
    labels = np.asarray(doc_topic)
    folds = []
    for index, test_topics in enumerate(topic_folds(list(topics), k, fold_seed, name)):
        train_topics = sorted(set(topics) - set(test_topics))
        train_docs = np.flatnonzero(np.isin(labels, train_topics))
        test_docs = np.flatnonzero(np.isin(labels, test_topics))
        pairs = {}
        sides = (("train", train_docs, train_topics), ("test", test_docs, test_topics))
        for side, docs, side_topics in sides:
            try:
                pairs[side] = sample_pairs(docs, authors, _pair_rng(pair_seed, name, index, side))
            except ValueError as error:
                raise ValueError(f"dataset {name!r}, fold {index} ({side} topics "
                                 f"{_topic_list(side_topics)}): {error}") from None
        folds.append(Fold(index, tuple(train_topics), tuple(test_topics), train_docs, test_docs,
                          pairs["train"], pairs["test"]))
    return SampledDataset(name, kind, seed, tuple(topics), tuple(doc_topic), tuple(folds))


def _topic_list(topics: Sequence[str], shown: int = 4) -> str:
    listed = ", ".join(topics[:shown])
    return listed + (f" and {len(topics) - shown} more" if len(topics) > shown else "")


def check_both_classes(dataset: SampledDataset) -> None:
    """``ValueError`` naming the dataset, fold and topics when a fold's training or test pairs hold
    one class only (no author with two documents there): PAN's AUC, c@1 and F0.5u, and every
    method's calibration, need same-author and different-author pairs."""
    for fold in dataset.folds:
        for side, pairs, topics in (("train", fold.train_pairs, fold.train_topics),
                                    ("test", fold.test_pairs, fold.test_topics)):
            if np.unique(pairs.labels).size < 2:
                raise ValueError(f"dataset {dataset.name!r}, fold {fold.index} ({side} topics "
                                 f"{_topic_list(topics)}): all {len(pairs)} {side} pairs are "
                                 f"different-author (no author has two {side} documents), so the PAN "
                                 "metrics and the calibration have a single class")


def _pair_rng(seed: int, dataset: str, fold: int, side: str) -> np.random.Generator:
    return unit_rng(seed, "raven", "pairs", dataset, str(fold), side)


def split_similarity(similarity: np.ndarray, topic_index: dict[str, int], train_topics: Sequence[str],
                     test_topics: Sequence[str]) -> tuple[float, float]:
    """``(mean, max)`` cosine similarity over all (train topic, test topic) pairs of one split (Table 7)."""
    block = similarity[np.ix_([topic_index[t] for t in train_topics], [topic_index[t] for t in test_topics])]
    return float(block.mean()), float(block.max())


def most_similar_pairs(similarity: np.ndarray, topic_index: dict[str, int],
                       splits: Sequence[tuple[Sequence[str], Sequence[str]]], top: int = 5) -> list[dict]:
    """The ``top`` most similar (train topic, test topic) pairs over ``splits`` (Table 6); a pair of
    topics seen in several splits (either way round) is listed once, as first met."""
    best: dict[tuple[str, str], float] = {}
    seen: set[frozenset] = set()
    for train_topics, test_topics in splits:
        for a in train_topics:
            for b in test_topics:
                if frozenset((a, b)) not in seen:
                    seen.add(frozenset((a, b)))
                    best[(a, b)] = float(similarity[topic_index[a], topic_index[b]])
    ranked = sorted(best.items(), key=lambda item: (-item[1], item[0]))[:top]
    return [{"train_topic": a, "test_topic": b, "similarity": value} for (a, b), value in ranked]
