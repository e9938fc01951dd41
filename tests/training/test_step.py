"""The data-parallel train step: 8 devices == 1 device for one global batch, the gathered layout,
gradient caching == plain back-propagation with dropout on, symmetric scores, defined losses."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from stylebench_jax.kernels import cpu_attention
from stylebench_jax.parallel import make_mesh
from stylebench_jax.training.config import LossConfig, OptimConfig
from stylebench_jax.training.losses import contradicted_texts, supcon, weighted_cross_entropy
from stylebench_jax.training.model import BiEncoder
from stylebench_jax.training.step import (
    StepSpec,
    anchor_rows,
    compile_step,
    init_state,
    loss_and_grads,
    make_optimizer,
    train_step,
)
from tests.helpers.tiny_models import tiny_config

L = 12
MISSING = cpu_attention.missing_prerequisite()
# "fused": attention in the C++ kernels (forward and backward) as the trainer runs it on CPU: two
# heads of 16 (the kernel's width), called per device inside the step's shard_map
ATTENTION = ["xla", pytest.param("fused", marks=pytest.mark.skipif(
    MISSING is not None, reason=f"fused CPU attention cannot run: {MISSING}"))]


def tiny_model(attention="xla", **kw):
    if attention == "fused":
        assert cpu_attention.unavailable() is None
        return BiEncoder(tiny_config("bert", num_heads=2), fused_attention=cpu_attention.LOCAL, **kw)
    return BiEncoder(tiny_config("bert"), **kw)


def make_batch(b, seed=0, n_groups=5):
    rng = np.random.default_rng(seed)
    vocab = tiny_config("bert").vocab_size
    lengths1, lengths2 = rng.integers(3, L + 1, b), rng.integers(3, L + 1, b)
    ids1 = rng.integers(5, vocab, (b, L)).astype(np.int32)
    ids2 = rng.integers(5, vocab, (b, L)).astype(np.int32)
    mask1 = (np.arange(L)[None] < lengths1[:, None]).astype(np.int32)
    mask2 = (np.arange(L)[None] < lengths2[:, None]).astype(np.int32)
    g1 = rng.integers(0, n_groups, b).astype(np.int32)
    labels = rng.integers(0, 2, b).astype(np.int32)
    g2 = np.where(labels == 1, g1, (g1 + 1 + rng.integers(0, n_groups - 1, b)) % n_groups).astype(np.int32)
    return {"ids1": ids1, "mask1": mask1, "ids2": ids2, "mask2": mask2, "labels": labels,
            "groups1": g1, "groups2": g2, "texts1": np.arange(b, dtype=np.int32),
            "texts2": np.arange(b, 2 * b, dtype=np.int32), "topics1": rng.integers(-1, 5, b).astype(np.int32),
            "topics2": rng.integers(0, 5, b).astype(np.int32),
            "feats1": rng.normal(size=(b, 3)).astype(np.float32),
            "feats2": rng.normal(size=(b, 3)).astype(np.float32),
            "same_topic": np.zeros(b, bool), "valid": np.ones(b, bool)}


def init(model, b=8):
    batch = make_batch(b)
    params = jax.jit(lambda k: model.init(k, batch["ids1"], batch["mask1"])["params"])(jax.random.key(0))
    return jax.tree.map(np.asarray, params)


@pytest.mark.parametrize("attention", ATTENTION)
@pytest.mark.parametrize("contrastive", ["supcon", "infonce"])
def test_eight_devices_equal_one_device(contrastive, attention):
    model = tiny_model(attention, dropout_rate=0.0, head_dropout=0.0)
    params = init(model)
    batch = make_batch(16, seed=1)
    loss = LossConfig(contrastive=contrastive)
    results = []
    for spec_mesh in ("data=1", "data=8"):
        mesh = make_mesh(spec_mesh, jax.devices()[:1] if spec_mesh == "data=1" else None)
        spec = StepSpec(loss, total_steps=10, n_data=mesh.shape["data"], train_dropout=False)
        optimizer = make_optimizer(OptimConfig(learning_rate=1e-3), 10)
        step = compile_step(functools.partial(train_step, model=model, spec=spec, optimizer=optimizer), mesh)
        state, metrics = step(init_state(params, optimizer, mesh), batch, jax.random.key(5))
        results.append((jax.tree.map(np.asarray, state.params), {k: float(v) for k, v in metrics.items()}))
    (p1, m1), (p8, m8) = results
    for key in m1:
        assert m8[key] == pytest.approx(m1[key], rel=1e-5, abs=1e-6), key
    assert m1["contrastive"] > 0 and m1["ce"] > 0 and m1["adversary"] > 0
    flat1, flat8 = jax.tree_util.tree_leaves(p1), jax.tree_util.tree_leaves(p8)
    for a, b in zip(flat1, flat8):
        np.testing.assert_allclose(b, a, atol=1e-5, rtol=1e-5)


def test_eight_devices_equal_one_device_with_the_arcface_margin_on():
    """The margin acts only where the step is not deterministic (train_dropout), which the test above
    leaves off; here every dropout rate is 0, so the margin is the only difference, and 8 devices
    must still give 1 device's losses and parameters."""
    model = tiny_model(dropout_rate=0.0, head_dropout=0.0, attention_dropout=0.0)
    params = init(model)
    batch = make_batch(16, seed=1)
    results = {}
    for spec_mesh, train_dropout in (("data=1", True), ("data=8", True), ("data=1", False)):
        mesh = make_mesh(spec_mesh, jax.devices()[:1] if spec_mesh == "data=1" else None)
        spec = StepSpec(LossConfig(), total_steps=10, n_data=mesh.shape["data"], train_dropout=train_dropout)
        optimizer = make_optimizer(OptimConfig(learning_rate=1e-3), 10)
        step = compile_step(functools.partial(train_step, model=model, spec=spec, optimizer=optimizer), mesh)
        state, metrics = step(init_state(params, optimizer, mesh), batch, jax.random.key(5))
        results[spec_mesh, train_dropout] = (jax.tree.map(np.asarray, state.params),
                                             {k: float(v) for k, v in metrics.items()})
    (p1, m1), (p8, m8) = results["data=1", True], results["data=8", True]
    for key in m1:
        assert m8[key] == pytest.approx(m1[key], rel=1e-5, abs=1e-6), key
    for a, b in zip(jax.tree_util.tree_leaves(p1), jax.tree_util.tree_leaves(p8)):
        np.testing.assert_allclose(b, a, atol=1e-5, rtol=1e-5)
    assert m1["ce"] > results["data=1", False][1]["ce"] + 1e-3  # the margin was on: a harder target


