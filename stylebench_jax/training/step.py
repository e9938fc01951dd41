"""The pure train step of the bi-encoder, data-parallel over the mesh's ``data`` axis.

``train_step(state, batch, rng, *, model, spec, optimizer)`` is a pure function of its inputs; the
trainer binds the keywords with ``functools.partial`` and wraps it once with :func:`compile_step`
(``jax.shard_map`` over ``data``, manual only on that axis so parameters may also be sharded over
``model`` by the rules table, then ``jax.jit`` with the state donated). This is the pmap'd trainer
of the design written the way JAX implements pmap now: every device runs the step on its shard of
the global batch, and gradients are averaged with ``lax.pmean``.

**In-batch negatives across all devices.** Each device embeds its ``b`` pairs; the L2-normalised
embeddings are ``lax.all_gather``-ed over ``data`` so that the contrastive candidates are the whole
global batch: ``Z = [text1 of pairs 0..B-1 (device order); text2 of pairs 0..B-1]``, ``B = b D``.
Device ``d``'s local text1 row ``r`` is row ``d b + r`` of ``Z``, its text2 row ``r`` is row
``B + d b + r`` (:func:`anchor_rows`; a test pins this layout). The transpose of ``all_gather`` is a
reduce-scatter, so each device's embeddings receive the gradient of every device's loss.

**Normalisation.** Every loss part is a sum over the local items divided by the *global* count of
items (``lax.psum``), times ``D``; ``lax.pmean`` of these per-device values and of their gradients
gives exactly the global mean, so 1 device and 8 devices agree for the same global batch.

**Gradient caching** (Gao et al. 2021, "GradCache"; ``spec.embed_chunk``): embed the local texts in
chunks without gradients, differentiate the loss with respect to the embeddings on the whole batch,
then re-run each chunk with gradients (``jax.vjp``) and back-propagate its slice of the embedding
gradient. Each chunk uses the same dropout key in both runs (``fold_in(key, chunk)``), so the
result equals plain back-propagation through the same chunks; activation memory is one chunk's.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import flax
import jax
import jax.numpy as jnp
import optax
from jax import lax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from stylebench_jax.parallel import replicated
from stylebench_jax.training.config import LossConfig, OptimConfig
from stylebench_jax.training.losses import (
    contradicted_texts,
    distillation_kl,
    info_nce,
    supcon,
    weighted_cross_entropy,
)
from stylebench_jax.training.model import BiEncoder, clamp_temperature

AXIS = "data"
HEAD_KEY = 1 << 20  # fold_in index of the heads' dropout key (chunks use 0, 1, 2, ...)


@flax.struct.dataclass
class TrainState:
    step: jax.Array  # int32: train steps (micro-batches) done
    params: Any
    opt_state: Any


@dataclasses.dataclass(frozen=True)
class StepSpec:
    """Static description of a step: loss settings, schedule length, mesh size, chunking."""

    loss: LossConfig
    total_steps: int
    n_data: int
    class_weights: tuple[float, float] = (1.0, 1.0)
    embed_chunk: int | None = None  # texts per embedding chunk (gradient caching when set)
    use_ce: bool = True
    use_topics: bool = True
    use_teacher: bool = False
    train_dropout: bool = True


def decay_mask(params) -> Any:
    """AdamW weight decay on matrices (kernels, embeddings, ArcFace centres), not on biases, norms or
    the temperature (as BERT / sentence-transformers training does)."""
    def decide(path, _):
        name = getattr(path[-1], "key", str(path[-1]))
        return name in ("kernel", "embedding", "centres")
    return jax.tree_util.tree_map_with_path(decide, params)


def learning_rate_schedule(config: OptimConfig, updates: int, peak: float | None = None) -> optax.Schedule:
    """Linear warm-up over ``warmup`` of the updates, then linear decay to 0 (seed 003 §4.4);
    ``peak`` defaults to ``config.learning_rate``."""
    peak = config.learning_rate if peak is None else peak
    warm = max(int(round(config.warmup * updates)), 1)
    return optax.join_schedules([optax.linear_schedule(0.0, peak, warm),
                                 optax.linear_schedule(peak, 0.0, max(updates - warm, 1))],
                                [warm])


def parameter_groups(params) -> Any:
    """``"encoder"`` for the pretrained transformer (``embedder/encoder/...``), ``"heads"`` for every
    parameter the run initialises itself (pooling, projection, classifier, adversary, temperature)."""
    def group(path, _):
        names = [getattr(k, "key", str(k)) for k in path]
        return "encoder" if names[:2] == ["embedder", "encoder"] else "heads"
    return jax.tree_util.tree_map_with_path(group, params)


def make_optimizer(config: OptimConfig, total_steps: int) -> optax.GradientTransformation:
    """AdamW (weight decay on matrices), global-norm clipping, gradient accumulation over
    ``config.accumulation`` steps (``optax.MultiSteps``: one update per that many steps). The
    accumulated gradient is the mean of the micro-batches' gradients; each micro-batch's contrastive
    loss sees only its own in-batch negatives, so accumulation is not a larger contrastive batch
    (``trainer.batch_size`` is; ``trainer.embed_chunk`` bounds its memory).

    With ``config.head_learning_rate`` set, the freshly initialised heads (:func:`parameter_groups`)
    follow the same warm-up/decay shape up to that peak while the pretrained encoder keeps
    ``learning_rate``; clipping stays global over all gradients."""
    updates = max(total_steps // config.accumulation, 1)

    def adamw(peak):
        return optax.adamw(learning_rate_schedule(config, updates, peak), weight_decay=config.weight_decay,
                           mask=decay_mask)

    if config.head_learning_rate is None:
        update = adamw(config.learning_rate)
    else:
        update = optax.multi_transform({"encoder": adamw(config.learning_rate),
                                        "heads": adamw(config.head_learning_rate)}, parameter_groups)
    tx = optax.chain(optax.clip_by_global_norm(config.clip_norm), update)
    return optax.MultiSteps(tx, every_k_schedule=config.accumulation) if config.accumulation > 1 else tx


def anchor_rows(n_local: int, n_data: int, device: jax.Array) -> jax.Array:
    """Rows in the gathered candidates ``Z`` of this device's ``[text1; text2]`` (module docstring)."""
    local = jnp.arange(n_local)
    total = n_local * n_data
    return jnp.concatenate([device * n_local + local, total + device * n_local + local])


