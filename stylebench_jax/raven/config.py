"""``configs/raven/*.yaml`` schema: corpus, HITS sampling, AV methods, PAN metrics.

Loaded with ``stylebench_jax.config.load_config(path, RavenConfig, overrides)``: unknown keys, wrong
types and the checks below come out as ``file:line: key.path: message``. Defaults follow RAVEN (seed
004) and its code (github.com/jitkapat/hits_authorship, commit 70aa982) unless a field says otherwise.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Literal

from stylebench_jax.config import InvalidField
from stylebench_jax.fileio import input_file_problem

# scikit-learn's random_state (k-means, NMF, LDA, folds) takes seeds in [0, 2**32)
_SEED = {"minimum": 0, "maximum": 2**32 - 1}

CORPORA = ("bible_8_versions", "reuters_c50", "file", "built")
FILE_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".tsv": "tsv", ".tab": "tsv", ".csv": "csv"}


@dataclasses.dataclass(frozen=True)
class BibleCorpus:
    """Bible documents: passages of ``verses_per_passage`` consecutive verses (present in all eight
    versions), ``passages_per_book`` passages per book drawn with the corpus seed, each passage in
    all eight versions. Author = version, topic = book. Books with fewer passages are left out."""

    verses_per_passage: int = dataclasses.field(default=5, metadata={"minimum": 1})
    passages_per_book: int = dataclasses.field(default=4, metadata={"minimum": 1})


@dataclasses.dataclass(frozen=True)
class ReutersCorpus:
    """Reuters C50 documents: ``articles_per_author`` articles per author (train and test pooled,
    drawn with the corpus seed; null = all 100), cut to their first ``lead_words`` words (null =
    whole articles). Author = journalist; C50 has no topic labels, so ``corpus.derive_topics`` is needed."""

    articles_per_author: int | None = dataclasses.field(default=30, metadata={"minimum": 2})
    lead_words: int | None = dataclasses.field(default=150, metadata={"minimum": 1})


@dataclasses.dataclass(frozen=True)
class FileCorpus:
    """Any author-labelled file, one document per record: JSON Lines (``.jsonl``), tab-separated
    (``.tsv``) or comma-separated (``.csv``) with a header line, each optionally gzipped (``.gz``).
    ``text``, ``author`` and ``topic`` name the record's fields (JSON keys or header columns).
    Without ``topic`` the topics are derived by clustering (``corpus.derive_topics`` is then
    required). ``path``: absolute or relative to the working directory."""

    path: Path
    text: str = dataclasses.field(default="text", metadata={"non_empty": True})
    author: str = dataclasses.field(default="author", metadata={"non_empty": True})
    topic: str | None = None
    format: Literal["auto", "jsonl", "tsv", "csv"] = "auto"

    def __post_init__(self):
        path = Path(self.path)
        problem = input_file_problem(path)
        if problem is not None:
            raise InvalidField("path", f"{path}: {problem} (relative paths start at the working directory)")
        if self.format == "auto" and self.resolved_format is None:
            raise InvalidField("format", f"cannot tell the format of {path.name} from its suffix; expected "
                                         f"{', '.join(FILE_FORMATS)} (optionally .gz) or set format")

    @property
    def resolved_format(self) -> str | None:
        if self.format != "auto":
            return self.format
        suffixes = [s.lower() for s in Path(self.path).suffixes]
        if suffixes and suffixes[-1] == ".gz":
            suffixes.pop()
        return FILE_FORMATS.get(suffixes[-1]) if suffixes else None


@dataclasses.dataclass(frozen=True)
class BuiltCorpus:
    """The output folder of ``stylebench data build``: the documents of its ``splits`` (default:
    every split the build wrote), author = the hashed author id, topic = the records' ``topic`` field
    (a build whose records have none needs ``corpus.derive_topics``). ``path``: absolute or relative
    to the working directory."""

    path: Path
    splits: tuple[str, ...] | None = None

    def __post_init__(self):
        path = Path(self.path)
        if not (path / "manifest.json").is_file() or not (path / "splits").is_dir():
            raise InvalidField("path", f"{path}: not the output folder of stylebench data build (expected "
                                       "manifest.json and splits/)")
        if self.splits is not None:
            if not self.splits:
                raise InvalidField("splits", "expected a non-empty list of split names, found []")
            for index, split in enumerate(self.splits):
                if not (path / "splits" / f"{split}.jsonl").is_file():
                    found = sorted(p.stem for p in (path / "splits").glob("*.jsonl"))
                    raise InvalidField(f"splits[{index}]", f"{path}: no split {split!r}; the build has "
                                                           f"{', '.join(found) or 'none'}")

    @property
    def split_names(self) -> tuple[str, ...]:
        if self.splits is not None:
            return self.splits
        return tuple(sorted(p.stem for p in (Path(self.path) / "splits").glob("*.jsonl")))


@dataclasses.dataclass(frozen=True)
class DerivedTopics:
    """Topics by clustering: k-means (``n_topics`` clusters, ``seed``) on the L2-normalised
    embeddings of every document by ``embedder``. Replaces the corpus's own topics when set."""

    n_topics: int = dataclasses.field(default=60, metadata={"minimum": 2})
    embedder: str = dataclasses.field(default="minilm", metadata={"non_empty": True})
    seed: int = dataclasses.field(default=0, metadata=_SEED)