def test_gathered_layout_pins_positives():
    # 2 devices x 2 pairs: device 1's text2 row 0 is global row B + 1*b + 0 = 4 + 2 = 6.
    rows = anchor_rows(2, 2, jnp.int32(1))
    assert rows.tolist() == [2, 3, 6, 7]
    # A SupCon anchor's positives are exactly the same-group rows of the gathered batch.
    z = jnp.eye(8).at[7].set(jnp.eye(8)[6])  # rows 6 and 7: the same text
    groups = jnp.array([0, 1, 2, 3, 0, 1, 9, 9])
    total, count = supcon(z[rows], groups[rows], rows, z, groups, jnp.float32(1.0))
    # anchors 2 (group 2: no positive) and 3 (group 3: none) do not count; rows 6 and 7 pair up
    assert float(count) == 2.0
    expected = -np.log(np.e / (np.e + 6.0))  # its positive at cosine 1, the six others at 0
    assert float(total) == pytest.approx(2 * expected, rel=1e-6)


def test_contradicted_texts_are_those_under_two_groups():
    codes = jnp.array([0, 1, 0, 2, 1, 3, 0])
    groups = jnp.array([5, 6, 7, 8, 6, 9, 5])
    # text 0 under groups 5 and 7 (rows 0, 2, 6); text 1 twice under group 6 (a positive, kept)
    assert contradicted_texts(codes, groups).tolist() == [True, False, True, False, False, False, True]


