"""Neural embedders: a local BERT-family encoder (``FlaxEncoderEmbedder``) or causal decoder
(``FlaxDecoderEmbedder``) as an ``Embedder``, sharded over a device mesh.

Pipeline for ``embed(texts)``, the same for both families:
1. tokenise (content ids only) with the optional prompt in front; long texts (over the token budget
   ``max_length`` minus the special tokens) by ``long_text`` (``encoders.batching.token_sequences``):

   - ``chunk`` (ours, the default): split into sentences, pack consecutive sentences' token ids into
     chunks within the budget, cut a sentence longer than the budget into budget-sized windows
     (nothing is lost); embed each chunk, mean-pool the chunk vectors. The budget is the model's own
     (``max_seq_length`` of sentence_bert_config.json: 256 for all-MiniLM-L6-v2, the length it was
     trained at).
   - ``truncate``: keep the first ``budget`` tokens.
   - ``steb``: STEB's chunk-and-pool exactly (§3.4, App. G; github.com/rrivera1849/STEB
     ``steb/models/chunking.py`` and ``steb/models/hf_model.py`` at 40a6b8e, the generic loader STEB
     uses for all-MiniLM-L6-v2): the budget is the *tokenizer's* ``model_max_length`` (512 for
     MiniLM; ``max_position_embeddings`` when the tokenizer sets none; ``max_length`` given caps it,
     like STEB's ``max_tokens``); sentences from spaCy's ``en_core_web_sm`` parser
     (``text.sentences.parser_sentences``); sentences are packed greedily by their token counts and a
     chunk is the sentences joined by a space, tokenised again and *truncated* at the budget (so a
     sentence longer than the budget loses its tail); the text's vector is the mean of its chunks'
     vectors. STEB's loader mean-pools token states, applies no Normalize module and no prompt, so
     unless ``pooling`` / ``normalize`` / ``prompt`` are given this mode uses mean pooling, no prompt
     and returns the vectors unnormalised (tasks normalise them; STEB's retrieval episodes average
     them first). Encoders only: STEB's loaders for causal LMs are not what we checked.
   - ``steb-truncate``: STEB's truncation protocol (App. F): the same loader settings, each text cut
     at the budget.

   Why ours is the default: it never drops text (STEB truncates over-long sentences, e.g. lists or
   poetry without full stops), the rule-based splitter is ~10x faster than the parser, and the model
   sees chunks as long as the texts it was trained on. Results labelled STEB should be run with
   ``--long-text steb``;
2. sort sequences by length and cut into batches of ``batch_size`` rows, each padded to a bucket
   length (``encoders.batching.plan_batches``: the lengths that minimise padded work plus the cost
   of each new compiled program, ``CPU_PROGRAM_FLOPS``; programs this embedder already compiled are free);
3. run the jitted forward with the batch sharded over the mesh's ``data`` axis and heads/MLP over
   ``model`` (parameters read block by block into their shardings by ``encoders.loading``; on CPU a
   batch of long sequences runs as a ``lax.map`` over micro-batches inside its one program,
   ``micro_batch_rows``, and BERT-family attention in float32 runs in the C++ kernel of
   ``kernels.cpu_attention``, ``fused_attention_mesh``), collect ``[B, H]`` float32 outputs without
   blocking, restore input order.

What differs between the families is a handful of class attributes and hooks: the directory reader,
the Flax module, the pooling modes and their default, the dtypes, the rules table, the default token
budget and whether a mesh that does not divide the heads is refused.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import jax
import numpy as np
from jax.sharding import Mesh

from stylebench_jax.encoders.batching import (
    LONG_TEXT_MODES,
    STEB_MODES,
    collect_pipelined,
    pad_batch,
    plan_batches,
    token_sequences,
)
from stylebench_jax.encoders.bert import map_row_groups
from stylebench_jax.encoders.config import EncoderConfig
from stylebench_jax.encoders.decoder_config import DecoderConfig
from stylebench_jax.encoders.loading import (
    DTYPES,
    load_params,
    model_family,
    read_decoder_dir,
    read_encoder_dir,
)
from stylebench_jax.encoders.pooling import (
    DECODER_POOLING_MODES,
    POOLING_MODES,
    DecoderSentenceEncoder,
    SentenceEncoder,
)
from stylebench_jax.errors import InvalidOption, UserInputError
from stylebench_jax.parallel import DECODER_RULES, DEFAULT_RULES, batch_sharding, resolve_mesh
from stylebench_jax.parallel.distributed import process_count
from stylebench_jax.progress import progress_bar
from stylebench_jax.text.sentences import parser_splitter_name, splitter_name

_HF_VERY_LARGE = 100_000  # STEB's get_model_max_length: larger tokenizer limits mean "not set"
# Default token budget of decoders: LLM context windows (8k-128k tokens) would make activations huge,
# and long texts are chunked anyway (STEB). ``max_length`` raises it.
DEFAULT_DECODER_MAX_LENGTH = 512


@dataclasses.dataclass(frozen=True)
class EncodeSettings:
    """Everything besides the weights that determines the vectors (all part of ``identity``)."""

    max_length: int
    pooling: str = "mean"
    normalize: bool = True
    long_text: str = "chunk"
    dtype: str = "float32"
    prompt: str = ""


# Tokens per micro-batch and ``data`` device on CPU meshes (``micro_batch_rows``). Measured (MiniLM
# forward, 64-row batches, 2-core AVX2 EPYC, sequences/s whole batch vs micro-batches): 128 tokens
# 32.3 vs 42.7 (16 rows), 256 tokens 13.7 vs 16.8 (8 rows), 32 tokens 175 either way; the same
# programs compile (one per bucket and batch height) in the same time; outputs within 3e-7.
CPU_MICRO_BATCH_TOKENS = 2048


# What one more compiled forward program costs, in FLOPs of forward work (``batching.plan_lengths``
# weighs it against padding). CPU, measured (MiniLM, 2-core AVX2 EPYC, 2026-11-26): a new program
# takes 1.1-2.1 s (0.4-0.6 s tracing and lowering, 0.8-1.6 s compiling; ~0.7 s in all when XLA's
# persistent cache holds it), while the forward runs at ~95 GFLOP/s (64 x 128 tokens, 0.18 TFLOP, in
# 1.8-2.0 s): ~1.5e11. Accelerators, an estimate (compile time not measured on the card): ~2 s per
# program against ~2e13 FLOP/s reached (H100 run of 2026-11-26: bfloat16 MiniLM, 12,584 real texts/s
# of ~80 tokens): ~4e13, i.e. a handful of programs, long texts and short alike.
CPU_PROGRAM_FLOPS = 1.5e11
ACCELERATOR_PROGRAM_FLOPS = 4e13


@functools.cache
def _warn_once(message: str) -> None:
    print(message, file=sys.stderr)


def _cpu_mesh(mesh: Mesh) -> bool:
    """Whether every device of ``mesh`` is a CPU (the embedder's cache-friendly settings apply)."""
    return all(device.platform == "cpu" for device in mesh.devices.flat)


def micro_batch_rows(mesh: Mesh, rows: int, length: int) -> int:
    """Rows per step when a ``[rows, length]`` batch runs as a ``lax.map`` over micro-batches inside
    its one program (``FlaxEncoderEmbedder._forward``): on CPU meshes the largest multiple ``m`` of the
    ``data`` size dividing ``rows`` with ``m * length <= CPU_MICRO_BATCH_TOKENS`` per device (at least
    one row per device), so the activations of a step stay in the CPU's caches; elsewhere ``rows``
    (accelerators want the whole batch). ``rows`` is a multiple of the ``data`` size."""
    n_data = int(mesh.shape["data"])
    if not _cpu_mesh(mesh):
        return rows
    per_device = max(1, CPU_MICRO_BATCH_TOKENS // length)
    best = n_data
    for m in range(n_data, min(rows, per_device * n_data) + 1, n_data):
        if rows % m == 0:
            best = m
    return best


def attention_groups(mesh: Mesh) -> int:
    """Sequences per attention step for ``mesh`` (``bert.grouped_attention``): on CPU meshes the
    ``data`` size (one sequence per device per step: the scores stay in cache, measured fastest on
    XLA:CPU, see benchmarks/bench_encoder.py); elsewhere 0 (the whole batch in one batched product)."""
    if _cpu_mesh(mesh):
        return int(mesh.shape["data"])
    return 0


def fused_attention_mesh(mesh: Mesh, config, dtype: str, fused: bool | None) -> tuple[Mesh | None, str]:
    """Whether attention runs in the C++ kernel (``kernels.cpu_attention``): ``(mesh or None, what)``.

    ``fused``: ``None`` (auto: on CPU meshes in float32 with a head size the kernel handles, whenever
    it builds and loads here; when it cannot, XLA's attention, said once on stderr since it is slower on
    long texts: 64 x 256 tokens ~13% slower, real texts -3% to +15% across three runs, 2026-11-27),
    ``False`` (XLA's attention), ``True`` (the
    kernel, or ``InvalidOption`` saying why not).
    The kernels are x86-64 code that needs AVX2/FMA (forward and backward; their products use AVX-512
    where the CPU has it, with the same results); accelerators keep XLA's attention."""
    from stylebench_jax.kernels import cpu_attention

    if fused is False:
        return None, "xla (asked for)"
    if not _cpu_mesh(mesh):
        reason, applies = "the mesh is not on CPU", False
    elif not cpu_attention.supports(config.head_dim, DTYPES[dtype]):
        reason, applies = (f"the kernel takes float32 and head sizes divisible by "
                           f"{cpu_attention.HEAD_DIM_MULTIPLE}, not {dtype} and {config.head_dim}"), False
    else:
        reason, applies = cpu_attention.unavailable(), True
    if reason is None:
        return mesh, "fused-cpu"
    if fused:
        raise InvalidOption("fused_attention", f"the fused CPU attention kernel cannot run: {reason}")
    if applies:
        _warn_once(f"stylebench: fused CPU attention unavailable ({reason}); using XLA's attention")
    return None, f"xla ({reason})"


class FlaxEncoderEmbedder:
    """A BERT-family encoder from a local directory, as an ``Embedder`` (see ``encoders.base``).

    ``mesh``: the run's device mesh (``None``: every device on ``data``); for BERT-family models
    ``model`` must divide the attention heads and MLP width. ``prompt``: text put before every input
    (``None``: the model's sentence-transformers default prompt, else none). ``dtype``: ``float32``
    (default) or ``bfloat16``: matrix products in bfloat16 with float32 accumulation, LayerNorm
    statistics, softmax and pooling sums in float32, parameters kept in float32 (part of the cache key).
    ``fused_attention``: attention in the C++ CPU kernel (``fused_attention_mesh``; ``None``: whenever
    it applies and builds); ``attention_kernel`` says what runs.
    Options with a bad value raise ``InvalidOption`` naming the option.
    """

    family = "BERT-family encoder"
    config_class = EncoderConfig
    pooling_modes = POOLING_MODES
    default_pooling = "mean"
    dtypes: tuple[str, ...] = tuple(DTYPES)
    default_rules = DEFAULT_RULES
    read_files = staticmethod(read_encoder_dir)
    steb_modes = True  # --long-text steb / steb-truncate (STEB's generic encoder loader)

    def __init__(self, model_dir: str | Path, *, name: str | None = None, max_length: int | None = None,
                 pooling: str | None = None, normalize: bool | None = None, long_text: str = "chunk",
                 batch_size: int = 64, mesh: Mesh | None = None, progress: bool | None = None,
                 rules=None, dtype: str | None = None, prompt: str | None = None,
                 fused_attention: bool | None = None):
        dtype = dtype or "float32"
        self.check_options(pooling=pooling, long_text=long_text, dtype=dtype, batch_size=batch_size,
                           max_length=max_length)
        files = self.read_files(model_dir)
        self.model_dir, self.config, self.tokenizer = files.model_dir, files.config, files.tokenizer
        self.weights_digest = files.weights_digest
        defaults = files.defaults
        if long_text in STEB_MODES:
            # STEB's generic loader: the tokenizer's limit, mean pooling, no Normalize module, no prompt
            defaults = {**defaults, "pooling": "mean", "normalize": False, "prompt": ""}
            limit = self.steb_max_length()
            max_length = limit if max_length is None else min(max_length, limit)
        prompt = defaults.get("prompt", "") if prompt is None else prompt
        from_st_file = max_length is None and defaults.get("max_length") is not None
        max_length = self.chosen_max_length(self.config, defaults, max_length)
        reserved = self.tokenizer.n_special + (len(self.tokenizer.content_ids([prompt])[0]) if prompt else 0)
        if not reserved < max_length <= self.config.max_tokens and from_st_file:
            raise UserInputError(f"{self.model_dir / 'sentence_bert_config.json'}: max_seq_length "
                                 f"{max_length}: expected a value in ({reserved}, {self.config.max_tokens}] "
                                 "(the position table of config.json); pass --max-length to override")
        if not reserved < max_length <= self.config.max_tokens:
            taken = f" (special tokens and prompt take {reserved})" if prompt else ""
            raise InvalidOption("max_length", f"expected a value in ({reserved}, {self.config.max_tokens}] "
                                              f"for {name or self.model_dir.name}{taken}, got {max_length}")
        self.settings = EncodeSettings(
            max_length=int(max_length),
            pooling=pooling or defaults.get("pooling", self.default_pooling),
            normalize=defaults.get("normalize", True) if normalize is None else bool(normalize),
            long_text=long_text, dtype=dtype, prompt=prompt)
        if self.settings.pooling == "attention" and not any(p[0] == "attention_pool" for p in files.tensors):
            raise InvalidOption("pooling", "attention pooling has learned weights that "
                                           f"{self.model_dir.name} lacks (1_Pooling/model.safetensors); "
                                           "pick mean or cls")
        self._name = name or self.model_dir.name
        self.batch_size = batch_size
        self.progress = progress
        self.mesh = resolve_mesh(mesh)
        self._check_mesh()
        self.projection_dim = defaults.get("projection_dim")  # ours (encoders.export): Writing7's head
        fused_mesh, self.attention_kernel = self.attention_plan(fused_attention)
        self.module = self.build_module(self.config, self.settings, self.projection_dim,
                                        attention_groups(self.mesh), fused_mesh)
        self.params = load_params(files.tensors, self.module, self.mesh,
                                  self.default_rules if rules is None else rules)
        self.forward_batches = 0  # number of compiled-forward calls made (tests and profiling read it)
        self.programs: set[tuple[int, int]] = set()  # (rows, length) of the forward programs compiled

    def steb_max_length(self) -> int:
        """STEB's ``get_model_max_length``: the tokenizer's ``model_max_length`` when set (and not
        Hugging Face's "very large" placeholder), else ``max_position_embeddings``; at most what the
        position table allows (RoBERTa: ``max_position_embeddings - padding_idx - 1``)."""
        limit = self.tokenizer.model_max_length
        if limit is None or limit > _HF_VERY_LARGE:
            limit = self.config.max_position_embeddings
        return min(int(limit), self.config.max_tokens)

    @classmethod
    def chosen_max_length(cls, config, defaults: dict, max_length: int | None) -> int:
        """The token budget an embedder uses: the option, else sentence-transformers' ``max_seq_length``
        (``defaults``), else the family's default capped by the tokenizer's ``model_max_length``
        (sentence-transformers' own fallback; the memory plan asks the same)."""
        if max_length or defaults.get("max_length"):
            return max_length or defaults["max_length"]
        return min(cls.default_max_length(config), defaults.get("tokenizer_max_length") or config.max_tokens)

    # ----------------------------------------------------------------- family hooks
    @staticmethod
    def default_max_length(config) -> int:
        """Token budget when neither the option nor sentence-transformers' files give one."""
        return config.max_tokens

    @staticmethod
    def token_flops(config, length: int) -> float:
        """Forward FLOPs per token of a ``length``-token sequence: the layers' matrix products
        (``2 * (4 H^2 + 2 H I)`` per layer) and attention's two products (``4 L H`` per layer)."""
        h, i = config.hidden_size, config.intermediate_size
        return float(config.num_layers * (2 * (4 * h * h + 2 * h * i) + 4 * length * h))

    def attention_plan(self, fused: bool | None) -> tuple[Mesh | None, str]:
        """``(mesh for the fused kernel or None, what runs)``: ``fused_attention_mesh``."""
        return fused_attention_mesh(self.mesh, self.config, self.settings.dtype, fused)

    @staticmethod
    def build_module(config, settings: EncodeSettings, projection_dim: int | None = None,
                     groups: int = 0, fused_mesh: Mesh | None = None):
        """The Flax module computing ``[B, L]`` ids -> ``[B, D]`` float32 pooled vectors; ``groups``:
        sequences attended per step (``bert.grouped_attention``; 0: the whole batch at once);
        ``fused_mesh``: attention in ``kernels.cpu_attention`` over that mesh instead."""
        return SentenceEncoder(config, pooling=settings.pooling, normalize=settings.normalize,
                               dtype=DTYPES[settings.dtype], projection_dim=projection_dim,
                               attention_groups=groups, fused_attention=fused_mesh)

    def _check_mesh(self) -> None:
        model = int(self.mesh.shape["model"])
        cfg = self.config
        if cfg.num_heads % model or cfg.intermediate_size % model:
            raise InvalidOption("mesh", f"model={model} must divide the {cfg.num_heads} heads and the "
                                        f"{cfg.intermediate_size} MLP units of {self.model_dir.name}")

    def _identity_head(self) -> str:
        return f"flax-bert/{self.model_dir.name}"

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
        # the parsed architecture (layer_norm_eps, hidden_act, rope_theta...: config.json's fields
        # that change the vectors), not the file's bytes, which carry fields that do not
        config = hashlib.sha256(json.dumps(dataclasses.asdict(self.config), sort_keys=True,
                                           default=str).encode("utf-8")).hexdigest()[:12]
        identity = (f"{self._identity_head()}/weights={self.weights_digest}/config={config}/"
                    f"tokenizer={self.tokenizer.digest}/pool={s.pooling}/norm={int(s.normalize)}/"
                    f"max_length={s.max_length}/long_text={s.long_text}/split={split}/dtype={s.dtype}")
        if s.prompt:  # absent without a prompt, so identities (cache keys) from before prompts still hold
            identity += f"/prompt={hashlib.sha256(s.prompt.encode('utf-8')).hexdigest()[:12]}"
        return identity

    # ----------------------------------------------------------------- set-up
    @classmethod
    def check_options(cls, *, pooling: str | None = None, long_text: str = "chunk", dtype: str = "float32",
                      batch_size: int = 1, max_length: int | None = None) -> None:
        """``InvalidOption`` naming the first option this family cannot use (before any file is read)."""
        if long_text not in LONG_TEXT_MODES:
            raise InvalidOption("long_text", f"expected one of {', '.join(LONG_TEXT_MODES)}, "
                                             f"got {long_text!r}")
        if long_text in STEB_MODES and not cls.steb_modes:
            raise InvalidOption("long_text", f"{long_text!r} reproduces STEB's generic loader for "
                                             f"BERT-family encoders; a {cls.family} takes chunk or truncate")
        if pooling is not None and pooling not in cls.pooling_modes:
            raise InvalidOption("pooling", f"expected one of {', '.join(cls.pooling_modes)} for a "
                                           f"{cls.family}, got {pooling!r}")
        if dtype not in cls.dtypes:
            raise InvalidOption("dtype", f"expected one of {', '.join(cls.dtypes)} for a {cls.family}, "
                                         f"got {dtype!r}")
        if batch_size < 1:
            raise InvalidOption("batch_size", f"expected >= 1, got {batch_size}")
        if max_length is not None and max_length < 1:
            raise InvalidOption("max_length", f"expected a positive number of tokens, got {max_length}")

    @functools.cached_property
    def _forward(self):
        sharding = batch_sharding(self.mesh, 2)

        def apply(params, input_ids, attention_mask):
            return self.module.apply({"params": params}, input_ids, attention_mask)

        def forward(params, input_ids, attention_mask):
            rows, length = input_ids.shape
            micro = micro_batch_rows(self.mesh, rows, length)
            if micro == rows:
                return apply(params, input_ids, attention_mask)
            return map_row_groups(functools.partial(apply, params), (input_ids, attention_mask), micro)

        return jax.jit(forward, in_shardings=(None, sharding, sharding), out_shardings=sharding)

    # ----------------------------------------------------------------- embedding
    def encode_sequences(self, sequences: list[list[int]]) -> np.ndarray:
        """``[S, H]`` float32 pooled vectors of token sequences (special tokens included)."""
        if not sequences:
            return np.zeros((0, self.dim), np.float32)
        lengths = np.fromiter((len(s) for s in sequences), dtype=np.int64, count=len(sequences))
        n_data = int(self.mesh.shape["data"])
        out = np.empty((len(sequences), self.dim), np.float32)
        bar = progress_bar(total=len(sequences), desc=f"embed {self.name}", unit="seq", enabled=self.progress)

        program_flops = CPU_PROGRAM_FLOPS if _cpu_mesh(self.mesh) else ACCELERATOR_PROGRAM_FLOPS
        plan = plan_batches(lengths, self.batch_size, n_data, self.settings.max_length,
                            token_flops=functools.partial(self.token_flops, self.config),
                            program_flops=program_flops,
                            compiled=frozenset(self.programs))

        def jobs():
            for rows, height, length in plan:
                ids, mask = pad_batch([sequences[i] for i in rows], height, length, self.tokenizer.pad_id)
                self.forward_batches += 1
                self.programs.add((height, length))
                yield rows, self._forward(self.params, ids, mask)

        try:
            return collect_pipelined(jobs(), out, np.asarray, bar.update)
        finally:
            bar.close()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``[len(texts), dim]`` float32 in input order (chunked texts: mean of chunk vectors)."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        if process_count() > 1:  # each process tokenises and feeds only its share (encoders.multiprocess)
            from stylebench_jax.encoders.multiprocess import embed_across_processes

            return embed_across_processes(self, texts)
        sequences, owners = self.text_sequences(texts)
        return self.pool(self.encode_sequences(sequences), owners, len(texts))

    def text_sequences(self, texts: list[str]) -> tuple[list[list[int]], np.ndarray]:
        """Token id sequences of ``texts`` (long texts chunked or cut, ``batching.token_sequences``)
        and ``owners[i]``, the text of sequence ``i``."""
        s = self.settings
        return token_sequences(texts, self.tokenizer, max_length=s.max_length, long_text=s.long_text,
                               prompt=s.prompt)

    def pool(self, vectors: np.ndarray, owners: np.ndarray, n_texts: int) -> np.ndarray:
        """``[n_texts, dim]`` float32: each text's vector, the mean of its chunks' ``vectors``
        (``owners[i]`` = text of row ``i``), L2-normalised again when the model normalises."""
        if len(owners) == n_texts and np.array_equal(owners, np.arange(n_texts)):
            return vectors
        pooled = np.zeros((n_texts, self.dim), np.float64)
        np.add.at(pooled, owners, vectors)
        pooled /= np.bincount(owners, minlength=n_texts)[:, None]
        if self.settings.normalize:
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return pooled.astype(np.float32)


class FlaxDecoderEmbedder(FlaxEncoderEmbedder):
    """A causal LM (Llama / Mistral / Qwen2 / Qwen3 / GPT-2) from a local directory, as an ``Embedder``.

    Same pipeline, cache and mesh as the BERT family; what differs:

    - the module is ``pooling.DecoderSentenceEncoder`` (``encoders.decoder``); ``dtype`` bfloat16 also
      stores the parameters in bfloat16 (an encoder keeps float32 parameters);
    - pooling is ``last`` (the last non-padding token's hidden state, STEB §4.2 for causal LMs) or
      ``mean`` (AuthBench §4's default for LLM backbones): the option, else sentence-transformers'
      Pooling config (``pooling_mode_lasttoken`` / ``pooling_mode_mean_tokens``), else ``last``;
    - the vocabulary is sharded over ``model`` too (``parallel.DECODER_RULES``), and dimensions that do
      not divide the mesh (e.g. 2 KV heads on ``model=4``) are replicated instead of refused
      (``loading.replicated_dims`` lists them; the memory plan reports them);
    - the default token budget is ``min(max_position_embeddings, 512)`` (``DEFAULT_DECODER_MAX_LENGTH``).
    """

    family = "causal decoder"
    config_class = DecoderConfig
    pooling_modes = DECODER_POOLING_MODES
    default_pooling = "last"
    dtypes = tuple(DTYPES)
    default_rules = DECODER_RULES
    read_files = staticmethod(read_decoder_dir)
    steb_modes = False

    @staticmethod
    def default_max_length(config) -> int:
        return min(config.max_tokens, DEFAULT_DECODER_MAX_LENGTH)

    @staticmethod
    def token_flops(config, length: int) -> float:
        """Forward FLOPs per token: query/key/value/output projections (grouped keys and values),
        the MLP (three matrices when gated, two for GPT-2) and attention's two products."""
        h, q = config.hidden_size, config.num_heads * config.head_dim
        kv = config.num_kv_heads * config.head_dim
        mlp = (2 if config.model_type == "gpt2" else 3) * h * config.intermediate_size
        return float(config.num_layers * (2 * (2 * h * q + 2 * h * kv + mlp) + 4 * length * q))

    def attention_plan(self, fused: bool | None) -> tuple[Mesh | None, str]:
        if fused:
            raise InvalidOption("fused_attention", "the fused CPU attention kernel is for BERT-family "
                                                   "encoders; decoders use XLA's causal attention")
        return None, "xla (causal)"

    @staticmethod
    def build_module(config, settings: EncodeSettings, projection_dim: int | None = None,
                     groups: int = 0, fused_mesh: Mesh | None = None):
        # ``groups`` and ``fused_mesh`` are the BERT family's attention options; decoders have their
        # own causal attention (``encoders.decoder``) and take neither.
        if projection_dim is not None:  # read_decoder_dir refuses such directories
            raise ValueError("decoders have no projection head")
        dtype = DTYPES[settings.dtype]
        return DecoderSentenceEncoder(config, pooling=settings.pooling, normalize=settings.normalize,
                                      dtype=dtype, param_dtype=dtype)

    def _check_mesh(self) -> None:
        """Nothing to refuse: dimensions that do not divide the mesh are replicated."""

    def _identity_head(self) -> str:
        return f"flax-decoder/{self.config.model_type}/{self.model_dir.name}"


def embedder_class(model_dir: str | Path) -> type[FlaxEncoderEmbedder]:
    """``FlaxDecoderEmbedder`` or ``FlaxEncoderEmbedder`` from ``config.json``'s ``model_type``."""
    return FlaxDecoderEmbedder if model_family(model_dir) == "decoder" else FlaxEncoderEmbedder
