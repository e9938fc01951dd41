"""Training data for the bi-encoder: a table of tokenised texts and the pairs drawn from it.

Two sources (``training.config.DataConfig``):

- **pairs** (Writing7, seed 003 §3.5): a ``stylebench prepare-pairs`` directory; the train split's
  pairs are shuffled once per epoch (seeded by ``(seed, epoch)``), the validation split's pairs
  evaluate. Groups are books (``book1``/``book2``), topics the coarse lexicon topics.
- **groups** (AuthBench §5.5, group-contrastive): a JSONL of texts with a group label (author or
  book). Groups are split into train and validation (no group in both); each global batch holds
  ``batch_size / (per_group / 2)`` groups with ``per_group`` texts each
  (``training.sampler.GroupBatchSampler``), paired as consecutive texts of one group (label 1),
  so SupCon always has positives; the validation pairs are one same-group and one other-group
  partner per text (seeded). The pair classifier needs negatives, so with this source the CE
  loss is off (the trainer says so).

Every text is tokenised once (content ids, special tokens, cut at ``max_length``, right padding),
and its three style features computed once (``training.features``). A batch is plain NumPy:
``[B, L]`` ids and masks of text1 and text2 plus labels, group and topic codes, features (and the
teacher's logits when distilling); ``valid`` marks real rows (evaluation pads the last batch).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from stylebench_jax.encoders.batching import pad_batch
from stylebench_jax.encoders.tokenizer import TextTokenizer
from stylebench_jax.errors import UserInputError
from stylebench_jax.hashing import texts_digest
from stylebench_jax.metrics.labels import encode_labels
from stylebench_jax.parallel.distributed import (
    allgather_rows,
    check_processes_agree,
    process_count,
    process_span,
)
from stylebench_jax.training.config import DataConfig
from stylebench_jax.training.features import feature_stats, standardize, style_features

BATCH_KEYS = ("ids1", "mask1", "ids2", "mask2", "labels", "groups1", "groups2", "texts1", "texts2",
              "topics1", "topics2", "feats1", "feats2", "same_topic", "valid")


@dataclasses.dataclass
class TextTable:
    """Tokenised texts: ``ids``/``mask [T, L]`` int32, ``groups [T]``, ``topics [T]`` (-1 unknown),
    ``feats [T, 3]`` standardised style features, ``text_codes [T]`` int32 (equal for equal texts:
    a passage found in two books is two rows, one text)."""

    texts: list[str]
    ids: np.ndarray
    mask: np.ndarray
    groups: np.ndarray
    topics: np.ndarray
    feats: np.ndarray
    text_codes: np.ndarray


@dataclasses.dataclass
class PairSet:
    """Pairs over a :class:`TextTable`: ``first``/``second [P]`` text rows, ``labels [P]`` (1 = same
    group), ``teacher [P, 2]`` logits or None."""

    table: TextTable
    first: np.ndarray
    second: np.ndarray
    labels: np.ndarray
    teacher: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.labels.size)

    def batch(self, rows: np.ndarray, size: int | None = None) -> dict[str, np.ndarray]:
        """The pairs ``rows`` as a batch dict (``BATCH_KEYS``), padded to ``size`` rows."""
        size = len(rows) if size is None else size
        rows = np.asarray(rows, np.int64)
        pad = size - rows.size
        take = np.concatenate([rows, np.zeros(pad, np.int64)]) if pad else rows
        t = self.table
        a, b = self.first[take], self.second[take]
        out = {"ids1": t.ids[a], "mask1": t.mask[a], "ids2": t.ids[b], "mask2": t.mask[b],
               "labels": self.labels[take].astype(np.int32),
               "groups1": t.groups[a], "groups2": t.groups[b], "texts1": t.text_codes[a],
               "texts2": t.text_codes[b], "topics1": t.topics[a], "topics2": t.topics[b],
               "feats1": t.feats[a], "feats2": t.feats[b],
               "same_topic": (t.topics[a] == t.topics[b]) & (t.topics[a] >= 0),
               "valid": np.arange(size) < rows.size}
        if self.teacher is not None:
            out["teacher"] = self.teacher[take].astype(np.float32)
        return out


def table_digest(texts: Sequence[str], groups: np.ndarray, topics: np.ndarray) -> str:
    """SHA-256 of ``texts`` in order (``hashing.texts_digest``) and their group and topic codes."""
    digest = hashlib.sha256(texts_digest(texts).encode("ascii"))
    for codes in (groups, topics):
        digest.update(np.ascontiguousarray(codes, np.int64).tobytes())
    return digest.hexdigest()


def training_digest(data: TrainingData) -> str:
    """SHA-256 of what training reads: both tables (texts, groups, topics) and the pairs over them;
    a resumed run must train on the same (``trainer.check_resume``)."""
    digest = hashlib.sha256()
    for pairs in (data.train, data.validation):
        t = pairs.table
        digest.update(table_digest(t.texts, t.groups, t.topics).encode("ascii"))
        for codes in (pairs.first, pairs.second, pairs.labels):
            digest.update(np.ascontiguousarray(codes, np.int64).tobytes())
    return digest.hexdigest()


def tokenize_table(texts: Sequence[str], groups: np.ndarray, topics: np.ndarray, tokenizer: TextTokenizer,
                   max_length: int, stats: tuple[np.ndarray, np.ndarray] | None = None) -> TextTable:
    """Token ids cut at ``max_length`` (special tokens included), padded to ``max_length``. With
    several processes each tokenises its share of ``texts`` and the shares are gathered."""
    if process_count() > 1:  # each process tokenises a share, assuming all hold the same texts
        check_processes_agree("the training texts", table_digest(texts, groups, topics))
    budget = max_length - tokenizer.n_special
    lo, hi = process_span(len(texts))
    mine = list(texts[lo:hi])
    sequences = [tokenizer.wrap(ids[:budget]) for ids in tokenizer.content_ids(mine)]
    ids, mask = pad_batch(sequences, len(sequences), max_length, tokenizer.pad_id)
    raw = style_features(mine)
    if process_count() > 1:
        ids, mask, raw = (np.concatenate(allgather_rows(a)) for a in (ids, mask, raw))
    mean, std = feature_stats(raw) if stats is None else stats
    first_seen: dict[str, int] = {}
    text_codes = np.array([first_seen.setdefault(text, len(first_seen)) for text in texts], np.int32)
    return TextTable(list(texts), ids, mask, np.asarray(groups, np.int32), np.asarray(topics, np.int32),
                     standardize(raw, mean, std), text_codes)


@dataclasses.dataclass
class TrainingData:
    """What the trainer reads: train and validation pairs, style-feature statistics, topic count."""

    train: PairSet
    validation: PairSet
    feature_mean: np.ndarray
    feature_std: np.ndarray
    n_topics: int
    source: str  # "pairs" | "groups"
    sampler: object | None = None  # GroupBatchSampler for the groups source

    def steps_per_epoch(self, batch_size: int) -> int:
        if self.sampler is not None:
            return self.sampler.steps_per_epoch
        return len(self.train) // batch_size

    def epoch_batches(self, epoch: int, batch_size: int, seed: int) -> np.ndarray:
        """``[steps, batch_size]`` pair rows of epoch ``epoch`` (a function of ``(seed, epoch)`` only,
        so a resumed run regenerates exactly the batches it would have seen)."""
        if self.sampler is not None:
            items = self.sampler.epoch(epoch)  # [steps, 2 * batch_size] text rows, groups adjacent
            return items.reshape(items.shape[0], batch_size, 2)
        order = np.random.default_rng([seed, epoch]).permutation(len(self.train))
        steps = len(self.train) // batch_size
        return order[: steps * batch_size].reshape(steps, batch_size)

    def train_batch(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        if rows.ndim == 2:  # groups source: [B, 2] text rows of same-group pairs
            pairs = PairSet(self.train.table, rows[:, 0], rows[:, 1], np.ones(rows.shape[0], np.int32))
            return pairs.batch(np.arange(rows.shape[0]))
        return self.train.batch(rows)


def _load_pair_columns(directory: Path, split: str) -> dict[str, list]:
    from stylebench_jax.data.pairs.output import load_pairs

    columns = load_pairs(directory, split)
    if not columns.get("label"):
        raise UserInputError(f"{directory}: no {split!r} pairs (prepare-pairs wrote splits train, "
                             "validation, test)")
    check_pair_columns(columns, directory, split)
    return columns


def check_pair_columns(columns: dict[str, list], directory: Path, split: str) -> None:
    """Every value training reads, checked before any work: labels 0/1, texts non-empty strings,
    books strings, topics integers (-1 for none). Errors name the pair's place in the split."""
    expected = {"label": "0 or 1", "text1": "a non-empty text", "text2": "a non-empty text",
                "book1": "a book name", "book2": "a book name", "topic1": "an integer topic",
                "topic2": "an integer topic"}
    missing = [name for name in expected if name not in columns]
    if missing:
        raise UserInputError(f"{directory}: the pairs lack column(s) {', '.join(missing)}")
    checks = {"label": lambda v: not isinstance(v, bool) and v in (0, 1),
              "text1": lambda v: isinstance(v, str) and bool(v.strip()),
              "book1": lambda v: isinstance(v, str) and bool(v),
              "topic1": lambda v: isinstance(v, int) and not isinstance(v, bool)}
    checks.update(text2=checks["text1"], book2=checks["book1"], topic2=checks["topic1"])
    for name, ok in checks.items():
        bad = next((i for i, value in enumerate(columns[name]) if not ok(value)), None)
        if bad is not None:
            raise UserInputError(f"{directory}: {split!r} pair {bad + 1}: field {name!r}: expected "
                                 f"{expected[name]}, found {columns[name][bad]!r}")