def _reference_contrastive(z, batch, temperature, kind, excluded):
    """NumPy SupCon (mean over anchors with a positive) or bidirectional InfoNCE over the global batch
    ``Z = [z1; z2]``, with the rows ``excluded`` taking no part, written from the definitions."""
    b = len(batch["labels"])
    z = z / np.linalg.norm(z, axis=1, keepdims=True)
    groups = np.concatenate([batch["groups1"], batch["groups2"]])
    logits = z @ z.T / temperature
    terms = []
    if kind == "supcon":
        for i in np.flatnonzero(~excluded):
            others = [j for j in range(2 * b) if j != i and not excluded[j]]
            positives = [j for j in others if groups[j] == groups[i]]
            if positives:
                log_norm = np.log(np.exp(logits[i, others]).sum())
                terms.append(-np.mean([logits[i, p] - log_norm for p in positives]))
        return float(np.mean(terms))
    for i in range(b):
        if batch["labels"][i] != 1 or excluded[i] or excluded[b + i]:
            continue
        for query, target, keys in ((i, b + i, range(b, 2 * b)), (b + i, i, range(b))):
            allowed = [k for k in keys if not excluded[k] and (k == target or groups[k] != groups[query])]
            terms.append(np.log(np.exp(logits[query, allowed]).sum()) - logits[query, target])
    return float(np.mean(terms))


@pytest.mark.parametrize("contrastive", ["supcon", "infonce"])
def test_a_text_under_two_groups_takes_no_part_in_the_contrastive_loss(contrastive):
    """A passage found in two books is one text with two groups: in one batch it was a negative of
    itself (cosine 1, a target no encoder meets). Both copies now leave that batch's contrastive
    loss; the step's value matches a NumPy reference on its embeddings, on 1 and 8 devices."""
    from jax import lax

    from stylebench_jax.training import step as step_module

    model = tiny_model(dropout_rate=0.0, head_dropout=0.0)
    params = init(model)
    batch = make_batch(16, seed=3)
    batch["labels"][[2, 5, 11]] = 1
    batch["groups2"][[2, 5, 11]] = batch["groups1"][[2, 5, 11]]
    # pair 5's second text is pair 11's first text under another group; pair 2's second text repeats
    # pair 2's first text under its own group (a positive: kept)
    batch["groups1"][11] = (batch["groups1"][5] + 1) % 5
    batch["groups2"][11] = batch["groups1"][11]
    batch["texts2"][5] = batch["texts1"][11]
    batch["ids2"][5], batch["mask2"][5] = batch["ids1"][11], batch["mask1"][11]
    batch["texts2"][2] = batch["texts1"][2]
    batch["ids2"][2], batch["mask2"][2] = batch["ids1"][2], batch["mask1"][2]
    excluded = np.zeros(32, bool)
    excluded[[16 + 5, 11]] = True
    spec1 = StepSpec(LossConfig(contrastive=contrastive), total_steps=10, n_data=1, train_dropout=False)
    z = np.asarray(jax.jit(lambda p, bt: step_module.embed_local(p, bt, jax.random.key(0), model=model,
                                                                 spec=spec1))(params, batch), np.float64)
    temperature = float(model.apply({"params": params}, method=BiEncoder.temperature))
    expected = _reference_contrastive(z, batch, temperature, contrastive, excluded)
    kept_all = _reference_contrastive(z, batch, temperature, contrastive, np.zeros(32, bool))
    assert abs(expected - kept_all) > 1e-3  # the exclusion changes the value
    P = jax.sharding.PartitionSpec
    for n in (1, 8):
        spec = StepSpec(LossConfig(contrastive=contrastive), total_steps=10, n_data=n, train_dropout=False)

        def body(p, bt, k, spec=spec):
            z = step_module.embed_local(p, bt, k, model=model, spec=spec)
            parts = step_module.local_loss(p, z, bt, k, jnp.int32(0), model=model, spec=spec)[1]
            return lax.pmean(parts["contrastive"], "data")

        mesh = make_mesh(f"data={n}", jax.devices()[:n])
        fn = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P(), P("data"), P()), out_specs=P(),
                                   axis_names=frozenset({"data"})))
        assert float(fn(params, batch, jax.random.key(0))) == pytest.approx(expected, rel=1e-5), n


