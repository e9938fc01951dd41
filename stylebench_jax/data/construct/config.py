"""Schema of a benchmark build config (``stylebench data build CONFIG``), loaded by ``stylebench_jax.config``.

A config names the sources with a declarative field mapping each, and the thresholds of every stage
(AuthBench App. A). Every section has defaults except ``name``, ``output``, ``author_salt`` and the
sources. Minimal example::

    name: my_bench
    output: runs/data/my_bench
    author_salt: "keep-me-private"
    sources:
      - name: blogs
        path: blogs.jsonl.gz              # relative to data_root
        format: jsonl                     # jsonl | tsv | csv | directory
        fields: {text: body, author: user.id}      # record field -> key path in the source
        constants: {language: en, genre: blog, subgenre: tech}

Field names a mapping can fill: ``text``, ``author`` (both required), ``id``, ``language``,
``genre``, ``subgenre``, ``task_type``, ``topic``, ``thread``; ``labels`` copies further source
fields into the record's labels. A JSON key path may use dots (``user.id``). Directory sources read
one file per record (``glob``) and offer the fields ``file`` (path relative to the directory),
``parent`` (its folder's name), ``stem`` and ``name``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Literal

from stylebench_jax.config import InvalidField

RECORD_FIELDS = ("text", "author", "id", "language", "genre", "subgenre", "task_type", "topic", "thread")
CONSTANT_FIELDS = ("language", "genre", "subgenre", "task_type", "topic", "thread")
LENGTH_BUCKETS = (("short", 10), ("medium", 100), ("long", 500), ("extra_long", None))  # AuthBench 3.2
SCRIPTS = ("latin", "cyrillic", "arabic", "han", "hiragana", "katakana", "hangul", "devanagari")
DEFAULT_LANGUAGE_SCRIPTS = {
    **{lang: ("latin",) for lang in ("en", "es", "fr", "de", "it", "pt", "nl", "sv", "da", "no", "fi", "pl",
                                     "cs", "ro", "hu", "tr", "id", "vi", "ca")},
    **{lang: ("cyrillic",) for lang in ("ru", "uk", "bg", "sr", "be", "kk")},
    **{lang: ("arabic",) for lang in ("ar", "fa", "ur")},
    "zh": ("han",),
    "ja": ("han", "hiragana", "katakana"),
    "ko": ("hangul", "han"),
    **{lang: ("devanagari",) for lang in ("hi", "mr", "ne", "sa")},
}
TRANSFORMS = ("federalist_untag", "gutenberg_clean")


@dataclasses.dataclass(frozen=True)
class SourceConfig:
    """One raw source and how its fields map onto the record schema."""

    name: str = dataclasses.field(metadata={"non_empty": True})
    path: Path
    format: Literal["jsonl", "tsv", "csv", "directory"]
    fields: dict[str, str] = dataclasses.field(default_factory=dict)  # record field -> source field
    constants: dict[str, str] = dataclasses.field(default_factory=dict)  # record field -> fixed value
    labels: tuple[str, ...] = ()            # source fields copied into ``labels``
    glob: str = "**/*.txt"                  # directory sources: which files are records
    author_namespace: str | None = None     # authors are hashed as namespace:author (default: name)
    author_aliases: dict[str, str] = dataclasses.field(default_factory=dict)  # raw author -> canonical
    exclude: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)  # source field -> values
    transforms: tuple[Literal["federalist_untag", "gutenberg_clean"], ...] = ()
    max_records: int | None = dataclasses.field(default=None, metadata={"minimum": 1})

    def __post_init__(self):
        for key in self.fields:
            if key not in RECORD_FIELDS:
                raise InvalidField(f"fields.{key}",
                                   f"unknown record field; expected one of {', '.join(RECORD_FIELDS)}")
        for key in self.constants:
            if key not in CONSTANT_FIELDS:
                raise InvalidField(f"constants.{key}", f"cannot be a constant; expected one of "
                                                       f"{', '.join(CONSTANT_FIELDS)}")
            if key in self.fields:
                raise InvalidField(f"constants.{key}", "is also mapped in fields; give one of the two")
        missing = [key for key in ("text", "author") if key not in self.fields]
        if missing:
            raise InvalidField("fields", f"missing {', '.join(missing)}; every source maps text and author")
        if "language" not in self.fields and "language" not in self.constants:
            raise InvalidField("constants", "give language as a constant or map it in fields")
        if "genre" not in self.fields and "genre" not in self.constants:
            raise InvalidField("constants", "give genre as a constant or map it in fields")

    @property
    def namespace(self) -> str:
        return self.author_namespace or self.name


@dataclasses.dataclass(frozen=True)
class NormalizeConfig:
    """A.1 normalisation and A.2's rule-based boilerplate removal (applied before deduplication)."""

    # Lines matching any of these (Python regular expressions, searched case-insensitively) are
    # dropped before whitespace is collapsed.
    boilerplate_lines: tuple[str, ...] = (
        r"^\s*(copyright|\(c\)|©).{0,120}$",
        r"all rights reserved",
        r"project gutenberg",
        r"^\s*((home|about|contact|login|log in|sign in|sign up|search|menu|privacy policy|terms of use)"
        r"\s*[|·•»>/-]?\s*){2,}$",
    )


