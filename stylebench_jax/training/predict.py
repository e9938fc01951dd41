"""Predictions of a finished ``stylebench train`` run on held-out pairs, from its best checkpoint.

``pair_predictions(run_dir, split, mesh=...)`` rebuilds the run's ``BiEncoder`` from its
``config.json`` (base model, head, adversary), restores the parameters of ``RUN/best/<step>/``
(the checkpoint the export was made from; replicated over the given mesh, whatever the training
topology was), prepares the ``split`` pairs of the run's ``prepare-pairs`` directory exactly as the
trainer did (same cut at ``model.max_length``, the run's own style-feature statistics from
``style_features.json``, ``data.max_validation_pairs`` subsample with the run's seed) and returns
per pair: the classifier's two logits (evaluation mode: ArcFace without margin), the cosine of the
two embeddings, the adversary's topic predictions, labels and topics. ``stylebench calibrate`` fits
temperature scaling on these logits (``calibration.temperature``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from stylebench_jax.errors import UserInputError
from stylebench_jax.fileio import read_json_file


@dataclasses.dataclass
class RunModel:
    config: object  # TrainConfig
    base: object  # EncoderFiles
    model: object  # BiEncoder
    params: dict
    step: int
    feature_stats: tuple[np.ndarray, np.ndarray]


def _best_step(run_dir: Path) -> Path:
    best = run_dir / "best"
    steps = sorted((int(p.name) for p in best.iterdir() if p.name.isdigit() and (p / "state").is_dir()),
                   reverse=True) if best.is_dir() else []
    if not steps:
        raise UserInputError(f"{run_dir}: no best checkpoint (best/<step>/state); is it a finished "
                             "`stylebench train` run directory?")
    return best / str(steps[0])


def load_run_model(run_dir: str | Path, mesh: Mesh) -> RunModel:
    """The run's config, base encoder files, ``BiEncoder`` and best parameters (module docstring)."""
    import orbax.checkpoint as ocp

    from stylebench_jax.config import config_from_dict
    from stylebench_jax.encoders.loading import read_encoder_dir
    from stylebench_jax.encoders.neural import fused_attention_mesh
    from stylebench_jax.training.config import TrainConfig
    from stylebench_jax.training.run import base_dir
    from stylebench_jax.training.trainer import build_model

    run_dir = Path(run_dir).resolve()
    raw = read_json_file(run_dir / "config.json")
    if raw is None:
        raise UserInputError(f"{run_dir}: no config.json (expected a `stylebench train` run directory)")
    config = config_from_dict(TrainConfig, raw, source=str(run_dir / "config.json"))
    stats = read_json_file(run_dir / "style_features.json")
    if stats is None:
        raise UserInputError(f"{run_dir}: no style_features.json (written when training starts)")
    step_dir = _best_step(run_dir)
    checkpointer = ocp.StandardCheckpointer()
    # the item's own tree metadata: StandardCheckpointer.metadata also looks for a step-level
    # _CHECKPOINT_METADATA inside state/, which a CheckpointManager step keeps one level up, and
    # logs an absl warning that it is missing
    metadata = ocp.PyTreeCheckpointHandler().metadata(step_dir / "state")
    tree = getattr(metadata, "tree", metadata)
    replicated = NamedSharding(mesh, P())
    target = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=replicated), dict(tree))
    state = checkpointer.restore(step_dir / "state", target)
    params = state["params"]
    n_topics = int(params["adversary"]["out"]["kernel"].shape[-1]) if "adversary" in params else 0
    base = read_encoder_dir(base_dir(config))
    # inference: the kernels per shard of any CPU mesh (a model axis too), unless the run said xla;
    # never an error here (the run's "fused" was about training)
    fused = False if config.model.attention == "xla" else None
    model = build_model(config, base, n_topics,
                        fused_attention_mesh(mesh, base.config, config.model.compute_dtype, fused)[0])
    feature_stats = (np.asarray(stats["mean"], np.float32), np.asarray(stats["std"], np.float32))
    return RunModel(config, base, model, params, int(step_dir.name), feature_stats)


def pair_predictions(run: RunModel, split: str, *, mesh: Mesh, batch_size: int | None = None,
                     max_pairs: int | None = -1) -> dict[str, np.ndarray]:
    """Per-pair outputs on ``split`` of the run's pairs: ``logits [N, 2]``, ``cosine [N]``,
    ``labels [N]``, ``topics1``/``topics2 [N]`` (-1 unknown), ``same_topic [N]`` bool, ``book1``/
    ``book2``/``author1``/``author2`` lists, and ``adversary1``/``adversary2 [N]`` when the model has a
    topic adversary. ``max_pairs``: -1 (default) = the run's ``data.max_validation_pairs``; None = all."""
    from stylebench_jax.data.pairs.output import load_pairs
    from stylebench_jax.training.data import pairs_from_columns, subsample
    from stylebench_jax.training.validate import make_predictor, predict

    config = run.config
    if config.data.pairs is None:
        raise UserInputError("the run was trained on data.groups (no labelled pairs, no classifier loss); "
                             "classifier calibration needs a run trained on prepare-pairs pairs")
    columns = load_pairs(config.data.pairs, split)
    if not columns.get("label"):
        raise UserInputError(f"{config.data.pairs}: no {split!r} pairs")
    limit = config.data.max_validation_pairs if max_pairs == -1 else max_pairs
    columns = subsample(columns, limit, config.seed)
    books = sorted(set(columns["book1"] + columns["book2"]))
    pairs = pairs_from_columns(columns, {b: i for i, b in enumerate(books)}, run.base.tokenizer,
                               config.model.max_length, run.feature_stats)
    outputs = predict(make_predictor(run.model), run.params, pairs, mesh,
                      batch_size or config.trainer.batch_size)
    t = pairs.table
    topics1, topics2 = t.topics[pairs.first], t.topics[pairs.second]
    result = {"logits": outputs["logits"].astype(np.float64), "cosine": outputs["cosine"].astype(np.float64),
              "labels": pairs.labels.astype(np.int64), "topics1": topics1, "topics2": topics2,
              "same_topic": (topics1 == topics2) & (topics1 >= 0),
              "book1": columns["book1"], "book2": columns["book2"],
              "author1": columns.get("author1", columns["book1"]),
              "author2": columns.get("author2", columns["book2"])}
    if "topics1" in outputs:
        result["adversary1"], result["adversary2"] = outputs["topics1"], outputs["topics2"]
    return result

