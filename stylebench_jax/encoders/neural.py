"""``FlaxEncoderEmbedder``: a local BERT-family model as an ``Embedder``, sharded over a device mesh.

Pipeline for ``embed(texts)``:
1. tokenise (content ids only, Rust, batched);
2. long texts (``long_text``, texts over the token budget ``max_length`` minus the special tokens):

   - ``chunk`` (ours, the default): split into sentences (spaCy's rule-based sentencizer), pack
     consecutive sentences' token ids into chunks within the budget, cut a sentence longer than the
     budget into budget-sized windows (nothing is lost); embed each chunk, mean-pool the chunk
     vectors. The budget is the model's own (``max_seq_length`` of sentence_bert_config.json: 256
     for all-MiniLM-L6-v2, the length it was trained at).
   - ``truncate``: keep the first ``budget`` tokens.
   - ``steb``: STEB's chunk-and-pool exactly (§3.4, App. G; github.com/rrivera1849/STEB
     ``steb/models/chunking.py`` and ``steb/models/hf_model.py`` at 40a6b8e, the generic loader STEB
     uses for all-MiniLM-L6-v2): the budget is the *tokenizer's* ``model_max_length`` (512 for
     MiniLM; ``max_position_embeddings`` when the tokenizer sets none; ``max_length`` given caps it,
     like STEB's ``max_tokens``); sentences from spaCy's ``en_core_web_sm`` parser
     (``text.sentences.parser_sentences``); sentences are packed greedily by their token counts and a
     chunk is the sentences joined by a space, tokenised again and *truncated* at the budget (so a
     sentence longer than the budget loses its tail); the text's vector is the mean of its chunks'
     vectors. STEB's loader mean-pools token states and applies no Normalize module, so unless
     ``pooling`` / ``normalize`` are given this mode uses mean pooling and returns the vectors
     unnormalised (tasks normalise them; STEB's retrieval episodes average them first).
   - ``steb-truncate``: STEB's truncation protocol (App. F): the same loader settings, each text cut
     at the budget.

   Why ours is the default: it never drops text (STEB truncates over-long sentences, e.g. lists or
   poetry without full stops), the rule-based splitter is ~10x faster than the parser, and the model
   sees chunks as long as the texts it was trained on. Results labelled STEB should be run with
   ``--long-text steb``;
3. sort sequences by length and cut into batches of ``batch_size`` rows, each padded to the
   smallest bucket length that fits (``encoders.batching``: a handful of compiled shapes);
4. run the jitted forward with the batch sharded over the mesh's ``data`` axis and heads/MLP over
   ``model`` (parameters placed by ``encoders.loading`` from the rules table), collect ``[B, H]``
   float32 outputs without blocking, restore input order.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
from collections.abc import Sequence
from pathlib import Path

import jax
import numpy as np
from jax.sharding import Mesh

from stylebench_jax.encoders.batching import batch_rows, bucket_length, length_batches, pad_batch
from stylebench_jax.encoders.loading import place_params, read_encoder_dir
from stylebench_jax.encoders.pooling import POOLING_MODES, SentenceEncoder
from stylebench_jax.errors import InvalidOption
from stylebench_jax.parallel import DEFAULT_RULES, batch_sharding, resolve_mesh
from stylebench_jax.progress import progress_bar
from stylebench_jax.text.chunking import pack_token_chunks, steb_chunks
from stylebench_jax.text.sentences import (
    parser_sentences,
    parser_splitter_name,
    split_sentences,
    splitter_name,
)

LONG_TEXT_MODES = ("chunk", "truncate", "steb", "steb-truncate")
STEB_MODES = ("steb", "steb-truncate")
_HF_VERY_LARGE = 100_000  # STEB's get_model_max_length: larger tokenizer limits mean "not set"
MAX_IN_FLIGHT = 2  # forward batches dispatched but not yet collected


@dataclasses.dataclass(frozen=True)
class EncodeSettings:
    """Everything besides the weights that determines the vectors (all part of ``identity``)."""

    max_length: int
    pooling: str = "mean"
    normalize: bool = True
    long_text: str = "chunk"
    dtype: str = "float32"


class FlaxEncoderEmbedder:
    """A BERT-family encoder from a local directory, as an ``Embedder`` (see ``encoders.base``).

    ``mesh``: the run's device mesh (``None``: every device on ``data``); ``model`` must divide the
    attention heads and MLP width. Options with a bad value raise ``InvalidOption`` naming the option.
    """

    def __init__(self, model_dir: str | Path, *, name: str | None = None, max_length: int | None = None,
                 pooling: str | None = None, normalize: bool | None = None, long_text: str = "chunk",
                 batch_size: int = 64, mesh: Mesh | None = None, progress: bool | None = None,
                 rules=DEFAULT_RULES):
        if long_text not in LONG_TEXT_MODES:
            raise InvalidOption("long_text", f"expected one of {', '.join(LONG_TEXT_MODES)}, "
                                             f"got {long_text!r}")
        if pooling is not None and pooling not in POOLING_MODES:
            raise InvalidOption("pooling", f"expected one of {', '.join(POOLING_MODES)}, got {pooling!r}")
        if batch_size < 1:
            raise InvalidOption("batch_size", f"expected >= 1, got {batch_size}")
        if max_length is not None and max_length < 1:
            raise InvalidOption("max_length", f"expected a positive number of tokens, got {max_length}")
        files = read_encoder_dir(model_dir)
        self.model_dir, self.config, self.tokenizer = files.model_dir, files.config, files.tokenizer
        self.weights_digest = files.weights_digest
        defaults = files.defaults
        if long_text in STEB_MODES:
            # STEB's generic loader: the tokenizer's limit, mean pooling, no Normalize module
            defaults = {**defaults, "pooling": "mean", "normalize": False}
            limit = self.steb_max_length()
            max_length = limit if max_length is None else min(max_length, limit)
        max_length = max_length or defaults.get("max_length") or self.config.max_tokens
        if not self.tokenizer.n_special < max_length <= self.config.max_tokens:
            raise InvalidOption("max_length", f"expected a value in ({self.tokenizer.n_special}, "
                                              f"{self.config.max_tokens}] for {self.model_dir.name}, "
                                              f"got {max_length}")
        self.settings = EncodeSettings(
            max_length=int(max_length),
            pooling=pooling or defaults.get("pooling", "mean"),
            normalize=defaults.get("normalize", True) if normalize is None else bool(normalize),
            long_text=long_text)
        if self.settings.pooling == "attention" and files.defaults.get("pooling") != "attention":
            raise InvalidOption("pooling", "attention pooling has learned weights that "
                                           f"{self.model_dir.name} lacks (1_Pooling/model.safetensors); "
                                           "pick mean or cls")
        self._name = name or self.model_dir.name
        self.batch_size = batch_size
        self.progress = progress
        self.mesh = resolve_mesh(mesh)
        self._check_mesh()
        self.projection_dim = defaults.get("projection_dim")
        self.module = SentenceEncoder(self.config, pooling=self.settings.pooling,
                                      normalize=self.settings.normalize, projection_dim=self.projection_dim)
        self.params = place_params(files.host_params, self.module, self.mesh, rules)
        self.forward_batches = 0  # number of compiled-forward calls made (tests and profiling read it)

    def steb_max_length(self) -> int:
        """STEB's ``get_model_max_length``: the tokenizer's ``model_max_length`` when set (and not
        Hugging Face's "very large" placeholder), else ``max_position_embeddings``; at most what the
        position table allows (RoBERTa: ``max_position_embeddings - padding_idx - 1``)."""
        limit = self.tokenizer.model_max_length
        if limit is None or limit > _HF_VERY_LARGE:
            limit = self.config.max_position_embeddings
        return min(int(limit), self.config.max_tokens)

    # ----------------------------------------------------------------- identity
    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self.projection_dim or self.config.hidden_size

    @property
    def identity(self) -> str:
        s = self.settings
        split = {"chunk": splitter_name, "steb": parser_splitter_name}.get(s.long_text, lambda: "none")()
        return (f"flax-bert/{self.model_dir.name}/weights={self.weights_digest}/"
                f"tokenizer={self.tokenizer.digest}/pool={s.pooling}/norm={int(s.normalize)}/"
                f"max_length={s.max_length}/long_text={s.long_text}/split={split}/dtype={s.dtype}")

    # ----------------------------------------------------------------- set-up
    def _check_mesh(self) -> None:
        model = int(self.mesh.shape["model"])
        cfg = self.config
        if cfg.num_heads % model or cfg.intermediate_size % model:
            raise InvalidOption("mesh", f"model={model} must divide the {cfg.num_heads} heads and the "
                                        f"{cfg.intermediate_size} MLP units of {self.model_dir.name}")

    @functools.cached_property
    def _forward(self):
        sharding = batch_sharding(self.mesh, 2)

        def forward(params, input_ids, attention_mask):
            return self.module.apply({"params": params}, input_ids, attention_mask)

        return jax.jit(forward, in_shardings=(None, sharding, sharding), out_shardings=sharding)

    # ----------------------------------------------------------------- embedding
    def _sequences(self, texts: Sequence[str]) -> tuple[list[list[int]], np.ndarray]:
        """Token sequences (with special tokens) and, for each, the index of its source text."""
        budget = self.settings.max_length - self.tokenizer.n_special
        content = self.tokenizer.content_ids(texts)
        sequences: list[list[int]] = []
        owners: list[int] = []
        long_ids = []
        for index, ids in enumerate(content):
            if len(ids) <= budget:
                sequences.append(self.tokenizer.wrap(ids))
                owners.append(index)
            elif self.settings.long_text in ("truncate", "steb-truncate"):
                sequences.append(self.tokenizer.wrap(ids[:budget]))
                owners.append(index)
            else:
                long_ids.append(index)
        for index in long_ids:
            if self.settings.long_text == "steb":
                chunks = [ids[:budget] for ids in self.tokenizer.content_ids(steb_chunks(
                    texts[index], parser_sentences(texts[index]), self.tokenizer, budget))]
            else:
                sentences = split_sentences(texts[index])
                chunks = pack_token_chunks(self.tokenizer.content_ids(sentences), budget)
            for chunk in chunks:
                sequences.append(self.tokenizer.wrap(chunk))
                owners.append(index)
        return sequences, np.asarray(owners, dtype=np.int64)

    def encode_sequences(self, sequences: list[list[int]]) -> np.ndarray:
        """``[S, H]`` float32 pooled vectors of token sequences (special tokens included)."""
        if not sequences:
            return np.zeros((0, self.dim), np.float32)
        lengths = np.fromiter((len(s) for s in sequences), dtype=np.int64, count=len(sequences))
        n_data = int(self.mesh.shape["data"])
        out = np.empty((len(sequences), self.dim), np.float32)
        pending: collections.deque = collections.deque()
        bar = progress_bar(total=len(sequences), desc=f"embed {self.name}", unit="seq", enabled=self.progress)

        def collect():
            rows, result = pending.popleft()
            out[rows] = np.asarray(result)[:len(rows)]
            bar.update(len(rows))

        try:
            for rows in length_batches(lengths, self.batch_size):
                length = bucket_length(int(lengths[rows].max()), self.settings.max_length)
                height = batch_rows(len(rows), self.batch_size, n_data)
                ids, mask = pad_batch([sequences[i] for i in rows], height, length, self.tokenizer.pad_id)
                pending.append((rows, self._forward(self.params, ids, mask)))
                self.forward_batches += 1
                # A bounded queue keeps the devices busy (dispatch runs ahead of compute) while
                # Ctrl-C still stops within about one batch: the process cannot exit before the
                # batches already dispatched have run.
                if len(pending) > MAX_IN_FLIGHT:
                    collect()
            while pending:
                collect()
        finally:
            bar.close()
        return out

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``[len(texts), dim]`` float32 in input order (chunked texts: mean of chunk vectors)."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        sequences, owners = self._sequences(texts)
        vectors = self.encode_sequences(sequences)
        if len(sequences) == len(texts) and np.array_equal(owners, np.arange(len(texts))):
            return vectors
        pooled = np.zeros((len(texts), self.dim), np.float64)
        np.add.at(pooled, owners, vectors)
        pooled /= np.bincount(owners, minlength=len(texts))[:, None]
        if self.settings.normalize:
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return pooled.astype(np.float32)