@dataclasses.dataclass(frozen=True)
class DedupConfig:
    """A.2: exact (SHA-256 of the normalised text) and near-duplicate (character n-gram MinHash LSH)."""

    exact: bool = True
    near: bool = True
    ngram: int = dataclasses.field(default=5, metadata={"minimum": 1})
    threshold: float = dataclasses.field(default=0.8, metadata={"minimum": 0.0, "maximum": 1.0})
    num_perm: int = dataclasses.field(default=128, metadata={"minimum": 16})
    # datasketch's MinHash takes seeds in [0, 2**32)
    seed: int = dataclasses.field(default=1, metadata={"minimum": 0, "maximum": 2**32 - 1})


@dataclasses.dataclass(frozen=True)
class Thresholds:
    """A.3 quality thresholds; ``null`` disables a rule. Token-based rules use the build tokenizer."""

    min_unique_token_ratio: float | None = 0.2     # drop if |unique(w)| / |w| < this
    max_symbol_ratio: float | None = 0.5           # drop if symbols (not letter/digit/space) / chars > this
    max_symbol_run: int | None = 30                # drop if the longest run of such characters > this
    max_repeated_char_run: int | None = 20         # drop if a non-space character repeats more than this
    min_alpha_ratio: float | None = 0.25           # drop if letters / non-space chars < this
    min_alpha_token_ratio: float | None = 0.5      # drop if tokens with a letter / tokens < this
    max_single_letter_ratio: float | None = 0.45   # drop if one-letter words / tokens > this
    max_single_letter_run: int | None = 10         # drop if a run of one-letter words >= this
    min_script_ratio: float | None = 0.5           # drop if letters in the language's scripts / letters < it
    min_script_letters: int = 8                    # the script rule is evaluated only from this many letters

    def __post_init__(self):
        check_thresholds(dataclasses.asdict(self), "")


THRESHOLD_KEYS = tuple(f.name for f in dataclasses.fields(Thresholds))


def check_thresholds(values: dict, prefix: str) -> None:
    """Ratios in [0, 1], runs and letter counts >= 0 (``None`` disables a rule); errors name
    ``prefix + key``."""
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidField(prefix + key, f"expected a number or null, found {value!r}")
        if "ratio" in key and not 0.0 <= value <= 1.0:
            raise InvalidField(prefix + key, f"expected a ratio in [0, 1], found {value!r}")
        if "ratio" not in key and (value < 0 or value != int(value)):
            raise InvalidField(prefix + key, f"expected a non-negative integer, found {value!r}")


@dataclasses.dataclass(frozen=True)
class HookConfig:
    """A user function ``module:function`` taking a list of texts (toxicity: returns scores in
    [0, 1]; language identification: returns language codes)."""

    function: str
    threshold: float = dataclasses.field(default=0.5, metadata={"minimum": 0.0, "maximum": 1.0})
    apply: Literal["undefined_script", "always"] = "undefined_script"

    def __post_init__(self):
        module, sep, name = self.function.partition(":")
        if not sep or not module or not name:
            raise InvalidField("function", f"expected module:function, found {self.function!r}")