def _torch_cross_entropy(logits, labels, weights, eps):
    """PyTorch's F.cross_entropy(weight=w, label_smoothing=eps) (mean), as its docs define it: the
    smoothing term weights each class's log-probability by that class's weight; both terms are
    divided by the summed weights of the targets."""
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    denominator = weights[labels].sum()
    nll = -(weights[labels] * logp[np.arange(len(labels)), labels]).sum() / denominator
    smooth = -(logp * weights[None, :]).sum() / denominator
    return (1 - eps) * nll + eps / logits.shape[-1] * smooth


@pytest.mark.parametrize("eps", [0.0, 0.05, 0.3])
def test_weighted_cross_entropy_is_pytorchs(eps):
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(7, 2))
    labels = rng.integers(0, 2, 7)
    weights = np.array([0.75, 1.5])
    valid = np.ones(7)
    valid[3] = 0  # padding: as if the row were not there
    keep = valid > 0
    total, count = weighted_cross_entropy(jnp.asarray(logits), jnp.asarray(labels), jnp.asarray(valid),
                                          class_weights=jnp.asarray(weights), label_smoothing=eps)
    expected = _torch_cross_entropy(logits[keep], labels[keep], weights, eps)
    assert float(total / count) == pytest.approx(expected, rel=1e-6)


def test_no_positive_pair_gives_a_defined_loss():
    z = jnp.eye(4)
    total, count = supcon(z, jnp.arange(4), jnp.arange(4), z, jnp.arange(4), jnp.float32(0.1))
    assert float(total) == 0.0 and float(count) == 0.0


@pytest.mark.parametrize("attention", ATTENTION)
def test_gradient_caching_equals_plain_backprop_with_dropout(attention):
    """Hidden, attention-probability and head dropout on: the re-run chunks replay the same masks."""
    model = tiny_model(attention, dropout_rate=0.3, head_dropout=0.2, attention_dropout=0.2)
    params = init(model)
    batch = make_batch(8, seed=2)
    mesh = make_mesh("data=2", jax.devices()[:2])
    out = {}
    spec = StepSpec(LossConfig(), total_steps=10, n_data=2, embed_chunk=4, train_dropout=True)
    for cached in (False, True):
        out[cached] = _grads(model, params, batch, spec, mesh, cached)
    (l0, g0), (l1, g1) = out[False], out[True]
    assert l1 == pytest.approx(l0, rel=1e-6)
    for a, b in zip(jax.tree_util.tree_leaves(g0), jax.tree_util.tree_leaves(g1)):
        np.testing.assert_allclose(b, a, atol=2e-6, rtol=1e-4)
    # dropout really was on: a deterministic run differs
    spec = StepSpec(LossConfig(), total_steps=10, n_data=2, embed_chunk=4, train_dropout=False)
    l2, _ = _grads(model, params, batch, spec, mesh, True)
    assert abs(l2 - l0) > 1e-4


@pytest.mark.skipif(MISSING is not None, reason=f"fused CPU attention cannot run: {MISSING}")
def test_fused_attention_step_gradients_equal_xla_attention():
    """The same parameters, batch and dropout keys (attention-probability dropout too): the step's
    loss and gradients with the C++ attention kernels equal those with XLA's attention within float32
    rounding; without attention dropout the loss differs (it was on)."""
    fused = tiny_model("fused", dropout_rate=0.1, head_dropout=0.1, attention_dropout=0.2)
    xla = fused.clone(fused_attention=None)
    params = init(fused)
    batch = make_batch(8, seed=4)
    mesh = make_mesh("data=2", jax.devices()[:2])
    spec = StepSpec(LossConfig(), total_steps=10, n_data=2, train_dropout=True)
    (l0, g0), (l1, g1) = (_grads(m, params, batch, spec, mesh, False) for m in (xla, fused))
    assert l1 == pytest.approx(l0, rel=1e-6)
    for a, b in zip(jax.tree_util.tree_leaves(g0), jax.tree_util.tree_leaves(g1)):
        np.testing.assert_allclose(b, a, atol=1e-6, rtol=1e-4)
    assert any(np.abs(a).max() > 1e-3 for a in jax.tree_util.tree_leaves(g0))
    l2, _ = _grads(fused.clone(attention_dropout=0.0), params, batch, spec, mesh, False)
    assert abs(l2 - l1) > 1e-4