def grl_weight(loss: LossConfig, step: jax.Array, total_steps: int) -> jax.Array:
    """Adversary weight: ramps linearly from 0 to ``adversary_weight`` over the first
    ``adversary_warmup`` of the steps, then constant; ``adversary_warmup: 0`` is constant from the
    first step (seed 003 §4.2; the seed calls the scale learnable, here it is this fixed schedule).

    It multiplies the adversary's loss, behind a gradient reversal of fixed scale 1: the encoder gets
    ``-lambda * grad`` as in Ganin & Lempitsky's GRL, and the topic head's own gradient is scaled by
    ``lambda`` too (GRL scales only the reversed one); AdamW's per-parameter normalisation largely
    undoes a constant scale on the head, but during the ramp the head starts slowly."""
    ramp = loss.adversary_warmup * total_steps
    if ramp <= 0:
        return jnp.full((), loss.adversary_weight, jnp.float32)
    return loss.adversary_weight * jnp.minimum(step.astype(jnp.float32) / max(ramp, 1.0), 1.0)


def _normalize(z):
    return z / jnp.maximum(jnp.linalg.norm(z, axis=-1, keepdims=True), 1e-12)


def _gather(x):
    return lax.all_gather(x, AXIS, tiled=True)


def _chunks(batch, chunk: int | None):
    """Local texts ``[2b, L]`` (text1 rows, then text2 rows) as ``[n_chunks, chunk, L]``."""
    ids = jnp.concatenate([batch["ids1"], batch["ids2"]])
    mask = jnp.concatenate([batch["mask1"], batch["mask2"]])
    size = chunk or ids.shape[0]
    if ids.shape[0] % size:
        raise ValueError(f"trainer.embed_chunk: {size} must divide the {ids.shape[0]} texts per device")
    n = ids.shape[0] // size
    return ids.reshape(n, size, -1), mask.reshape(n, size, -1)


def _embed_chunk(params, ids, mask, key, *, model, deterministic):
    rngs = None if deterministic else {"dropout": key}
    return model.apply({"params": params}, ids, mask, deterministic, method=BiEncoder.embed, rngs=rngs)


def embed_local(params, batch, key, *, model: BiEncoder, spec: StepSpec):
    """Raw embeddings ``[2b, H]`` of the local texts, chunk by chunk (keys ``fold_in(key, c)``)."""
    ids, mask = _chunks(batch, spec.embed_chunk)

    def one(c):
        return _embed_chunk(params, ids[c], mask[c], jax.random.fold_in(key, c), model=model,
                            deterministic=not spec.train_dropout)

    if ids.shape[0] == 1:
        return one(0)
    width = model.projection_dim or model.config.hidden_size
    return lax.map(one, jnp.arange(ids.shape[0])).reshape(-1, width)


