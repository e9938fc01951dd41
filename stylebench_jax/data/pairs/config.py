"""Config schema of ``stylebench prepare-pairs`` (frozen dataclasses read by ``stylebench_jax.config``).

Defaults are Writing7's (seed paper 003, appendix "Data Preparation"; values not in the paper come
from the authors' ``prepare_data.py`` and say so). A file needs only ``sources`` and
``output.dir``::

    seed: 0
    sources:
      - novels: english_novels_100        # a collection of data.novels.CORPORA
      - jsonl: my_authors.jsonl            # any author-labelled collection: {"text": ..., "group": ...}
    output: {dir: runs/pairs/novels}
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Literal

from stylebench_jax.config import InvalidField
from stylebench_jax.data.novels import CORPORA


def _bounded(default, minimum=None, maximum=None, **extra):
    metadata = {k: v for k, v in (("minimum", minimum), ("maximum", maximum)) if v is not None}
    return dataclasses.field(default=default, metadata={**metadata, **extra})


@dataclasses.dataclass(frozen=True)
class SourceConfig:
    """One input collection: ``novels: NAME`` (a shared novel collection, one book per work, volumes
    joined) or ``jsonl: PATH`` (one JSON object per line; ``group_field`` names the author or other
    group, which plays the role of the book: its texts are the book's documents)."""

    novels: str | None = None
    jsonl: Path | None = None
    name: str | None = None  # jsonl: prefix of book ids (default: the file's stem)
    text_field: str = "text"
    group_field: str = "group"
    whole_texts: bool = False  # jsonl: each text is one chunk as it is (no sentence windows)

    def __post_init__(self):
        if (self.novels is None) == (self.jsonl is None):
            raise ValueError("expected exactly one of 'novels: NAME' or 'jsonl: PATH'")
        if self.novels is not None and self.novels not in CORPORA:
            raise InvalidField("novels", f"unknown collection {self.novels!r}; expected one of "
                                         f"{', '.join(CORPORA)}")
        if self.novels is not None and (self.name or self.whole_texts):
            raise InvalidField("novels", "'name' and 'whole_texts' apply to jsonl sources only")

    @property
    def label(self) -> str:
        """Prefix of this source's book ids."""
        return self.novels or self.name or Path(self.jsonl).stem


@dataclasses.dataclass(frozen=True)
class StandardizeConfig:
    gutenberg: bool = True  # cut at Project Gutenberg markers, drop digitisation lines (text/gutenberg.py)


@dataclasses.dataclass(frozen=True)
class WindowConfig:
    sentences: int = _bounded(14, 1)  # chunk_size
    overlap: int = _bounded(4, 0)
    min_chars: int = _bounded(200, 0)  # minimum_length
    # Drop sentences shorter than this before windowing. The authors' code keeps only sentences
    # of more than 20 characters (set 21 to reproduce it); the paper does not, and short sentences
    # ("It was my birthday.") are part of a style, so the default keeps them.
    min_sentence_chars: int = _bounded(0, 0)
    max_per_book: int = _bounded(800, 1)  # max_chunks_per_book

    def __post_init__(self):
        if self.overlap >= self.sentences:
            raise InvalidField("overlap", f"expected fewer than sentences ({self.sentences}), "
                                          f"found {self.overlap}")


@dataclasses.dataclass(frozen=True)
class FilterConfig:
    min_ascii_letter_fraction: float = _bounded(0.6, 0.0, 1.0)
    min_stop_words: int = _bounded(2, 0)
    boilerplate_min_books: int = _bounded(3, 2)  # a chunk fingerprint in >= this many books is dropped
    # not in Writing7: a chunk in exactly two books is dropped from both (two splits, a self-negative)
    drop_shared_chunks: bool = True
    duplicate_book_overlap: float = _bounded(0.5, 0.01, 1.0)  # filters.duplicate_books
    exclude_unknown_authors: bool = True  # novels: drop books whose author is unknown (Anon_Clara_1864)


@dataclasses.dataclass(frozen=True)
class SplitConfig:
    by: Literal["book", "author"] = "book"
    train: float = _bounded(0.70, 0.0, 1.0)
    validation: float = _bounded(0.15, 0.0, 1.0)
    test: float = _bounded(0.15, 0.0, 1.0)

    def __post_init__(self):
        total = self.train + self.validation + self.test
        if abs(total - 1.0) > 1e-9:
            raise ValueError(f"train + validation + test must be 1, found {total:g}")
        if self.train <= 0:
            raise InvalidField("train", "expected a fraction > 0")

    @property
    def ratios(self) -> tuple[float, float, float]:
        return (self.train, self.validation, self.test)


@dataclasses.dataclass(frozen=True)
class MiningConfig:
    model: str = "minilm"  # sentence-transformers/all-MiniLM-L6-v2 in the paper
    chunks_per_book: int = _bounded(80, 1)  # num_chunks_for_embed
    neighbour_books: int = _bounded(50, 1)  # num_hard_negative_books (K)
    long_text: Literal["truncate", "chunk"] = "truncate"  # authors: max_seq_length 256, truncated
    max_length: int | None = _bounded(None, 8)  # default: the model's (MiniLM: 256)
    batch_size: int = _bounded(64, 1)
    precision: Literal["float32", "bfloat16"] = "float32"


@dataclasses.dataclass(frozen=True)
class PairConfig:
    positives_per_book: int = _bounded(20, 0)
    negatives_per_book: int = _bounded(40, 0)
    random_fraction: float = _bounded(0.10, 0.0, 1.0)  # authors' random_neg_frac
    same_author_negatives: bool = True  # False: never pair two books of one author as a negative


@dataclasses.dataclass(frozen=True)
class TopicConfig:
    lexicon: Path | None = None  # JSON lexicon; default: stylebench_jax/resources/writing7_topics.json


@dataclasses.dataclass(frozen=True)
class OutputConfig:
    dir: Path
    format: Literal["parquet", "jsonl"] = "parquet"
    overwrite: bool = False


@dataclasses.dataclass(frozen=True, kw_only=True)
class PreparePairsConfig:
    """The whole ``prepare-pairs`` recipe (module docstring)."""

    seed: int = _bounded(0, 0)
    data_root: Path | None = None  # default: $STYLEBENCH_DATA, else ../shared/data
    sources: tuple[SourceConfig, ...] = dataclasses.field(metadata={"non_empty": True})
    # Raw author name -> canonical name, for collections that spell one author differently
    # ("JaneAusten", "Jane Austen", "Austen"); used by the author split and same-author checks.
    author_aliases: dict[str, str] = dataclasses.field(default_factory=dict)
    standardize: StandardizeConfig = StandardizeConfig()
    windows: WindowConfig = WindowConfig()
    filters: FilterConfig = FilterConfig()
    split: SplitConfig = SplitConfig()
    mining: MiningConfig = MiningConfig()
    pairs: PairConfig = PairConfig()
    topics: TopicConfig = TopicConfig()
    output: OutputConfig

    def __post_init__(self):
        labels = [source.label for source in self.sources]
        for index, label in enumerate(labels):
            if label in labels[:index]:
                raise InvalidField(f"sources[{index}]", f"source {label!r} is listed twice (give jsonl "
                                                        "sources distinct 'name's)")
