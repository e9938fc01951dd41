"""The cross-encoder teacher for distillation (seed 003 §4.3, L_KD; "teacher trained first if absent").

A cross-encoder reads both texts at once, ``prefix a suffix b suffix`` (BERT: ``[CLS] a [SEP] b
[SEP]``, segment ids 0 then 1 where the model has two segment types), each text cut to half the
budget, and classifies the CLS state (dropout, Dense to 2 logits). It is trained with the
bi-encoder's cross-entropy (label smoothing, class weights) for ``teacher.steps`` steps of
``teacher.batch_size`` pairs with AdamW and the same schedule shape, data-parallel over the mesh.
Its soft targets for every training pair are the mean of the logits of both orders (a
cross-encoder is not symmetric; the student's classifier is). They are stored in
``RUN/teacher/logits.npy`` with a digest of the training pairs, so a resumed run (or a run given
``teacher.mode: <that directory>``) reuses them; logits for other pairs are refused.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh

from stylebench_jax.config import config_to_dict
from stylebench_jax.encoders.bert import BertEncoder
from stylebench_jax.encoders.config import EncoderConfig
from stylebench_jax.encoders.dropout import Dropout
from stylebench_jax.encoders.loading import EncoderFiles, init_params, param_shardings
from stylebench_jax.errors import UserInputError
from stylebench_jax.fileio import read_json_file, save_npy_atomic, write_text_atomic
from stylebench_jax.parallel import batch_sharding
from stylebench_jax.parallel.distributed import fetch
from stylebench_jax.progress import progress_bar
from stylebench_jax.training.config import OptimConfig, TrainConfig
from stylebench_jax.training.data import PairSet, TrainingData
from stylebench_jax.training.losses import balanced_class_weights, weighted_cross_entropy
from stylebench_jax.training.step import make_optimizer


class CrossEncoder(nn.Module):
    config: EncoderConfig
    dropout_rate: float = 0.1
    attention_dropout: float = 0.0  # encoders.bert: dropout of the attention probabilities

    @nn.compact
    def __call__(self, input_ids, attention_mask, token_type_ids=None, deterministic: bool = True):
        hidden = BertEncoder(self.config, dropout_rate=self.dropout_rate,
                             attention_dropout_rate=self.attention_dropout, name="encoder")(
            input_ids, attention_mask, token_type_ids, deterministic)
        cls = Dropout(self.dropout_rate)(hidden[:, 0], deterministic=deterministic)
        return nn.Dense(2, name="classifier", kernel_init=nn.with_logical_partitioning(
            nn.initializers.normal(0.02), ("embed", None)))(cls)


def pair_inputs(tokenizer, first: list[str], second: list[str], max_length: int, two_segments: bool):
    """``(ids, mask, types)`` ``[P, max_length]`` int32 of ``prefix a suffix b suffix`` pairs."""
    budget = (max_length - len(tokenizer.prefix) - 2 * len(tokenizer.suffix)) // 2
    a_ids, b_ids = tokenizer.content_ids(first), tokenizer.content_ids(second)
    ids = np.full((len(first), max_length), tokenizer.pad_id, np.int32)
    mask = np.zeros_like(ids)
    types = np.zeros_like(ids)
    for i, (a, b) in enumerate(zip(a_ids, b_ids)):
        left = [*tokenizer.prefix, *a[:budget], *tokenizer.suffix]
        right = [*b[:budget], *tokenizer.suffix]
        row = left + right
        ids[i, :len(row)] = row
        mask[i, :len(row)] = 1
        if two_segments:
            types[i, len(left):len(row)] = 1
    return ids, mask, types


def _digest(pairs: PairSet) -> str:
    digest = hashlib.sha256()
    for i, j, label in zip(pairs.first, pairs.second, pairs.labels):
        digest.update(pairs.table.texts[i].encode("utf-8", "surrogatepass") + b"\0")
        digest.update(pairs.table.texts[j].encode("utf-8", "surrogatepass") + b"\0" + bytes([int(label)]))
    return digest.hexdigest()


def teacher_logits_for(config: TrainConfig, base: EncoderFiles, data: TrainingData, run_dir: Path, *,
                       mesh: Mesh, progress: bool = True) -> np.ndarray:
    """``[P, 2]`` float32 teacher logits for the training pairs (trained now, or reused)."""
    if data.source != "pairs":
        raise UserInputError("teacher.mode: distillation needs labelled pairs (data.pairs), not data.groups")
    pairs = data.train
    digest = _digest(pairs)
    auto = config.teacher.mode == "auto"
    folder = run_dir / "teacher" if auto else Path(config.teacher.mode)
    settings = _teacher_settings(config)
    done = read_json_file(folder / "done.json")
    # the run's own teacher is trained again when it was trained with other settings (a run stopped
    # before its first checkpoint, then started with another teacher.steps or seed, reused the old one)
    if done is not None and not (auto and done.get("settings") != settings):
        if done.get("pairs_digest") != digest:
            raise UserInputError(f"{folder}: its teacher logits belong to other training pairs; use "
                                 "teacher.mode=auto or a teacher trained on this data")
        return np.load(folder / "logits.npy")
    if not auto:
        raise UserInputError(f"teacher.mode: {folder} holds no trained teacher (done.json)")
    logits = _train_teacher(config, base, pairs, mesh, progress)
    save_npy_atomic(folder / "logits.npy", logits)
    write_text_atomic(folder / "done.json", json.dumps({"pairs_digest": digest, "steps": config.teacher.steps,
                                                        "pairs": len(pairs), "settings": settings},
                                                       indent=1) + "\n")
    return logits


def _teacher_settings(config: TrainConfig) -> dict:
    """What the teacher's logits depend on besides the pairs: its own section, the seed, the base
    model and the settings it shares with the student."""
    m, loss, optim = config.model, config.loss, config.optim
    return {"teacher": config_to_dict(config.teacher), "seed": config.seed, "base": str(m.base),
            "max_length": m.max_length, "dropout": m.dropout, "attention_dropout": m.attention_dropout,
            "class_weights": loss.class_weights, "label_smoothing": loss.label_smoothing,
            "clip_norm": optim.clip_norm, "warmup": optim.warmup, "weight_decay": optim.weight_decay}


def _train_teacher(config: TrainConfig, base: EncoderFiles, pairs: PairSet, mesh: Mesh, progress: bool):
    tc = config.teacher
    model = CrossEncoder(base.config, dropout_rate=config.model.dropout,
                         attention_dropout=config.model.attention_dropout)
    params = init_params(model, jax.random.key(config.seed + 1), mesh, skip=(("encoder",),))
    shardings = param_shardings(model, mesh)
    params = {**params, "encoder": jax.device_put(base.host_params["encoder"], shardings["encoder"])}
    optim = OptimConfig(learning_rate=tc.learning_rate, weight_decay=config.optim.weight_decay,
                        warmup=config.optim.warmup, clip_norm=config.optim.clip_norm)
    optimizer = make_optimizer(optim, tc.steps)
    opt_state = optimizer.init(params)
    texts = pairs.table.texts
    first, second = [texts[i] for i in pairs.first], [texts[i] for i in pairs.second]
    two = base.config.type_vocab_size > 1
    ids, mask, types = pair_inputs(base.tokenizer, first, second, config.model.max_length, two)
    # as the bi-encoder's cross-entropy: balanced class weights only with loss.class_weights
    weights = np.asarray(balanced_class_weights(pairs.labels, enabled=config.loss.class_weights), np.float32)
    smoothing = config.loss.label_smoothing

    @functools.partial(jax.jit, donate_argnums=(0, 1))
    def step(params, opt_state, ids, mask, types, labels, key):
        def loss_fn(p):
            logits = model.apply({"params": p}, ids, mask, types, False, rngs={"dropout": key})
            total, count = weighted_cross_entropy(logits, labels, jnp.ones(labels.shape, jnp.float32),
                                                  class_weights=jnp.asarray(weights),
                                                  label_smoothing=smoothing)
            return total / count
        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    rng = np.random.default_rng([config.seed, 7])
    key = jax.random.key(config.seed + 7)
    size = tc.batch_size
    bar = progress_bar(total=tc.steps, desc="teacher", unit="step", enabled=progress)
    order = np.zeros(0, np.int64)
    for s in range(tc.steps):
        if order.size < size:
            order = np.concatenate([order, rng.permutation(len(pairs))])
        rows, order = order[:size], order[size:]
        placed = [jax.device_put(a[rows], batch_sharding(mesh, 2)) for a in (ids, mask, types)]
        labels = jax.device_put(pairs.labels[rows], batch_sharding(mesh, 1))
        params, opt_state, _ = step(params, opt_state, *placed, labels, jax.random.fold_in(key, s))
        bar.update(1)
    bar.close()
    forward = jax.jit(lambda p, i, m, t: model.apply({"params": p}, i, m, t))
    swapped = pair_inputs(base.tokenizer, second, first, config.model.max_length, two)
    out = np.zeros((len(pairs), 2), np.float32)
    n_data = int(mesh.shape["data"])
    chunk = max(n_data, size // n_data * n_data)
    for start in range(0, len(pairs), chunk):
        rows = np.arange(start, min(start + chunk, len(pairs)))
        pad = np.concatenate([rows, np.zeros(chunk - rows.size, np.int64)])
        for arrays in ((ids, mask, types), swapped):
            placed = [jax.device_put(a[pad], batch_sharding(mesh, 2)) for a in arrays]
            out[rows] += fetch(forward(params, *placed))[: rows.size] / 2.0
    return out
