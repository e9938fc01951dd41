"""Reuter_50_50 (C50) authorship corpus: 50 Reuters journalists x 100 articles (Liu 2011).

Source: UCI ML Repository "Reuter_50_50" (vendored in github.com/jgscott/STA380, commit 691d1b0,
``data/ReutersC50/C50{train,test}/<Author>/*.txt``), staged as ``reuters_c50/reuters_c50.tsv.gz``
(gzip UTF-8 TSV, header ``split author file text``; 2,500 train + 2,500 test, 50 per author and
split). Licence: UCI lists CC BY 4.0; the texts are a subset of Reuters RCV1 (NIST research
agreement). Research use.

Units (authorship, the classic C50 set-up: train = known texts, test = unknown):

- ``retrieval`` (subset ``test-vs-train``): each test article is a query, the train articles are
  the targets, relevant = same author.
- ``pair_predefined`` (same subset): for every query one same-author and one different-author
  target, drawn at random (seeded) - balanced verification trials.
- ``clustering`` (same subset): all articles of the unit (queries and targets) by author, k = 50.

Articles average ~500 words, longer than a 256/512-token window: the encoder chunks and pools.
``quick`` takes 2 test queries and 3 train targets per author, each cut to its first
``QUICK_LEAD_WORDS`` words (the lead paragraphs); ``full`` uses every article whole.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from stylebench_jax.data.readers import dataset_dir, read_table, require_file
from stylebench_jax.data.records import ReutersArticle
from stylebench_jax.data.sampling import lead, unit_rng
from stylebench_jax.data.units import (
    DatasetSpec,
    EvalUnit,
    LabelledTexts,
    RetrievalSet,
    TextPairs,
    check_size,
)
from stylebench_jax.errors import UserInputError, located

NAME = "reuters_c50"
FILE = "reuters_c50.tsv.gz"
SOURCE = "UCI Reuter_50_50 via github.com/jgscott/STA380 (commit 691d1b0, data/ReutersC50/)"
LICENCE = "CC BY 4.0 (UCI); texts from Reuters RCV1 (research agreement)"
# per author: (test queries, train targets); None = all
PER_AUTHOR = {"quick": (2, 3), "full": (None, None)}
QUICK_LEAD_WORDS = 150  # quick: each article is cut to its first 150 words (full: whole articles)


def load_reuters(data_root: str | Path) -> list[ReutersArticle]:
    """All 5,000 articles, validated (split in train/test, no duplicate (split, author, file))."""
    folder = dataset_dir(data_root, NAME, expected=FILE, source=SOURCE)
    path = require_file(folder, FILE, source=SOURCE)
    articles, seen = [], {}
    for row in read_table(path, columns=("split", "author", "file", "text"), multiline=True):
        article = ReutersArticle(row.choice("split", ("train", "test")), row.text("author"),
                                 row.text("file"), row.text("text"))
        key = (article.split, article.author, article.file)
        if key in seen:
            raise located(path, f"duplicate article {key} (first on line {seen[key]})",
                          line=row.line, column=3)
        seen[key] = row.line
        articles.append(article)
    return articles


def _per_author(articles: list[ReutersArticle], split: str, n: int | None, rng) -> list[ReutersArticle]:
    chosen = []
    for author in sorted({a.author for a in articles}):
        pool = [a for a in articles if a.split == split and a.author == author]
        if n is not None and n < len(pool):
            pool = [pool[i] for i in sorted(rng.choice(len(pool), size=n, replace=False))]
        chosen.extend(pool)
    return chosen


def build_units(data_root: str | Path, *, size: str = "quick", seed: int = 0) -> list[EvalUnit]:
    """Retrieval (test -> train), balanced predefined pairs on the same texts, clustering."""
    check_size(size)
    articles = load_reuters(data_root)
    n_queries, n_targets = PER_AUTHOR[size]
    rng = unit_rng(seed, NAME, "test-vs-train")
    queries = _per_author(articles, "test", n_queries, rng)
    targets = _per_author(articles, "train", n_targets, rng)
    if size == "quick":
        queries = [dataclasses.replace(a, text=lead(a.text, QUICK_LEAD_WORDS)) for a in queries]
        targets = [dataclasses.replace(a, text=lead(a.text, QUICK_LEAD_WORDS)) for a in targets]
        query_texts = {q.text for q in queries}  # C50 has near-duplicate articles: same lead twice
        targets = [t for t in targets if t.text not in query_texts]
    retrieval = RetrievalSet(
        query_texts=[q.text for q in queries], query_labels=[q.author for q in queries],
        target_texts=[t.text for t in targets], target_labels=[t.author for t in targets])
    a, b, labels = [], [], []
    for query in queries:
        same = [t for t in targets if t.author == query.author]
        other = [t for t in targets if t.author != query.author]
        if not same or not other:
            whose = f"author {query.author!r} has no" if not same else "no other author has a"
            raise UserInputError(f"{NAME}: {whose} train article left to pair with test article "
                                 f"{query.file!r}; expected every author in both splits")
        a += [query.text, query.text]
        b += [same[int(rng.integers(len(same)))].text, other[int(rng.integers(len(other)))].text]
        labels += [1, 0]
    clustered = queries + targets
    return [
        EvalUnit(NAME, "test-vs-train", "retrieval", retrieval),
        EvalUnit(NAME, "test-vs-train", "pair_predefined", TextPairs(a, b, labels)),
        EvalUnit(NAME, "test-vs-train", "clustering",
                 LabelledTexts([x.text for x in clustered], [x.author for x in clustered])),
    ]


SPEC = DatasetSpec(
    name=NAME, tasks=("retrieval", "pair_predefined", "clustering"),
    description="50 Reuters journalists x 100 corporate-news articles (train/test split)",
    source=SOURCE, licence=LICENCE, load=build_units)