def _grads(model, params, batch, spec, mesh, cached):
    from jax import lax

    from stylebench_jax.training import step as step_module

    def body(p, bt, k):
        if cached:
            loss, _, grads = loss_and_grads(p, bt, k, jnp.int32(0), model=model, spec=spec)
        else:
            pv = step_module._varying(p)

            def full(q):
                z = step_module.embed_local(q, bt, k, model=model, spec=spec)
                return step_module.local_loss(q, z, bt, k, jnp.int32(0), model=model, spec=spec)[0]
            loss, grads = jax.value_and_grad(full)(pv)
        return lax.pmean(loss, "data"), lax.pmean(grads, "data")

    P = jax.sharding.PartitionSpec
    fn = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P(), P("data"), P()), out_specs=(P(), P()),
                               axis_names=frozenset({"data"})))
    loss, grads = fn(params, batch, jax.random.key(7))
    return float(loss), jax.tree.map(np.asarray, grads)


def test_pair_scores_are_exactly_symmetric():
    rng = np.random.default_rng(0)
    h1, h2 = rng.normal(size=(6, 32)).astype(np.float32), rng.normal(size=(6, 32)).astype(np.float32)
    f1, f2 = rng.normal(size=(6, 3)).astype(np.float32), rng.normal(size=(6, 3)).astype(np.float32)
    for classifier in ("arcface", "mlp"):
        m = tiny_model(classifier=classifier)
        ids = jnp.zeros((1, 4), jnp.int32)
        p = jax.jit(lambda k, m=m, ids=ids: m.init(k, ids, jnp.ones_like(ids))["params"])(jax.random.key(1))
        ab = m.apply({"params": p}, h1, h2, f1, f2, method=BiEncoder.classify)
        ba = m.apply({"params": p}, h2, h1, f2, f1, method=BiEncoder.classify)
        assert np.array_equal(np.asarray(ab), np.asarray(ba)), classifier


def test_head_learning_rate_moves_only_the_heads_faster():
    """With head_learning_rate set, an Adam update after warm-up moves the fresh heads by ~that rate and the
    pretrained encoder by ~learning_rate (Adam's first step is ~lr * sign(g) per parameter)."""
    from stylebench_jax.training.step import parameter_groups
    params = {"embedder": {"encoder": {"kernel": jnp.ones((4, 4))}, "attention_pool": {"bias": jnp.ones(4)}},
              "head": {"centres": jnp.ones((2, 4))}, "log_temperature": jnp.float32(0.0)}
    groups = parameter_groups(params)
    assert groups["embedder"]["encoder"]["kernel"] == "encoder"
    assert {groups["head"]["centres"], groups["embedder"]["attention_pool"]["bias"],
            groups["log_temperature"]} == {"heads"}
    grads = jax.tree.map(lambda p: jnp.full_like(p, 0.01), params)
    config = OptimConfig(learning_rate=1e-5, head_learning_rate=1e-3, warmup=0.0, weight_decay=0.0)
    optimizer = make_optimizer(config, 1000)
    state = optimizer.init(params)
    _, state = optimizer.update(grads, state, params)  # the schedule starts at 0 (warm-up)
    updates, _ = optimizer.update(grads, state, params)
    step = jax.tree.map(lambda u: float(jnp.max(jnp.abs(u))), updates)
    assert step["embedder"]["encoder"]["kernel"] == pytest.approx(1e-5, rel=1e-2)
    assert step["head"]["centres"] == pytest.approx(1e-3, rel=1e-2)
    assert step["embedder"]["attention_pool"]["bias"] == pytest.approx(1e-3, rel=1e-2)
    same = make_optimizer(OptimConfig(learning_rate=1e-5, warmup=0.0, weight_decay=0.0), 1000)
    _, state = same.update(grads, same.init(params), params)
    updates, _ = same.update(grads, state, params)
    assert float(jnp.max(jnp.abs(updates["head"]["centres"]))) == pytest.approx(1e-5, rel=1e-2)