def local_loss(params, z, batch, key, step, *, model: BiEncoder, spec: StepSpec):
    """This device's share of the global loss (module docstring) from raw embeddings ``z [2b, H]``;
    returns ``(loss_d, parts)`` with every part already averaged over the global batch."""
    b = batch["labels"].shape[0]
    z1, z2 = z[:b], z[b:]
    valid = batch["valid"]
    device = lax.axis_index(AXIS)
    loss_cfg = spec.loss
    variables = {"params": params}
    sums, counts = {}, {}
    # Contrastive part over the gathered global batch.
    n1, n2 = _normalize(z1), _normalize(z2)
    temperature = model.apply(variables, method=BiEncoder.temperature)
    g1, g2 = _gather(n1), _gather(n2)
    groups1, groups2 = _gather(batch["groups1"]), _gather(batch["groups2"])
    valid_all = _gather(valid)
    # a text under two groups in this batch (losses.contradicted_texts) is left out of the contrastive part
    n_global = groups1.shape[0]
    clear = ~contradicted_texts(jnp.concatenate([_gather(batch["texts1"]), _gather(batch["texts2"])]),
                                jnp.concatenate([groups1, groups2]))
    clear1, clear2 = clear[:n_global], clear[n_global:]
    if loss_cfg.contrastive == "supcon":
        candidates = jnp.concatenate([g1, g2])
        rows = anchor_rows(b, spec.n_data, device)
        sums["contrastive"], counts["contrastive"] = supcon(
            jnp.concatenate([n1, n2]), jnp.concatenate([batch["groups1"], batch["groups2"]]),
            rows, candidates, jnp.concatenate([groups1, groups2]), temperature,
            anchor_valid=jnp.concatenate([valid, valid]) & clear[rows],
            candidate_valid=jnp.concatenate([valid_all, valid_all]) & clear)
    else:  # bidirectional InfoNCE, queries = the positive pairs' sides; keys = every valid row of the
        # global batch, the texts of negative (label 0) pairs included (more keys than
        # sentence-transformers' symmetric MNRL on (anchor, positive) pairs), same-group keys masked
        own = device * b + jnp.arange(b)
        positive = valid & (batch["labels"] == 1) & clear1[own] & clear2[own]
        s12, c12 = info_nce(n1, batch["groups1"], own, g2, groups2, temperature, query_valid=positive,
                            key_valid=valid_all & clear2)
        s21, c21 = info_nce(n2, batch["groups2"], own, g1, groups1, temperature, query_valid=positive,
                            key_valid=valid_all & clear1)
        sums["contrastive"], counts["contrastive"] = s12 + s21, c12 + c21
    head_key = jax.random.fold_in(key, HEAD_KEY)
    deterministic = not spec.train_dropout
    if spec.use_ce or spec.use_teacher:
        logits = model.apply(variables, z1, z2, batch["feats1"], batch["feats2"], batch["labels"],
                             deterministic, method=BiEncoder.classify,
                             rngs=None if deterministic else {"dropout": head_key})
    if spec.use_ce:
        sums["ce"], counts["ce"] = weighted_cross_entropy(
            logits, batch["labels"], valid, class_weights=jnp.asarray(spec.class_weights, jnp.float32),
            label_smoothing=loss_cfg.label_smoothing)
        plain = logits
        if getattr(model, "classifier", None) == "arcface":
            # The margin is a training penalty on the target logit: accuracy reads the plain cosines
            # (same dropout key, head only), as the evaluation does.
            plain = model.apply(variables, z1, z2, batch["feats1"], batch["feats2"], None,
                                 deterministic, method=BiEncoder.classify,
                                 rngs=None if deterministic else {"dropout": head_key})
        predicted = jnp.argmax(plain, -1)
        sums["accuracy"], counts["accuracy"] = ((predicted == batch["labels"]) & valid).sum(), valid.sum()
    if spec.use_teacher:
        sums["distillation"], counts["distillation"] = distillation_kl(
            logits, batch["teacher"], valid.astype(jnp.float32),
            temperature=loss_cfg.distillation_temperature)
    if spec.use_topics:
        topics = jnp.concatenate([batch["topics1"], batch["topics2"]])
        known = (topics >= 0) & jnp.concatenate([valid, valid])
        topic_logits = model.apply(variables, z, jnp.float32(1.0), method=BiEncoder.topics)
        sums["adversary"], counts["adversary"] = weighted_cross_entropy(
            topic_logits, jnp.maximum(topics, 0), known.astype(jnp.float32))
        sums["adversary_accuracy"] = ((jnp.argmax(topic_logits, -1) == topics) & known).sum()
        counts["adversary_accuracy"] = known.sum()
    totals = lax.psum({k: jnp.asarray(v, jnp.float32) for k, v in counts.items()}, AXIS)
    parts = {k: sums[k] / jnp.maximum(totals[k], 1.0) * spec.n_data for k in sums}
    lam = grl_weight(loss_cfg, step, spec.total_steps)
    weights = {"ce": loss_cfg.ce_weight, "contrastive": loss_cfg.contrastive_weight, "adversary": lam,
               "distillation": loss_cfg.distillation_weight}
    loss = sum(weights[k] * parts[k] for k in parts if k in weights)
    return loss, {**parts, "temperature": temperature, "grl_weight": lam}