def check_both_labels(columns: dict[str, list], directory: Path, split: str, use: str) -> None:
    """``UserInputError`` unless the ``split`` pairs hold both labels (``use``: what needs them)."""
    labels = {int(label) for label in columns["label"]}
    if len(labels) < 2:
        raise UserInputError(f"{directory}: all {len(columns['label'])} {split!r} pairs have label "
                             f"{labels.pop()}; {use} needs same- and different-author pairs (prepare the "
                             "pairs from more books or groups per split)")


def subsample(columns: dict[str, list], limit: int | None, seed: int) -> dict[str, list]:
    n = len(columns["label"])
    if limit is None or n <= limit:
        return columns
    keep = np.sort(np.random.default_rng(seed).choice(n, size=limit, replace=False))
    return {name: [values[i] for i in keep] for name, values in columns.items()}


def pairs_from_columns(columns: dict[str, list], group_codes: dict[str, int], tokenizer, max_length,
                        stats) -> PairSet:
    # one table row per distinct (text, book, topic): a passage found in two books (two editions)
    # keeps each book's group, so SupCon's targets match the pair labels (keyed by text alone, the
    # last book read won and a positive pair could get two groups)
    sides = [list(zip(columns[f"text{key}"], columns[f"book{key}"], (int(t) for t in columns[f"topic{key}"])))
             for key in ("1", "2")]
    rows = list(dict.fromkeys(sides[0] + sides[1]))
    index = {row: i for i, row in enumerate(rows)}
    groups = np.array([group_codes[book] for _, book, _ in rows], np.int32)
    topics = np.array([topic for _, _, topic in rows], np.int32)
    table = tokenize_table([text for text, _, _ in rows], groups, topics, tokenizer, max_length, stats)
    first = np.array([index[row] for row in sides[0]], np.int64)
    second = np.array([index[row] for row in sides[1]], np.int64)
    return PairSet(table, first, second, np.asarray(columns["label"], np.int32))


