"""Config schema of ``stylebench transfer`` (YAML in ``configs/transfer/``, read by
``stylebench_jax.config.load_config`` with ``key=value`` overrides). Defaults are Writing7's
(seed 003 §7 and appendix "Benchmark"): 5 excerpts per book of 15 consecutive sentences, 1 sample
each, the seed's 10 topics and prompt, temperature 0.9, top_p 0.95, max_tokens 1200, 600-900
words, retries after 0.5, 1.5 and 3.0 s.

A backend generates the stories. HTTP backends read their key (and optionally base URL and model)
from environment variables named here, never from the file, so a config can be shared and a key
never lands in a run directory::

    backends:
      - {name: ceiling, kind: copy}            # the excerpt itself: the upper anchor
      - {name: shuffled, kind: shuffle}        # the excerpt's sentences in a seeded random order
      - {name: markov, kind: markov}           # word-level Markov chain on the author's other books
      - {name: gpt-4o, kind: openai, model: gpt-4o, api_key_env: OPENAI_API_KEY}
      - {name: claude, kind: anthropic, model: claude-3-5-sonnet-latest, api_key_env: ANTHROPIC_API_KEY}
      - {name: gemini, kind: openai, model: gemini-1.5-pro, api_key_env: GEMINI_API_KEY,
         base_url: "https://generativelanguage.googleapis.com/v1beta/openai"}
      - {name: kimi, kind: openai, model: moonshot-v1-8k, api_key_env: MOONSHOT_API_KEY,
         base_url: "https://api.moonshot.ai/v1"}
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Literal

from stylebench_jax.config import InvalidField
from stylebench_jax.data.pairs.config import SourceConfig

HTTP_KINDS = ("openai", "anthropic")
LOCAL_KINDS = ("copy", "shuffle", "markov")
DEFAULT_BASE_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
_pos = {"minimum": 1}


@dataclasses.dataclass(frozen=True)
class BookConfig:
    book: str  # a book id "<collection>/<work>" as prepare-pairs names them
    seed_book: str = ""  # the seed's book it stands for
    status: str = ""  # present | same author | stand-in author
    note: str = ""


@dataclasses.dataclass(frozen=True)
class ExcerptConfig:
    per_book: int = dataclasses.field(default=5, metadata=_pos)  # n_excerpts
    sentences: int = dataclasses.field(default=15, metadata=_pos)  # excerpt_length
    samples: int = dataclasses.field(default=1, metadata=_pos)  # n_samples per excerpt


@dataclasses.dataclass(frozen=True)
class PromptConfig:
    """Data files (default: the seed's, ``stylebench_jax/resources/writing7_transfer_*.txt``). The user
    template's ``{excerpt}``, ``{topic}``, ``{min_words}`` and ``{max_words}`` are filled in."""

    topics: Path | None = None  # one topic per line
    system: Path | None = None
    user: Path | None = None
    min_words: int = dataclasses.field(default=600, metadata=_pos)
    max_words: int = dataclasses.field(default=900, metadata=_pos)

    def __post_init__(self):
        if self.max_words < self.min_words:
            raise InvalidField("max_words", f"expected >= min_words ({self.min_words}), "
                                            f"found {self.max_words}")


@dataclasses.dataclass(frozen=True)
class BackendConfig:
    name: str = dataclasses.field(metadata={"non_empty": True})
    kind: Literal["copy", "shuffle", "markov", "openai", "anthropic"]
    # HTTP backends: the environment variable holding the key (required), and optional variables that
    # override base_url / model when set.
    api_key_env: str | None = None
    base_url: str | None = None  # default: the provider's (DEFAULT_BASE_URLS)
    base_url_env: str | None = None
    model: str | None = None
    model_env: str | None = None
    temperature: float = dataclasses.field(default=0.9, metadata={"minimum": 0.0})
    top_p: float | None = dataclasses.field(default=0.95, metadata={"minimum": 0.0, "maximum": 1.0})
    max_tokens: int = dataclasses.field(default=1200, metadata=_pos)
    send_seed: bool = True  # OpenAI-compatible APIs take a seed; the Anthropic API has none
    concurrency: int = dataclasses.field(default=4, metadata=_pos)
    timeout_s: float = dataclasses.field(default=120.0, metadata={"minimum": 0.001})
    retry_delays: tuple[float, ...] = (0.5, 1.5, 3.0)
    # markov: word n-gram order and the most training words taken from the author's other books
    order: int = dataclasses.field(default=2, metadata=_pos)
    max_words: int = dataclasses.field(default=400_000, metadata=_pos)

    def __post_init__(self):
        if self.kind in HTTP_KINDS:
            if not self.api_key_env:
                raise InvalidField("api_key_env", f"a {self.kind} backend needs the name of the environment "
                                                  "variable holding its API key")
            if not self.model and not self.model_env:
                raise InvalidField("model", f"a {self.kind} backend needs model (or model_env)")
        elif any(getattr(self, k) for k in ("api_key_env", "base_url", "base_url_env", "model", "model_env")):
            raise InvalidField("kind", f"{self.kind} is a local backend: api_key_env, base_url(_env) and "
                                       "model(_env) do not apply")
        if any(d < 0 for d in self.retry_delays):
            raise InvalidField("retry_delays", "expected non-negative seconds")
        if self.base_url is not None:
            from stylebench_jax.transfer.http_backends import url_problem

            problem = url_problem(self.base_url)
            if problem:
                raise InvalidField("base_url", f"{self.base_url!r}: {problem}")


@dataclasses.dataclass(frozen=True)
class ScoringConfig:
    """The style embedder and the calibration file fitted for it (``stylebench calibrate``); the
    inference settings default to the calibration file's (seed 003 §6)."""

    model: str = "minilm"
    calibration: Path | None = None
    max_length: int | None = dataclasses.field(default=None, metadata=_pos)
    batch_size: int = dataclasses.field(default=64, metadata=_pos)
    score_batch: int = dataclasses.field(default=32, metadata=_pos)  # generations scored per batch
    chunk_size: int | None = None
    overlap: int | None = None
    max_tokens: int | None = None
    num_chunks: str | None = None
    max_chunks: int | None = None
    aggregate: Literal["mean", "topk_mean"] | None = None
    topk: int | None = None


@dataclasses.dataclass(frozen=True)
class OriginalityConfig:
    # flag a story at this many words in a row shared with its excerpt
    max_common_words: int = dataclasses.field(default=8, metadata=_pos)


@dataclasses.dataclass(frozen=True)
class TransferConfig:
    seed: int = dataclasses.field(default=0, metadata={"minimum": 0})
    data_root: Path | None = None
    sources: tuple[SourceConfig, ...] = (SourceConfig(novels="english_novels_100"),
                                         SourceConfig(novels="british_fiction_corpus"),
                                         SourceConfig(novels="eighteenth_century_novels"),
                                         SourceConfig(novels="gutenberg_classics_pyrse"))
    author_aliases: dict[str, str] = dataclasses.field(default_factory=dict)
    books: tuple[BookConfig, ...] | None = None  # default: resources/writing7_transfer_books.json
    excerpts: ExcerptConfig = ExcerptConfig()
    prompt: PromptConfig = PromptConfig()
    backends: tuple[BackendConfig, ...] = dataclasses.field(default=(), metadata={"non_empty": True})
    scoring: ScoringConfig = ScoringConfig()
    originality: OriginalityConfig = OriginalityConfig()

    def __post_init__(self):
        names = [b.name for b in self.backends]
        for index, name in enumerate(names):
            if names.index(name) != index:
                raise InvalidField(f"backends[{index}].name", f"backend name {name!r} is used twice")
            if "/" in name or "#" in name:
                raise InvalidField(f"backends[{index}].name",
                                   f"expected a name without '/' or '#', found {name!r}")
        if self.books is not None:
            ids = [b.book for b in self.books]
            for index, book in enumerate(ids):
                if ids.index(book) != index:
                    raise InvalidField(f"books[{index}].book", f"book {book!r} is listed twice")