def _varying(tree):
    return jax.tree.map(lambda x: lax.pcast(x, (AXIS,), to="varying"), tree)


def loss_and_grads(params, batch, key, step, *, model: BiEncoder, spec: StepSpec):
    """``(loss_d, parts, grads_d)`` of this device, by plain back-propagation or, with
    ``spec.embed_chunk``, by gradient caching (module docstring). Both use the same chunks and keys."""
    params = _varying(params)
    if spec.embed_chunk is None:
        def full(p):
            return local_loss(p, embed_local(p, batch, key, model=model, spec=spec), batch, key, step,
                              model=model, spec=spec)
        (loss, parts), grads = jax.value_and_grad(full, has_aux=True)(params)
        return loss, parts, grads
    z = lax.stop_gradient(embed_local(params, batch, key, model=model, spec=spec))
    (loss, parts), (grads, dz) = jax.value_and_grad(
        functools.partial(local_loss, batch=batch, key=key, step=step, model=model, spec=spec),
        argnums=(0, 1), has_aux=True)(params, z)
    ids, mask = _chunks(batch, spec.embed_chunk)
    dz = dz.reshape(ids.shape[0], ids.shape[1], -1)

    def replay(acc, c):
        _, pull = jax.vjp(lambda p: _embed_chunk(p, ids[c], mask[c], jax.random.fold_in(key, c), model=model,
                                                 deterministic=not spec.train_dropout), params)
        (g,) = pull(dz[c])
        return jax.tree.map(jnp.add, acc, g), None

    grads, _ = lax.scan(replay, grads, jnp.arange(ids.shape[0]))
    return loss, parts, grads


def train_step(state: TrainState, batch: dict, rng: jax.Array, *, model: BiEncoder, spec: StepSpec,
               optimizer: optax.GradientTransformation):
    """One optimisation step on this device's shard of the global batch (run under
    :func:`compile_step`). Returns the new state and metrics averaged over the global batch."""
    key = jax.random.fold_in(jax.random.fold_in(rng, state.step), lax.axis_index(AXIS))
    loss, parts, grads = loss_and_grads(state.params, batch, key, state.step, model=model, spec=spec)
    grads = lax.pmean(grads, AXIS)
    loss, parts = lax.pmean((loss, parts), AXIS)
    updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
    params = clamp_temperature(optax.apply_updates(state.params, updates))
    metrics = {"loss": loss, **parts, "grad_norm": optax.tree.norm(grads)}
    return TrainState(state.step + 1, params, opt_state), metrics


def compile_step(step_fn, mesh: Mesh, state_shardings=None):
    """``jit(shard_map(step_fn))``: batch sharded over ``data``, state and rng replicated over
    ``data`` (and laid out over ``model`` by ``state_shardings`` if given), state donated."""
    mapped = jax.shard_map(step_fn, mesh=mesh, in_specs=(P(), P(AXIS), P()), out_specs=(P(), P()),
                           axis_names=frozenset({AXIS}), check_vma=True)
    return jax.jit(mapped, donate_argnums=(0,),
                   out_shardings=(state_shardings, None) if state_shardings is not None else None)


def init_state(params, optimizer: optax.GradientTransformation, mesh: Mesh) -> TrainState:
    """A fresh state with every leaf on ``mesh``: the optimizer's moments follow the (sharded)
    parameters; its counters and the step, fresh scalars on the default device, are replicated."""
    state = TrainState(jnp.zeros((), jnp.int32), params, optimizer.init(params))

    def on_mesh(x):
        sharding = getattr(x, "sharding", None)
        if isinstance(sharding, NamedSharding) and sharding.mesh == mesh:
            return x
        return jax.device_put(x, replicated(mesh))

    return jax.tree.map(on_mesh, state)