def load_pairs_data(config: DataConfig, tokenizer: TextTokenizer, max_length: int, seed: int) -> TrainingData:
    train_cols = subsample(_load_pair_columns(config.pairs, "train"), config.max_train_pairs, seed)
    val_cols = subsample(_load_pair_columns(config.pairs, "validation"), config.max_validation_pairs, seed)
    check_both_labels(val_cols, config.pairs, "validation", "checkpoint selection (balanced accuracy)")
    books = sorted(set(train_cols["book1"] + train_cols["book2"] + val_cols["book1"] + val_cols["book2"]))
    codes = {book: i for i, book in enumerate(books)}
    train_texts = list(dict.fromkeys(train_cols["text1"] + train_cols["text2"]))
    stats = feature_stats(style_features(train_texts))
    train = pairs_from_columns(train_cols, codes, tokenizer, max_length, stats)
    validation = pairs_from_columns(val_cols, codes, tokenizer, max_length, stats)
    topics = set(train_cols["topic1"] + train_cols["topic2"])
    n_topics = int(max(topics)) + 1 if topics else 0
    return TrainingData(train, validation, stats[0], stats[1], n_topics, "pairs")


def load_group_data(config: DataConfig, tokenizer: TextTokenizer, max_length: int, seed: int,
                    batch_size: int) -> TrainingData:
    from stylebench_jax.data.readers import read_jsonl
    from stylebench_jax.training.sampler import GroupBatchSampler

    rows = read_jsonl(config.groups, blank_lines="skip")
    texts = [row.text(config.text_field) for row in rows]
    labels = [str(row[config.group_field]) for row in rows]
    topic_names = [str(row[config.topic_field]) for row in rows] if config.topic_field else None
    (codes,) = encode_labels(labels)
    n_groups = int(codes.max()) + 1
    rng = np.random.default_rng([seed, 1])
    n_val = max(1, round(n_groups * config.validation_fraction))
    if n_val < 2 or n_groups - n_val < 2:
        raise UserInputError(f"{config.groups}: data.validation_fraction {config.validation_fraction} of "
                             f"{n_groups} groups leaves {n_val} validation and {n_groups - n_val} training "
                             "groups; each side needs at least 2 (same- and different-group pairs)")
    val_groups = set(rng.permutation(n_groups)[:n_val].tolist())
    is_val = np.array([c in val_groups for c in codes])
    topics = (encode_labels(topic_names)[0].astype(np.int32) if topic_names
              else np.full(len(texts), -1, np.int32))
    train_rows, val_rows = np.flatnonzero(~is_val), np.flatnonzero(is_val)
    stats = feature_stats(style_features([texts[i] for i in train_rows]))
    train_table = tokenize_table([texts[i] for i in train_rows], codes[train_rows], topics[train_rows],
                                 tokenizer, max_length, stats)
    val_table = tokenize_table([texts[i] for i in val_rows], codes[val_rows], topics[val_rows], tokenizer,
                               max_length, stats)
    try:
        sampler = GroupBatchSampler(train_table.groups, 2 * batch_size, per_group=config.per_group, seed=seed)
    except ValueError as error:  # too few groups for the batch: a config problem
        raise UserInputError(f"{config.groups}: trainer.batch_size={batch_size} pairs with data.per_group="
                             f"{config.per_group}: {error}") from None
    first, second, labels_out = _validation_pairs(val_table.groups, np.random.default_rng([seed, 2]))
    limit = config.max_validation_pairs
    if limit is not None and first.size > limit:
        keep = np.sort(np.random.default_rng([seed, 3]).choice(first.size, size=limit, replace=False))
        first, second, labels_out = first[keep], second[keep], labels_out[keep]
    train = PairSet(train_table, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int32))
    validation = PairSet(val_table, first, second, labels_out)
    n_topics = int(topics.max()) + 1 if topic_names else 0
    return TrainingData(train, validation, stats[0], stats[1], n_topics, "groups", sampler)


