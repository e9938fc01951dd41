"""Style similarity of two texts with any embedder, raw and calibrated (Writing7, seed 003 §6).

Per text (:func:`text_chunks`), with ``StyleSettings`` (the seed's inference defaults):

- **short** (at most ``max_tokens`` = 512 tokens and ``chunk_size`` = 14 sentences): the text itself is
  its one chunk;
- **long**: windows of ``chunk_size`` sentences overlapping by ``overlap`` = 4
  (``text.windows.sentence_windows``, sentences from ``text.windows.document_sentences``), at most
  ``n`` of them, evenly spaced (``text.windows.cap_windows``). With ``num_chunks="auto"`` (default)
  ``n = min(max_chunks, ceil(max(tokens / max_tokens, sentences / chunk_size)))`` as the authors'
  ``inference_contrastive.style_similarity`` (``max_chunks`` = 8, their cap); an integer fixes ``n``.
  Departure: the authors keep the *first* ``n`` windows; we keep windows ``floor(i W / n)`` of the
  ``W``, ``i < n``, spread over the text (identical whenever a text has at most ``n + 1`` windows,
  e.g. every 600-900-word story of the benchmark that needs 3 of 4 windows). They do not cover all of
  it: the last window is never among them, e.g. a 100-sentence text keeps 8 of its 10 windows
  (0-3, 5-8) and sentences 94-99 are not scored, where the authors' first 8 leave out 84-99.

Tokens are counted with the embedder's own tokenizer (special tokens included) when it has one, else
as whitespace-separated words (baselines). Each chunk is embedded once by the embedder (through the
embedding cache when one is passed); "512 tokens per chunk at most": a neural embedder's budget is
its own ``max_length`` capped at 512 (:func:`resolve_style_embedder`), and a window over that budget
is handled by the embedder's long-text policy (``chunk``: sentence-packed pieces, mean-pooled), so
no text is silently cut. Vectors are L2-normalised on the host; every chunk pair's cosine comes from
the pair kernel (``kernels.pair_cosine_scores``) and is aggregated per text pair:

- ``single`` when both texts are one chunk (one cosine);
- ``mean`` (default): the mean of all ``n1 x n2`` chunk-pair cosines;
- ``topk_mean``: the mean of the ``min(topk, n1 n2)`` highest (topk = 5).

Output per pair (seed §6.2): ``{"cosine", "score_0_1" = (cosine + 1) / 2, "score_calibrated"
(the calibration map of the cosine, None without a calibration), "aggregate", "pairs" = n1 n2}``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import numpy as np

from stylebench_jax.encoders.base import Embedder, EmbedFn, PairSimilarity, embed_direct
from stylebench_jax.errors import InvalidOption, UserInputError
from stylebench_jax.text.windows import (
    WRITING7_OVERLAP,
    WRITING7_SIZE,
    cap_windows,
    document_sentences,
    sentence_windows,
)

AGGREGATES = ("mean", "topk_mean")
MAX_CHUNK_TOKENS = 512
KERNEL_BLOCK = 1 << 16  # chunk pairs per kernel call


@dataclasses.dataclass(frozen=True)
class StyleSettings:
    """Inference settings; a calibration is only valid under the settings it was fitted with."""

    chunk_size: int = WRITING7_SIZE
    overlap: int = WRITING7_OVERLAP
    max_tokens: int = MAX_CHUNK_TOKENS
    num_chunks: str | int = "auto"
    max_chunks: int = 8
    aggregate: str = "mean"
    topk: int = 5

    def __post_init__(self):
        if self.chunk_size < 1:
            raise InvalidOption("chunk_size", f"expected >= 1 sentence, got {self.chunk_size}")
        if not 0 <= self.overlap < self.chunk_size:
            raise InvalidOption("overlap", f"expected 0 <= overlap < chunk_size ({self.chunk_size}), "
                                           f"got {self.overlap}")
        if self.aggregate not in AGGREGATES:
            raise InvalidOption("aggregate", f"expected one of {', '.join(AGGREGATES)}, "
                                             f"got {self.aggregate!r}")
        n = self.num_chunks
        if n != "auto" and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise InvalidOption("num_chunks", f"expected 'auto' or a positive integer, got {n!r}")
        for name in ("max_tokens", "max_chunks", "topk"):
            if getattr(self, name) < 1:
                raise InvalidOption(name, f"expected >= 1, got {getattr(self, name)}")

    def meta(self) -> dict:
        """The settings as stored in ``style_calibration.json``'s ``meta``."""
        return dataclasses.asdict(self)