@dataclasses.dataclass(frozen=True)
class CorpusConfig:
    """``name``: a shared corpus (``bible_8_versions``, ``reuters_c50``, options in ``bible`` /
    ``reuters``), ``file`` (any JSONL/TSV/CSV file, section ``file``) or ``built`` (a
    ``stylebench data build`` output folder, section ``built``)."""

    name: Literal["bible_8_versions", "reuters_c50", "file", "built"]
    seed: int = dataclasses.field(default=0, metadata=_SEED)
    bible: BibleCorpus = BibleCorpus()
    reuters: ReutersCorpus = ReutersCorpus()
    file: FileCorpus | None = None
    built: BuiltCorpus | None = None
    derive_topics: DerivedTopics | None = None
    # RAVEN's run_sampling keeps topics with >= min_doc documents and samples n_doc_per_topic of each
    min_docs_per_topic: int = dataclasses.field(default=2, metadata={"minimum": 1})
    docs_per_topic: int | None = dataclasses.field(default=None, metadata={"minimum": 1})

    def __post_init__(self):
        for section in ("file", "built"):
            if (self.name == section) != (getattr(self, section) is not None):
                key = section if self.name == section else "name"
                raise InvalidField(key, f"corpus {section!r} needs its section: name: {section} and "
                                        f"{section}: {{path: ...}} go together")
        if self.name == "file" and self.file.topic is None and self.derive_topics is None:
            raise InvalidField("derive_topics", "the file corpus names no topic field (file.topic); set "
                                                "derive_topics (e.g. {n_topics: 60}) to cluster documents "
                                                "into topics")
        if self.name == "reuters_c50" and self.derive_topics is None:
            raise InvalidField("derive_topics", "reuters_c50 has no topic labels; set derive_topics "
                                                "(e.g. {n_topics: 60}) to cluster documents into topics")
        if self.docs_per_topic is not None and self.docs_per_topic < self.min_docs_per_topic:
            raise InvalidField("docs_per_topic", f"expected a value >= min_docs_per_topic "
                                                 f"({self.min_docs_per_topic}), found {self.docs_per_topic}")


@dataclasses.dataclass(frozen=True)
class SamplingConfig:
    """HITS (§4) and the random control (§6). ``n_topics`` is m (RAVEN: 70 of ~4,000 fandoms; a
    multiple of ``k_folds``); ``strategy`` cutting (default) or grouping (§7.2), for HITS and the
    random samples alike; ``representation`` of topics (§7.3): mean document embedding by
    ``topic_embedder`` (RAVEN: all-MiniLM-L6-v2), or
    TF-IDF+NMF / bag-of-words+LDA with ``n_components`` (RAVEN's topic_vector.py defaults).
    ``sweep``: further m values for which only the train/test topic similarity is reported (Table 7)."""

    n_topics: int = dataclasses.field(default=70, metadata={"minimum": 2})
    k_folds: int = dataclasses.field(default=10, metadata={"minimum": 2})
    strategy: Literal["cutting", "grouping"] = "cutting"
    representation: Literal["embedding", "nmf", "lda"] = "embedding"
    topic_embedder: str = dataclasses.field(default="minilm", metadata={"non_empty": True})
    n_components: int = dataclasses.field(default=50, metadata={"minimum": 2})
    random_seeds: tuple[int, ...] = dataclasses.field(default=(0, 1, 2, 3, 4), metadata={"non_empty": True})
    fold_seed: int = dataclasses.field(default=0, metadata=_SEED)
    pair_seed: int = dataclasses.field(default=0, metadata=_SEED)
    sweep: tuple[int, ...] = ()

    def __post_init__(self):
        if self.n_topics % self.k_folds:
            raise InvalidField("n_topics", f"expected a multiple of k_folds ({self.k_folds}) so every "
                                           f"fold has as many test topics, found {self.n_topics}")
        for index, m in enumerate(self.sweep):
            if m < self.k_folds or m % self.k_folds:
                raise InvalidField(f"sweep[{index}]", f"expected a multiple of k_folds ({self.k_folds}), "
                                                      f"found {m}")
        if len(set(self.random_seeds)) != len(self.random_seeds):
            raise InvalidField("random_seeds", "a seed is listed twice")
        if any(not 0 <= seed <= _SEED["maximum"] for seed in self.random_seeds):
            raise InvalidField("random_seeds", "expected seeds in [0, 2**32) (scikit-learn's random_state)")