@dataclasses.dataclass(frozen=True)
class FilterConfig:
    """A.3 filters. ``length`` maps a task type to ``[L_min, L_max]`` tokens (L = 0 always drops)."""

    length: dict[str, tuple[int, int]] = dataclasses.field(default_factory=lambda: {"attribution": (1, 2048)})
    thresholds: Thresholds = Thresholds()
    # per-language overrides of single threshold keys (null disables the rule for that language)
    per_language: dict[str, dict[str, float | None]] = dataclasses.field(default_factory=dict)
    language_scripts: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    toxicity: HookConfig | None = None
    language_id: HookConfig | None = None

    def __post_init__(self):
        for task, (low, high) in self.length.items():
            if low < 0 or high < low:
                raise InvalidField(f"length.{task}", f"expected 0 <= L_min <= L_max, found [{low}, {high}]")
        for lang, overrides in self.per_language.items():
            for key in overrides:
                if key not in THRESHOLD_KEYS:
                    raise InvalidField(f"per_language.{lang}.{key}",
                                       f"unknown threshold; expected one of {', '.join(THRESHOLD_KEYS)}")
            check_thresholds(overrides, f"per_language.{lang}.")
        for lang, scripts in self.language_scripts.items():
            for index, script in enumerate(scripts):
                if script not in SCRIPTS:
                    raise InvalidField(f"language_scripts.{lang}[{index}]",
                                       f"unknown script {script!r}; expected one of {', '.join(SCRIPTS)}")

    def scripts_for(self, language: str) -> tuple[str, ...] | None:
        return self.language_scripts.get(language, DEFAULT_LANGUAGE_SCRIPTS.get(language))

    def thresholds_for(self, language: str) -> Thresholds:
        overrides = self.per_language.get(language)
        return dataclasses.replace(self.thresholds, **overrides) if overrides else self.thresholds


@dataclasses.dataclass(frozen=True)
class StructureConfig:
    """A.4: required fields per task type; documents over ``max_tokens`` are cut into contiguous
    chunks of sentences, each chunk's budget drawn (seeded by the document id) from ``chunk_tokens``."""

    required_fields: dict[str, tuple[str, ...]] = dataclasses.field(
        default_factory=lambda: {"attribution": ("text", "author", "language", "genre")})
    max_tokens: dict[str, int] = dataclasses.field(default_factory=lambda: {"attribution": 1024})
    chunk_tokens: tuple[int, ...] = (256,)
    max_chunks_per_document: int | None = dataclasses.field(default=None, metadata={"minimum": 1})

    def __post_init__(self):
        if not self.chunk_tokens or min(self.chunk_tokens) < 1:
            raise InvalidField("chunk_tokens", "expected a non-empty list of positive token budgets")
        for task, limit in self.max_tokens.items():
            if limit < 1:
                raise InvalidField(f"max_tokens.{task}", f"expected a positive token count, found {limit}")


@dataclasses.dataclass(frozen=True)
class SamplingConfig:
    """A.5 bucketed sampling over (language, length bin, genre, task type)."""

    enabled: bool = True
    mode: Literal["exact", "reservoir"] = "exact"
    total: int | None = dataclasses.field(default=None, metadata={"minimum": 1})  # None: keep all
    quotas: dict[str, int] = dataclasses.field(default_factory=dict)  # "lang/bin/genre/task" -> count
    length_bins: Literal["fixed", "quantile"] = "fixed"
    n_quantile_bins: int = dataclasses.field(default=4, metadata={"minimum": 2})
    max_docs_per_author: int | None = dataclasses.field(default=None, metadata={"minimum": 1})
    # authors with fewer documents are dropped at the very end (after A.6), sampling enabled or not
    min_docs_per_author: int = dataclasses.field(default=2, metadata={"minimum": 1})
    reservoir_capacity: int = dataclasses.field(default=10000, metadata={"minimum": 1})

    def __post_init__(self):
        if self.mode == "reservoir" and self.length_bins == "quantile":
            raise InvalidField("length_bins", "quantile bins need every length first; the single-pass "
                                              "reservoir mode takes fixed bins")
        for key, quota in self.quotas.items():
            if key.count("/") != 3:
                raise InvalidField(f"quotas.{key}", "expected a key language/length_bin/genre/task_type")
            if quota < 0:
                raise InvalidField(f"quotas.{key}", f"expected a non-negative count, found {quota}")


