"""Training tables from prepare-pairs columns: every pair side keeps its own book's group."""

import numpy as np

from stylebench_jax.training.data import pairs_from_columns


class WordTokenizer:
    """Ids from a fixed vocabulary of the words below (the table needs only these four members)."""

    n_special, pad_id = 2, 0
    vocab = {w: i + 5 for i, w in enumerate("same words here more from a other text b".split())}

    def content_ids(self, texts):
        return [[self.vocab[w.strip(".").lower()] for w in t.split()] for t in texts]

    def wrap(self, ids):
        return [1, *ids, 2]


def test_a_passage_in_two_books_keeps_each_books_group():
    # "same words here." is in book A (a positive pair with another A text) and in book B; keyed by
    # text alone, B (read last) overwrote A and SupCon pushed the positive pair's texts apart
    columns = {"text1": ["same words here.", "other text b."], "text2": ["more from A.", "same words here."],
               "book1": ["A", "C"], "book2": ["A", "B"], "label": [1, 0], "topic1": [0, 1], "topic2": [0, 2]}
    pairs = pairs_from_columns(columns, {"A": 0, "B": 1, "C": 2}, WordTokenizer(), 16,
                               (np.zeros(3), np.ones(3)))
    batch = pairs.batch(np.arange(2))
    assert batch["labels"].tolist() == [1, 0]
    assert batch["groups1"].tolist() == [0, 2] and batch["groups2"].tolist() == [0, 1]
    assert len(pairs.table.texts) == 4  # the shared passage is one row per book
    same = [i for i, t in enumerate(pairs.table.texts) if t == "same words here."]
    np.testing.assert_array_equal(pairs.table.ids[same[0]], pairs.table.ids[same[1]])
    # ... and one text code, so a batch holding both rows leaves them out of the contrastive loss
    assert batch["texts1"][0] == batch["texts2"][1] and len(set(pairs.table.text_codes.tolist())) == 3