@dataclasses.dataclass(frozen=True)
class CharNgramConfig:
    """PAN 2021 baseline: TF-IDF of character ``n``-grams (``max_features`` most frequent in the
    fold's training documents), cosine, p1/p2 calibration."""

    enabled: bool = True
    n: int = dataclasses.field(default=4, metadata={"minimum": 1})
    max_features: int = dataclasses.field(default=3000, metadata={"minimum": 1})


@dataclasses.dataclass(frozen=True)
class PPMConfig:
    """PAN compression baseline: order-``order`` model cross-entropies -> logistic regression;
    probabilities within ``radius`` of 0.5 become non-answers."""

    enabled: bool = True
    order: int = dataclasses.field(default=5, metadata={"minimum": 0})
    radius: float = dataclasses.field(default=0.01, metadata={"minimum": 0.0, "maximum": 0.5})
    features: Literal["mean_absdiff", "raw"] = "mean_absdiff"


@dataclasses.dataclass(frozen=True)
class TopicFitConfig:
    """RAVEN's topic-fit model: the ``mask_top_k`` most frequent training words masked character by
    character (digits by '#'), then word-unigram TF-IDF cosine with p1/p2. RAVEN masks 10,000 words
    of the Fanfiction vocabulary; our corpora have ~10^4 word types, so the default masks 300 (the
    function words and the most common content words)."""

    enabled: bool = True
    mask_top_k: int = dataclasses.field(default=300, metadata={"minimum": 0})
    max_features: int = dataclasses.field(default=3000, metadata={"minimum": 1})


@dataclasses.dataclass(frozen=True)
class MethodsConfig:
    """The AV methods trained per fold; ``embedders``: any Embedder name ('minilm', 'baseline:...',
    a model directory), cosine calibrated by p1/p2 like LUAR in RAVEN §5.2. ``grid_step``: p1/p2 grid."""

    char_ngram: CharNgramConfig = CharNgramConfig()
    ppm: PPMConfig = PPMConfig()
    topic_fit: TopicFitConfig = TopicFitConfig()
    embedders: tuple[str, ...] = ("minilm",)
    grid_step: float = dataclasses.field(default=0.01, metadata={"minimum": 0.001, "maximum": 0.25})

    def __post_init__(self):
        if len(set(self.embedders)) != len(self.embedders):
            raise InvalidField("embedders", "an embedder is listed twice")
        count = sum((self.char_ngram.enabled, self.ppm.enabled, self.topic_fit.enabled)) + len(self.embedders)
        if count < 2:
            raise InvalidField("embedders", f"model rankings need at least two methods, found {count}")


@dataclasses.dataclass(frozen=True)
class MetricsConfig:
    """``overall``: RAVEN's mean of four (default) or PAN 2021/22's five (Brier included); it is also
    what p1/p2 calibration maximises. ``f05u``: PAN 2021 (0.5 = non-answer) or PAN 2020 (0.5 counted
    as a positive answer). See ``stylebench_jax.metrics.pan``."""

    overall: Literal["raven", "pan21"] = "raven"
    f05u: Literal["pan21", "pan20"] = "pan21"


@dataclasses.dataclass(frozen=True)
class RavenConfig:
    corpus: CorpusConfig
    sampling: SamplingConfig = SamplingConfig()
    methods: MethodsConfig = MethodsConfig()
    metrics: MetricsConfig = MetricsConfig()
    batch_size: int | None = dataclasses.field(default=None, metadata={"minimum": 1})  # neural embedders

    def __post_init__(self):
        derive = self.corpus.derive_topics
        needed = max([self.sampling.n_topics, *self.sampling.sweep])
        if derive is not None and derive.n_topics < needed:
            key = "sampling.n_topics" if derive.n_topics < self.sampling.n_topics else "sampling.sweep"
            raise InvalidField(key, f"expected at most corpus.derive_topics.n_topics ({derive.n_topics}) "
                                    f"topics, found {needed}")