@dataclasses.dataclass(frozen=True)
class CanonicalConfig:
    """A.6: final canonicalisation, re-tokenisation, re-check of bounds, final deduplication."""

    normalize_quotes: bool = True
    trailing_newline: bool = True
    final_dedup: bool = True


@dataclasses.dataclass(frozen=True)
class SplitConfig:
    """A.7: split proportions; groups never cross splits (author, duplicates, and optionally
    ``isolate`` = source and/or thread)."""

    proportions: dict[str, float] = dataclasses.field(
        default_factory=lambda: {"train": 0.5, "dev": 0.1, "test": 0.4})
    isolate: tuple[Literal["source", "thread"], ...] = ()

    def __post_init__(self):
        if not self.proportions or any(v < 0 for v in self.proportions.values()):
            raise InvalidField("proportions", "expected non-negative split shares")
        if abs(sum(self.proportions.values()) - 1.0) > 1e-9:
            raise InvalidField("proportions", f"shares must sum to 1, found {sum(self.proportions.values())}")


@dataclasses.dataclass(frozen=True)
class ExportConfig:
    """Outputs besides ``manifest.json`` and ``splits/<split>.jsonl`` (always written): Parquet
    (``parquet/<split>.parquet``, on by default as the issue's "JSONL/Parquet by default"; needs
    pyarrow, the ``authbench`` extra), a TFDS builder directory, the manifest-only release."""

    parquet: bool = True
    tfds: Literal["none", "array_record", "parquet"] = "none"
    manifest_only_release: bool = True


@dataclasses.dataclass(frozen=True)
class EvaluationConfig:
    """The evaluation protocol the benchmark is meant for (recorded in the manifest; the
    ``attribution`` and ``verification`` tasks read it): the Ks of Success/Recall/nDCG@K, the MRR
    cutoff, negatives sampled per verification query (AuthBench: 1, 5, 10; 50 negatives)."""

    ks: tuple[int, ...] = (1, 5, 10)
    mrr_cutoff: int = dataclasses.field(default=100, metadata={"minimum": 1})
    negatives_per_query: int = dataclasses.field(default=50, metadata={"minimum": 1})
    split: str = "test"

    def __post_init__(self):
        if not self.ks or min(self.ks) < 1:
            raise InvalidField("ks", "expected a non-empty list of positive integers")


@dataclasses.dataclass(frozen=True, kw_only=True)
class BuildConfig:
    """A whole build (module docstring)."""

    name: str = dataclasses.field(metadata={"non_empty": True})
    output: Path
    overwrite: bool = False  # replace an existing, non-empty output folder
    author_salt: str = dataclasses.field(metadata={"non_empty": True})
    data_root: Path | None = None
    seed: int = dataclasses.field(default=0, metadata={"minimum": 0})
    tokenizer: str = "minilm"   # "minilm" (the installed all-MiniLM-L6-v2 tokenizer) or a model directory
    sources: tuple[SourceConfig, ...] = dataclasses.field(metadata={"non_empty": True})
    normalize: NormalizeConfig = NormalizeConfig()
    dedup: DedupConfig = DedupConfig()
    structure: StructureConfig = StructureConfig()
    filters: FilterConfig = FilterConfig()
    sampling: SamplingConfig = SamplingConfig()
    canonical: CanonicalConfig = CanonicalConfig()
    splits: SplitConfig = SplitConfig()
    export: ExportConfig = ExportConfig()
    evaluation: EvaluationConfig = EvaluationConfig()

    def __post_init__(self):
        if self.evaluation.split not in self.splits.proportions:
            raise InvalidField("evaluation.split",
                               f"not one of the splits ({', '.join(self.splits.proportions)})")
        seen = set()
        for index, source in enumerate(self.sources):
            if source.name in seen:
                raise InvalidField(f"sources[{index}].name", f"source {source.name!r} is listed twice")
            seen.add(source.name)
