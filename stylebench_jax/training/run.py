"""``train(config, run_dir)``: resolve the base model, load and tokenise the data, (train the
teacher when distilling), and run the :class:`~stylebench_jax.training.trainer.Trainer`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from jax.sharding import Mesh

from stylebench_jax.encoders.loading import read_encoder_dir
from stylebench_jax.encoders.registry import minilm_dir
from stylebench_jax.training.config import TrainConfig
from stylebench_jax.training.data import load_training_data
from stylebench_jax.training.trainer import Hook, Trainer, TrainResult, check_resume, check_run


def base_dir(config: TrainConfig) -> Path:
    return minilm_dir() if config.model.base == "minilm" else Path(config.model.base)


def train(config: TrainConfig, run_dir: str | Path, *, mesh: Mesh, hooks: Sequence[Hook] = (),
          progress: bool = True) -> TrainResult:
    base = read_encoder_dir(base_dir(config))
    _check_processes_agree(config, base)
    data = load_training_data(config.data, base.tokenizer, config.model.max_length, config.seed,
                              config.trainer.batch_size)
    test_columns = held_out_columns(config) if data.source == "pairs" else None  # checked before training
    check_run(config, base, data, int(mesh.shape["data"]))  # before the teacher trains
    check_resume(config, Path(run_dir), data)  # a changed config or data: refused before the teacher too
    teacher_logits = None
    if config.teacher.mode != "none" and config.loss.distillation_weight > 0:
        from stylebench_jax.training.teacher import teacher_logits_for

        teacher_logits = teacher_logits_for(config, base, data, Path(run_dir), mesh=mesh, progress=progress)
    trainer = Trainer(config, Path(run_dir), base=base, data=data, mesh=mesh, hooks=hooks, progress=progress,
                      teacher_logits=teacher_logits)
    result = trainer.run()
    if result.export_dir is not None and test_columns is not None:
        held_out_evaluation(config, base, data, trainer, result, mesh, test_columns)
    return result


# the small files the loaders read beside the weights (configs, tokenizer files)
SETTING_SUFFIXES = frozenset({".json", ".txt", ".model"})


def _check_processes_agree(config: TrainConfig, base) -> None:
    """With several processes: every process has the same resolved config and the same base model
    (``base.weights_digest``, which ``read_encoder_dir`` computed, and the digest of its settings
    files; per-host metadata such as a download tool's dot-folders is not compared). The training
    texts are compared where they are tokenised (``training.data``)."""
    from stylebench_jax.encoders.checkpoint import weights_digest
    from stylebench_jax.parallel.distributed import check_processes_agree, process_count

    if process_count() == 1:
        return
    check_processes_agree("the training config (file and overrides)", repr(config))
    folder = base_dir(config)
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in SETTING_SUFFIXES
                   and not any(part.startswith(".") for part in p.relative_to(folder).parts))
    listing = repr([str(p.relative_to(folder)) for p in files])
    check_processes_agree(f"model.base {folder}", listing + weights_digest(files) + base.weights_digest)


def held_out_columns(config: TrainConfig) -> dict[str, list] | None:
    """The ``test`` split's pairs the held-out report scores (subsampled like validation's), or None
    when the pairs have no test split; one label only is an error (ROC-AUC needs both), raised before
    any training step."""
    from stylebench_jax.data.pairs.output import load_pairs
    from stylebench_jax.training.data import check_both_labels, subsample

    columns = load_pairs(config.data.pairs, "test")
    if not columns.get("label"):
        return None
    columns = subsample(columns, config.data.max_validation_pairs, config.seed)
    check_both_labels(columns, config.data.pairs, "test", "the held-out report (ROC-AUC)")
    return columns


def held_out_evaluation(config: TrainConfig, base, data, trainer: Trainer, result: TrainResult,
                        mesh: Mesh, columns: dict[str, list]) -> dict:
    """Held-out test pairs (``columns``: :func:`held_out_columns`, never used for training or checkpoint
    selection): the exported model against the untrained base model, written to
    ``RUN/test_report.json`` and added to ``summary.json``."""
    import json

    import numpy as np

    from stylebench_jax.encoders.neural import FlaxEncoderEmbedder
    from stylebench_jax.fileio import json_ready, read_json_file, write_text_atomic
    from stylebench_jax.training.data import pairs_from_columns
    from stylebench_jax.training.validate import held_out_report, make_predictor, predict

    books = sorted(set(columns["book1"] + columns["book2"]))
    pairs = pairs_from_columns(columns, {b: i for i, b in enumerate(books)}, base.tokenizer,
                                config.model.max_length, (data.feature_mean, data.feature_std))
    outputs = predict(make_predictor(trainer.model), trainer.best_params, pairs, mesh,
                      config.trainer.batch_size)
    embedder = FlaxEncoderEmbedder(base.model_dir, mesh=mesh, progress=False, long_text="truncate",
                                   max_length=config.model.max_length)
    vectors = embedder.embed(pairs.table.texts)
    base_cosine = np.einsum("nd,nd->n", vectors[pairs.first], vectors[pairs.second])
    report = held_out_report(outputs, pairs, base_cosine, seed=config.seed)
    report["base_model"] = f"{config.model.base} ({embedder.settings.pooling} pooling, untrained)"
    run = Path(result.run_dir)
    write_text_atomic(run / "test_report.json", json.dumps(json_ready(report), indent=1) + "\n")
    summary = read_json_file(run / "summary.json", {})
    summary["test"] = report
    write_text_atomic(run / "summary.json", json.dumps(json_ready(summary), indent=1) + "\n")
    return report