def parse_num_chunks(value: str) -> str | int:
    """``"auto"`` or a positive integer from a command-line string."""
    if value == "auto":
        return value
    try:
        return int(value)
    except ValueError:
        raise InvalidOption("num_chunks", f"expected 'auto' or a positive integer, got {value!r}") from None


def token_counter(embedder) -> Callable[[Sequence[str]], list[int]]:
    """Tokens per text with special tokens (the embedder's tokenizer), else whitespace words."""
    tokenizer = getattr(embedder, "tokenizer", None)
    if tokenizer is not None and hasattr(tokenizer, "content_ids"):
        return lambda texts: [len(ids) + tokenizer.n_special for ids in tokenizer.content_ids(list(texts))]
    return lambda texts: [len(t.split()) for t in texts]


def chunk_count(n_tokens: int, n_sentences: int, settings: StyleSettings) -> int:
    """How many chunks a text of ``n_tokens`` tokens and ``n_sentences`` sentences gets (module docstring)."""
    if settings.num_chunks != "auto":
        return int(settings.num_chunks)
    if n_tokens <= settings.max_tokens and n_sentences <= settings.chunk_size:
        return 1
    estimate = math.ceil(max(n_tokens / settings.max_tokens, n_sentences / settings.chunk_size))
    return max(1, min(estimate, settings.max_chunks))


def text_chunks(text: str, n_tokens: int, settings: StyleSettings) -> list[str]:
    """The chunks of ``text`` (module docstring): ``[text]`` for one chunk, else sentence windows."""
    sentences = document_sentences(text)
    n = chunk_count(n_tokens, len(sentences), settings)
    if n <= 1:
        return [text]
    windows = sentence_windows(sentences, settings.chunk_size, settings.overlap, min_chars=0)
    chosen = cap_windows(windows, n)
    return [w.text for w in chosen] or [text]


def resolve_style_embedder(name: str, **options) -> Embedder:
    """``encoders.registry.resolve_embedder`` for style scoring: refuses pair-only baselines and caps a
    neural model's ``max_length`` at 512 tokens per chunk (the seed's ``max_length``)."""
    from stylebench_jax.encoders.registry import resolve_embedder

    embedder = resolve_embedder(name, **options)
    if isinstance(embedder, PairSimilarity) and not isinstance(embedder, Embedder):
        raise UserInputError(f"model {name!r} is a pairwise similarity without vectors; style scoring and "
                             "calibration need an embedder (minilm, a model directory, or a baseline that "
                             "embeds)")
    settings = getattr(embedder, "settings", None)
    if settings is not None and getattr(settings, "max_length", 0) > MAX_CHUNK_TOKENS:
        embedder = resolve_embedder(name, **{**options, "max_length": MAX_CHUNK_TOKENS})
    return embedder


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.where(norms > 0, vectors / np.maximum(norms, 1e-30), 0.0).astype(np.float32)


def _pow2(n: int) -> int:
    return max(256, 1 << (max(n, 1) - 1).bit_length())