def _validation_pairs(groups: np.ndarray, rng: np.random.Generator):
    """One same-group and one other-group partner per text (texts whose group has no other member
    get only the negative)."""
    first, second, labels = [], [], []
    by_group: dict[int, np.ndarray] = {g: np.flatnonzero(groups == g) for g in np.unique(groups)}
    for i, g in enumerate(groups):
        same = by_group[int(g)][by_group[int(g)] != i]
        if same.size:
            first.append(i)
            second.append(int(rng.choice(same)))
            labels.append(1)
        other = np.flatnonzero(groups != g)
        if other.size:
            first.append(i)
            second.append(int(rng.choice(other)))
            labels.append(0)
    return np.asarray(first, np.int64), np.asarray(second, np.int64), np.asarray(labels, np.int32)


def load_training_data(config: DataConfig, tokenizer: TextTokenizer, max_length: int, seed: int,
                       batch_size: int) -> TrainingData:
    if config.pairs is not None:
        return load_pairs_data(config, tokenizer, max_length, seed)
    return load_group_data(config, tokenizer, max_length, seed, batch_size)


def iterate_batches(pairs: PairSet, batch_size: int) -> Iterator[dict[str, np.ndarray]]:
    """Every pair once, in order, in batches of ``batch_size`` (the last padded, ``valid`` False)."""
    for start in range(0, len(pairs), batch_size):
        yield pairs.batch(np.arange(start, min(start + batch_size, len(pairs))), batch_size)