def test_temperature_stays_learnable_at_its_bounds():
    """The clip sat in the forward pass: past a bound its gradient was exactly 0 and the temperature
    froze there. Now the parameter is clamped after each update and its gradient stays live."""
    import math

    from stylebench_jax.training.model import MAX_TEMPERATURE, MIN_TEMPERATURE

    model = tiny_model(dropout_rate=0.0, head_dropout=0.0)
    params = init(model)
    batch = make_batch(8, seed=2)
    mesh = make_mesh("data=1", jax.devices()[:1])
    spec = StepSpec(LossConfig(contrastive="supcon"), total_steps=10, n_data=1, train_dropout=False)
    optimizer = make_optimizer(OptimConfig(learning_rate=0.5, warmup=0.0, head_learning_rate=0.5), 10)
    step = compile_step(functools.partial(train_step, model=model, spec=spec, optimizer=optimizer), mesh)
    for start in (math.log(MIN_TEMPERATURE) - 0.01, math.log(MAX_TEMPERATURE) + 0.4):
        outside = {**params, "log_temperature": np.float32(start)}
        _, grads = _grads(model, outside, batch, spec, mesh, cached=True)
        assert float(grads["log_temperature"]) != 0.0  # it was exactly 0 past either bound
        state, _ = step(init_state(outside, optimizer, mesh), batch, jax.random.key(5))
        value = float(state.params["log_temperature"])
        assert math.log(MIN_TEMPERATURE) - 1e-6 <= value <= math.log(MAX_TEMPERATURE) + 1e-6


def test_arcface_gradients_are_finite_at_a_cosine_of_one():
    from stylebench_jax.training.model import ArcFace

    head = ArcFace(width=4)
    x = jnp.eye(4)[:1]
    params = head.init(jax.random.key(0), x, jnp.array([0]))["params"]
    params = jax.tree.map(lambda p: p, dict(params))
    params["project"] = {"kernel": jnp.eye(4), "bias": jnp.zeros(4)}
    params["centres"] = jnp.eye(4)[:2]  # class 0's centre is the input's direction: cos = 1 exactly

    def loss(p):
        logits = head.apply({"params": p}, x, jnp.array([0]))
        return -jax.nn.log_softmax(logits)[0, 0]

    grads = jax.grad(loss)(params)
    assert all(np.isfinite(np.asarray(g)).all() for g in jax.tree_util.tree_leaves(grads))  # were NaN


def test_adversary_weight_ramps_or_is_constant_without_warmup():
    from stylebench_jax.training.step import grl_weight

    ramp = LossConfig(adversary_weight=0.2, adversary_warmup=0.1)
    assert [float(grl_weight(ramp, jnp.asarray(s), 100)) for s in (0, 5, 10, 50)] == pytest.approx(
        [0.0, 0.1, 0.2, 0.2])
    # no warm-up: the full weight from step 0 (it was 0 there: a ramp of one step)
    none = LossConfig(adversary_weight=0.2, adversary_warmup=0.0)
    assert [float(grl_weight(none, jnp.asarray(s), 100)) for s in (0, 1)] == pytest.approx([0.2, 0.2])


def test_arcface_margin_and_scale_are_bounded():
    from stylebench_jax.config import config_from_dict
    from stylebench_jax.errors import UserInputError
    from stylebench_jax.training.config import ModelConfig

    assert config_from_dict(ModelConfig, {"arcface_margin": 0.5, "arcface_scale": 64.0}).arcface_margin == 0.5
    for key, value in (("arcface_margin", 3.5), ("arcface_margin", -0.3), ("arcface_scale", -30.0)):
        with pytest.raises(UserInputError, match=key):
            config_from_dict(ModelConfig, {key: value})