def chunk_pair_cosines(vectors: np.ndarray, rows_a: np.ndarray, rows_b: np.ndarray, mesh=None) -> np.ndarray:
    """``[M]`` float32 cosines of ``vectors[rows_a[m]]`` and ``vectors[rows_b[m]]`` (rows already
    L2-normalised) through the pair kernel, in blocks padded to a power of two (few compiled shapes),
    clipped to [-1, 1]: float32 rounding gives 1.0000001 for a chunk and itself, and ``(cos + 1) / 2``
    above 1 was refused as a probability by calibration (seed 003 §6.2: cosine in [-1, 1])."""
    from stylebench_jax.kernels import pair_cosine_scores

    out = np.empty(rows_a.size, np.float32)
    for start in range(0, rows_a.size, KERNEL_BLOCK):
        a, b = rows_a[start:start + KERNEL_BLOCK], rows_b[start:start + KERNEL_BLOCK]
        size = _pow2(a.size)
        pad = np.zeros(size - a.size, np.int64)
        scores = pair_cosine_scores(vectors[np.concatenate([a, pad])], vectors[np.concatenate([b, pad])],
                                    block_size=size, mesh=mesh)
        out[start:start + a.size] = scores[:a.size]
    return np.clip(out, -1.0, 1.0, out=out)


def _aggregate(cosines: np.ndarray, settings: StyleSettings, single: bool) -> tuple[float, str]:
    if single:
        return float(cosines[0]), "single"
    if settings.aggregate == "topk_mean":
        k = min(settings.topk, cosines.size)
        return float(np.mean(np.sort(cosines.astype(np.float64))[-k:])), "topk_mean"
    return float(np.mean(cosines.astype(np.float64))), "mean"


def score_pairs(embedder: Embedder, texts_a: Sequence[str], texts_b: Sequence[str],
                settings: StyleSettings, *, embed_fn: EmbedFn = embed_direct, calibration=None,
                mesh=None) -> list[dict]:
    """Style similarity of ``texts_a[i]`` and ``texts_b[i]`` for every ``i`` (module docstring), all
    chunks of all texts embedded in one ``embed_fn`` call (each distinct chunk once). ``calibration``:
    a ``calibration.files.StyleCalibration`` already checked against ``settings`` and ``embedder``."""
    if len(texts_a) != len(texts_b):
        raise ValueError(f"texts_a/texts_b: expected equal lengths, found {len(texts_a)} and {len(texts_b)}")
    if not len(texts_a):
        return []
    unique = list(dict.fromkeys([*texts_a, *texts_b]))
    counts = token_counter(embedder)(unique)
    chunks_of = {text: text_chunks(text, n, settings) for text, n in zip(unique, counts)}
    chunk_texts = list(dict.fromkeys(c for text in unique for c in chunks_of[text]))
    row = {c: i for i, c in enumerate(chunk_texts)}
    vectors = _normalise(embed_fn(embedder, chunk_texts))
    rows_a, rows_b, sizes = [], [], []
    for a, b in zip(texts_a, texts_b):
        ra = np.array([row[c] for c in chunks_of[a]], np.int64)
        rb = np.array([row[c] for c in chunks_of[b]], np.int64)
        rows_a.append(np.repeat(ra, rb.size))
        rows_b.append(np.tile(rb, ra.size))
        sizes.append((ra.size, rb.size))
    cosines = chunk_pair_cosines(vectors, np.concatenate(rows_a), np.concatenate(rows_b), mesh=mesh)
    results, offset = [], 0
    for n1, n2 in sizes:
        cosine, aggregate = _aggregate(cosines[offset:offset + n1 * n2], settings, n1 == 1 and n2 == 1)
        offset += n1 * n2
        calibrated = float(calibration.mapping(cosine)) if calibration is not None else None
        results.append({"cosine": cosine, "score_0_1": (cosine + 1.0) / 2.0, "score_calibrated": calibrated,
                        "aggregate": aggregate, "pairs": n1 * n2})
    return results


def embedder_identity(embedder) -> dict[str, str]:
    """``{"name", "identity"}`` of an embedder, as stored with a calibration."""
    return {"name": embedder.name, "identity": embedder.identity}
