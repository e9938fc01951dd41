"""The training loop around the pure step: it only feeds batches, logs, evaluates, checkpoints.

Run directory ``RUN``::

    config.json        the resolved config (written at start; a resumed run must match it)
    metrics.jsonl      one line per logging step {"step", "loss", "ce", "contrastive", "adversary",
                       "distillation", "accuracy", "adversary_accuracy", "temperature",
                       "grl_weight", "learning_rate", "grad_norm", "examples_per_s"} and one per
                       evaluation {"step", "eval": {...}}; everything but ``examples_per_s`` (wall
                       clock) is a deterministic function of config and seed
    checkpoints/, best/   orbax checkpoints (``training.checkpoints``)
    style_features.json   mean/std of the style features (training texts)
    export/            the trained encoder as a model directory (``encoders.export``), from the best
                       checkpoint: ``stylebench embed/eval --models RUN/export`` loads it
    summary.json       steps run, best step and its validation metrics, the attention that ran
                       (``training_attention``: "fused-cpu" or "xla (why)")

Order of resume (big_vision style): the run directory's own latest checkpoint, else the pretrained
base model, never scratch. A resumed run regenerates the batches of its epoch from ``(seed,
epoch)``, derives each step's dropout key from ``(seed, step)``, drops ``metrics.jsonl`` lines
past the checkpoint, and so writes the same lines and reaches the same parameters as a run that
was never interrupted. SIGTERM (and Ctrl-C) finish the current step, save a checkpoint and stop
cleanly; SIGKILL loses at most the steps since the last checkpoint.

Early stopping: ``trainer.patience`` evaluations without a better validation balanced accuracy.
Hooks (``on_eval(step, params, metrics)``) let ``commands/train.py`` attach more evaluation
(training never imports ``tasks/`` or ``evaluation/``).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import signal
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh

from stylebench_jax.config import config_to_dict
from stylebench_jax.encoders.export import export_encoder
from stylebench_jax.encoders.loading import EncoderFiles, init_params, param_shardings
from stylebench_jax.errors import InvalidOption, UserInputError
from stylebench_jax.fileio import json_ready, read_json_file, write_text_atomic
from stylebench_jax.kernels.cpu_attention import LOCAL
from stylebench_jax.parallel.distributed import (
    allgather_objects,
    fetch,
    is_primary,
    process_count,
    put_global_batch,
)
from stylebench_jax.progress import progress_bar
from stylebench_jax.training.checkpoints import RunCheckpoints
from stylebench_jax.training.config import TrainConfig
from stylebench_jax.training.data import TrainingData, training_digest
from stylebench_jax.training.losses import balanced_class_weights
from stylebench_jax.training.model import BiEncoder
from stylebench_jax.training.step import (
    StepSpec,
    TrainState,
    compile_step,
    init_state,
    learning_rate_schedule,
    make_optimizer,
    train_step,
)
from stylebench_jax.training.validate import make_predictor, predict, validation_metrics

Hook = Callable[[int, Any, dict], dict | None]
TIMING_FIELDS = ("examples_per_s",)
# Config keys that change how a step runs, not what it computes (beyond float32 rounding): a run
# resumes with another value, or from a config.json written before the key existed.
EXECUTION_ONLY = (("model", "attention"),)
# keys added after run directories were written, with the value those runs trained with (a run that
# lacks one resumes only with that value). Resuming across the 2026-11-27 change of the dropout masks
# (encoders.dropout: hashes instead of XLA's bit generator) continues the run with other masks: it
# does not reproduce the uninterrupted run's metrics.jsonl.
ADDED_LATER = {("model", "attention_dropout"): 0.0}


def _run_identity(resolved: dict) -> dict:
    """``resolved`` (a config as ``config_to_dict`` writes it) without the ``EXECUTION_ONLY`` keys,
    ``ADDED_LATER`` keys filled in where a run written before them lacks them."""
    out = {section: dict(value) if isinstance(value, dict) else value for section, value in resolved.items()}
    for section, key in EXECUTION_ONLY:
        if isinstance(out.get(section), dict):
            out[section].pop(key, None)
    for (section, key), value in ADDED_LATER.items():
        if isinstance(out.get(section), dict):
            out[section].setdefault(key, value)
    return out


def _config_mismatch(run_dir: Path, previous: dict, resolved: dict) -> str:
    """The one-line refusal to resume ``run_dir`` (its ``config.json`` is ``previous``) with ``resolved``:
    the differing keys (``section.key``), and for an ``ADDED_LATER`` key the value to pass."""
    before, now = _run_identity(previous), _run_identity(resolved)
    changed, hints = [], []
    for section in sorted(set(before) | set(now)):
        a, b = before.get(section), now.get(section)
        if isinstance(a, dict) and isinstance(b, dict):
            keys = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
            changed += [f"{section}.{k}" for k in keys]
            hints += [f"runs written before {section}.{k} existed trained with {ADDED_LATER[(section, k)]}: "
                      f"pass {section}.{k}={ADDED_LATER[(section, k)]} to resume"
                      for k in keys if (section, k) in ADDED_LATER and k not in previous.get(section, {})]
        elif a != b:
            changed.append(section)
    hint = "".join(f"; {h}" for h in hints)
    return (f"{run_dir}: holds a run with another config (differs in {', '.join(changed)}){hint}; resume it "
            "with the same config or use a new run directory")


DATA_PATHS = ("pairs", "groups")  # data.* keys naming where the data lies, not what it is


def _has_checkpoint(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds a finished checkpoint (orbax names it by its step; a save in
    progress is a ``<step>.orbax-checkpoint-tmp-...`` folder)."""
    folder = run_dir / "checkpoints"
    return folder.is_dir() and any(p.name.isdigit() for p in folder.iterdir())


def check_resume(config: TrainConfig, run_dir: Path, data: TrainingData) -> None:
    """Before any training (a teacher's included): ``run_dir`` is new or a run of this config on this
    data. A folder whose ``config.json`` is not a run's (a model directory) is refused, as the run's
    would overwrite it; a run with a checkpoint resumes only with the same
    config (``_config_mismatch``) and the same training data (``data.json``: the digest of the texts
    and pairs, so a rewritten pairs folder at the same path is refused too)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return
    # only a config.json that is not a run's is refused: other files may be a launcher's logs or what
    # another process of this run has just written (its own config.json comes first, atomically)
    has_config = (run_dir / "config.json").is_file()
    previous = read_json_file(run_dir / "config.json") if has_config else None
    is_run = isinstance(previous, dict) and "trainer" in previous and "data" in previous
    if has_config and not is_run:
        raise UserInputError(f"--output {run_dir}: holds files that are not a training run (its "
                             "config.json is not a run's); choose a new or empty directory")
    if not is_run or not _has_checkpoint(run_dir):  # a run that failed before its first checkpoint
        return
    resolved = config_to_dict(config)
    recorded = read_json_file(run_dir / "data.json")
    if isinstance(recorded, dict):
        # the data's content is compared, so where it lies may change (a moved folder, a relative
        # path given for an absolute one); runs from before data.json compare the paths
        previous, resolved = ({**d, "data": {k: v for k, v in d["data"].items() if k not in DATA_PATHS}}
                              for d in (previous, resolved))
    if _run_identity(previous) != _run_identity(resolved):
        raise UserInputError(_config_mismatch(run_dir, previous, resolved))
    if isinstance(recorded, dict) and recorded.get("digest") != training_digest(data):
        raise UserInputError(f"{run_dir}: holds a run trained on other data (the texts or pairs that "
                             f"{config.data.pairs or config.data.groups} gives now differ from those it "
                             "began with); resume it on the same data or use a new run directory")


@dataclasses.dataclass
class TrainResult:
    run_dir: Path
    steps: int
    best_step: int | None
    best_metrics: dict | None
    export_dir: Path | None
    stopped: str  # "finished" | "early_stopping" | "signal"


def training_attention(config: TrainConfig, base: EncoderFiles, mesh: Mesh) -> tuple[Mesh | None, str]:
    """Where the model's attention runs: ``(mesh, "fused-cpu")`` for the C++ kernels of
    ``kernels.cpu_attention`` (forward and backward), ``(None, "xla (why)")`` for XLA's.

    ``model.attention``: ``auto`` takes the kernels on CPU meshes in float32 with a head size
    they handle and no ``model`` axis (the train step's ``shard_map`` is manual over ``data`` only, and
    XLA cannot split a custom call over heads), whenever they build here (else one stderr line);
    ``fused`` takes them or raises ``UserInputError`` naming the key; ``xla`` keeps XLA's. The teacher
    cross-encoder keeps XLA's attention. Measured 2026-11-27 on the 2-core EPYC (MiniLM, 16 pairs x
    128 tokens, ``benchmarks/bench_train.py --xla-attention-row``, three runs): the plain step 9.3,
    10.2 and 11.3 examples/s (best round of 3) against 7.7, 8.3 and 10.2 with XLA's attention."""
    from stylebench_jax.encoders.neural import fused_attention_mesh

    mode = config.model.attention
    if mode == "xla":
        return None, "xla (asked for)"
    if int(mesh.shape.get("model", 1)) > 1:
        if mode == "fused":
            raise UserInputError("model.attention: fused, but the mesh splits the heads over a model "
                                 "axis the fused CPU attention kernel cannot take in training (use a mesh "
                                 "with model=1)")
        return None, "xla (the mesh has a model axis)"
    try:
        return fused_attention_mesh(mesh, base.config, config.model.compute_dtype, mode == "fused" or None)
    except InvalidOption as error:
        raise UserInputError(f"model.attention: fused, but {error.message}") from None


def build_model(config: TrainConfig, base: EncoderFiles, n_topics: int,
                fused_attention: Mesh | str | None = None) -> BiEncoder:
    """The run's ``BiEncoder``; ``fused_attention`` as ``training_attention`` decides (a mesh: the
    kernels per shard of it; ``cpu_attention.LOCAL`` inside the train step's ``shard_map``)."""
    m = config.model
    dtype = {"float32": np.float32, "bfloat16": jax.numpy.bfloat16}[m.compute_dtype]
    return BiEncoder(base.config, pooling=m.pooling, projection_dim=m.projection_dim, classifier=m.classifier,
                     arcface_margin=m.arcface_margin, arcface_scale=m.arcface_scale,
                     use_style_features=m.use_style_features,
                     n_topics=n_topics if config.loss.adversary_weight > 0 else 0,
                     dropout_rate=m.dropout, head_dropout=m.head_dropout, remat=m.remat, dtype=dtype,
                     fused_attention=fused_attention, attention_dropout=m.attention_dropout)


def initial_params(model: BiEncoder, base: EncoderFiles, mesh: Mesh, seed: int, temperature: float):
    """Heads created sharded from the seed; the encoder from the pretrained weights (same shardings)."""
    params = init_params(model, jax.random.key(seed), mesh, skip=(("embedder", "encoder"),))
    shardings = param_shardings(model, mesh)
    encoder = jax.device_put(base.host_params["encoder"], shardings["embedder"]["encoder"])
    params["embedder"] = {**params["embedder"], "encoder": encoder}
    params["log_temperature"] = jax.device_put(np.float32(math.log(temperature)),
                                               shardings["log_temperature"])
    return params


def check_run(config: TrainConfig, base: EncoderFiles, data: TrainingData, n_data: int) -> tuple[int, int]:
    """``(steps per epoch, total steps)``; settings that would fail (or silently do nothing) in the
    first steps are refused here, before a teacher is trained or the run directory is made."""
    tc = config.trainer
    if tc.batch_size % n_data:
        raise UserInputError(f"trainer.batch_size: {tc.batch_size} pairs must divide over the {n_data} "
                             "devices of the data axis")
    steps_per_epoch = data.steps_per_epoch(tc.batch_size)
    if steps_per_epoch < 1:
        raise UserInputError(f"trainer.batch_size: {tc.batch_size} pairs is more than the "
                             f"{len(data.train)} training pairs")
    steps = tc.steps or tc.epochs * steps_per_epoch
    accumulation = config.optim.accumulation
    if accumulation > steps or steps % accumulation:
        raise UserInputError(f"optim.accumulation: {accumulation} micro-steps per update do not divide "
                             f"the {steps} steps (the last {steps % accumulation} would be dropped; "
                             f"{'no update at all' if accumulation > steps else 'pick a divisor'})")
    per_device = 2 * tc.batch_size // n_data
    if tc.embed_chunk is not None and per_device % tc.embed_chunk:
        raise UserInputError(f"trainer.embed_chunk: {tc.embed_chunk} must divide the {per_device} texts per "
                             f"device (2 x trainer.batch_size / {n_data} devices)")
    if config.model.max_length > base.config.max_tokens:
        raise UserInputError(f"model.max_length: {config.model.max_length} tokens is more than the "
                             f"{base.config.max_tokens} positions of {base.model_dir.name}")
    if config.teacher.mode == "auto" and config.loss.distillation_weight > 0 \
            and config.teacher.batch_size % n_data:
        raise UserInputError(f"teacher.batch_size: {config.teacher.batch_size} pairs must divide over the "
                             f"{n_data} devices of the data axis")
    return steps_per_epoch, steps


class Trainer:
    def __init__(self, config: TrainConfig, run_dir: Path, *, base: EncoderFiles, data: TrainingData,
                 mesh: Mesh, hooks: Sequence[Hook] = (), progress: bool = True,
                 teacher_logits: np.ndarray | None = None):
        self.config, self.run_dir, self.base, self.data, self.mesh = config, Path(run_dir), base, data, mesh
        self.hooks, self.progress = list(hooks), progress
        tc = config.trainer
        n_data = int(mesh.shape["data"])
        self.steps_per_epoch, self.total_steps = check_run(config, base, data, n_data)
        attention, self.attention_kernel = training_attention(config, base, mesh)
        self.model = build_model(config, base, data.n_topics, attention)  # evaluation: per shard of the mesh
        # the train step runs per device already (shard_map over data): the kernels on local arrays
        self.step_model = self.model.clone(fused_attention=LOCAL) if attention is not None else self.model
        use_ce = config.loss.ce_weight > 0 and data.source == "pairs"
        if teacher_logits is not None:
            data.train.teacher = teacher_logits
        self.spec = StepSpec(config.loss, self.total_steps, n_data,
                             balanced_class_weights(data.train.labels, enabled=config.loss.class_weights),
                             tc.embed_chunk, use_ce=use_ce, use_topics=self.model.n_topics > 0,
                             use_teacher=teacher_logits is not None, train_dropout=True)
        self.optimizer = make_optimizer(config.optim, self.total_steps)
        updates = max(self.total_steps // config.optim.accumulation, 1)
        self.schedule = learning_rate_schedule(config.optim, updates)
        self.checkpoints = RunCheckpoints(self.run_dir, tc.keep_checkpoints)
        self._stop_signal: str | None = None

    # ----------------------------------------------------------------- set-up
    def _fresh_state(self) -> TrainState:
        params = initial_params(self.model, self.base, self.mesh, self.config.seed,
                                self.config.loss.initial_temperature)
        return init_state(params, self.optimizer, self.mesh)

    def _write_config(self) -> None:
        # a run that never saved a checkpoint (it failed at once) holds nothing a new config could spoil
        check_resume(self.config, self.run_dir, self.data)
        self._check_mesh_of_run()
        resolved = config_to_dict(self.config)
        write_text_atomic(self.run_dir / "config.json", json.dumps(resolved, indent=1, sort_keys=True) + "\n")
        write_text_atomic(self.run_dir / "data.json",
                          json.dumps({"digest": training_digest(self.data)}, indent=1) + "\n")
        stats = {"mean": self.data.feature_mean.tolist(), "std": self.data.feature_std.tolist()}
        write_text_atomic(self.run_dir / "style_features.json", json.dumps(stats, indent=1) + "\n")

    def _check_mesh_of_run(self) -> None:
        """Dropout keys are folded with the device's index on the data axis, so with dropout the
        numbers depend on the data-axis size: a run resumes only on the size it started with
        (``mesh.json``); without dropout any size gives the same step (tests)."""
        path = self.run_dir / "mesh.json"
        n_data = int(self.mesh.shape["data"])
        m = self.config.model
        dropout = max(m.dropout, m.attention_dropout, m.head_dropout) > 0
        previous = read_json_file(path)
        if dropout and previous is not None and self.checkpoints.latest_step() is not None \
                and previous.get("data") != n_data:
            raise UserInputError(f"{self.run_dir}: was trained with {previous.get('data')} devices on the "
                                 f"data axis, this mesh has {n_data}; dropout masks follow the device, so "
                                 f"resume it with --mesh data={previous.get('data')}")
        write_text_atomic(path, json.dumps({"data": n_data}) + "\n")

    def _resume(self, state: TrainState) -> tuple[TrainState, dict]:
        extra = {"best_step": None, "best_metrics": None, "bad_evals": 0}
        if self.checkpoints.latest_step() is None:
            self._truncate_metrics(0)  # the lines of a run that died before its first checkpoint
            return state, extra
        state, extra = self.checkpoints.restore_latest(state)
        best = extra.get("best_step")
        if best is not None and self.checkpoints.best_step() != best:
            # killed between the two saves of an improving evaluation: checkpoints/<best> is written,
            # best/ still holds the earlier best (the export would have come from it, unsaid)
            if best != int(state.step):
                raise RuntimeError(f"{self.run_dir}: best/ holds step {self.checkpoints.best_step()}, the "
                                   f"latest checkpoint (step {int(state.step)}) names step {best} as best")
            self.checkpoints.save(best, state, extra, only_best=True)
        self._truncate_metrics(int(state.step))
        return state, extra

    def _truncate_metrics(self, step: int) -> None:
        path = self.run_dir / "metrics.jsonl"
        if not path.exists():
            return
        lines = [line for line in path.read_text(encoding="utf-8").splitlines()
                 if line.strip() and json.loads(line)["step"] <= step]
        write_text_atomic(path, "".join(line + "\n" for line in lines))

    def _log(self, row: dict) -> None:
        if not is_primary():  # one writer per run directory
            return
        with open(self.run_dir / "metrics.jsonl", "a", encoding="utf-8") as handle:
            handle.write(json.dumps(json_ready(row), sort_keys=False) + "\n")  # a NaN loss: null

    # ----------------------------------------------------------------- loop
    def _batch(self, step: int) -> dict:
        epoch, offset = divmod(step, self.steps_per_epoch)
        if getattr(self, "_epoch", None) != epoch:
            self._epoch, self._batches = epoch, self.data.epoch_batches(epoch, self.config.trainer.batch_size,
                                                                        self.config.seed)
        # each process transfers its own rows of the global batch (parallel.distributed)
        return put_global_batch(self.data.train_batch(self._batches[offset]), self.mesh)

    def evaluate(self, params) -> dict:
        if not hasattr(self, "_predictor"):
            self._predictor = make_predictor(self.model)
        outputs = predict(self._predictor, params, self.data.validation, self.mesh,
                          self.config.trainer.batch_size)
        return validation_metrics(outputs, self.data.validation)

    def _handle_signal(self, signum, frame) -> None:
        self._stop_signal = signal.Signals(signum).name

    def _stopping(self, state: TrainState) -> bool:
        """Whether to stop after this step. With several processes a signal reaches each at its
        own moment: they agree (any process signalled) so all save and stop at the same step. The
        step is finished first: two cross-process collectives in flight at once (the step's and
        this exchange) can pair up differently on different processes (CPU/gloo)."""
        if process_count() == 1:
            return self._stop_signal is not None
        jax.block_until_ready(state)
        return any(allgather_objects(self._stop_signal is not None))

    def run(self) -> TrainResult:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._write_config()
        tc = self.config.trainer
        state, extra = self._resume(self._fresh_state())
        step_fn = compile_step(functools.partial(train_step, model=self.step_model, spec=self.spec,
                                                 optimizer=self.optimizer), self.mesh,
                               jax.tree.map(lambda x: x.sharding, state))
        rng = jax.random.key(self.config.seed)
        previous = {s: signal.signal(s, self._handle_signal) for s in (signal.SIGTERM, signal.SIGINT)}
        stopped, start = "finished", int(state.step)
        if start and extra.get("bad_evals", 0) >= tc.patience:  # it stopped early before: finished
            start = self.total_steps
            stopped = "early_stopping"
        checkpoint_every = tc.checkpoint_every or tc.eval_every
        bar = progress_bar(total=self.total_steps, desc="train", unit="step", enabled=self.progress)
        bar.update(start)
        clock, done_at_clock = time.perf_counter(), start
        try:
            for step in range(start, self.total_steps):
                state, metrics = step_fn(state, self._batch(step), rng)
                current = step + 1
                stopping = self._stopping(state)
                bar.update(1)
                log_now = current % tc.log_every == 0 or current == self.total_steps
                evaluate = current % tc.eval_every == 0 or current == self.total_steps
                save_now = not evaluate and (current % checkpoint_every == 0 or stopping)
                if log_now or evaluate or save_now:  # nothing diverged is logged, evaluated or saved
                    metrics = {k: float(v) for k, v in jax.device_get(metrics).items()}
                    bad = next((k for k in ("loss", "grad_norm") if not math.isfinite(metrics.get(k, 0.0))),
                               None)
                    if bad is not None:
                        raise UserInputError(f"step {current}: the {bad} is {metrics[bad]}; training "
                                             "diverged (a lower optim.learning_rate?); the last checkpoint "
                                             "is kept")
                if log_now:
                    now = time.perf_counter()
                    rate = (current - done_at_clock) * tc.batch_size * 2 / max(now - clock, 1e-9)
                    clock, done_at_clock = now, current
                    self._log({"step": current, **metrics,
                               "learning_rate": float(self.schedule(step // self.config.optim.accumulation)),
                               "examples_per_s": round(rate, 2)})
                if evaluate:
                    extra, stop = self._after_eval(current, state, extra)
                    # the rate logged next counts training steps only, not this evaluation and checkpoint
                    clock, done_at_clock = time.perf_counter(), current
                if save_now:
                    self.checkpoints.save(current, state, extra)
                if evaluate and stop:
                    stopped = "early_stopping"
                    break
                if stopping:
                    stopped = "signal"
                    break
        finally:
            bar.close()
            for s, handler in previous.items():
                signal.signal(s, handler)
        return self._finish(state, extra, stopped)

    def _after_eval(self, step: int, state: TrainState, extra: dict) -> tuple[dict, bool]:
        metrics = self.evaluate(state.params)
        for hook in self.hooks:
            metrics.update(hook(step, state.params, metrics) or {})
        self._log({"step": step, "eval": metrics})
        score = metrics.get("balanced_accuracy", float("nan"))
        best = extra["best_metrics"]
        improved = best is None or (math.isfinite(score) and score > best.get("balanced_accuracy", -1.0))
        extra = {"best_step": step if improved else extra["best_step"],
                 "best_metrics": metrics if improved else best,
                 "bad_evals": 0 if improved else extra["bad_evals"] + 1}
        self.checkpoints.save(step, state, extra, best=improved)
        return extra, extra["bad_evals"] >= self.config.trainer.patience

    def _finish(self, state: TrainState, extra: dict, stopped: str) -> TrainResult:
        step = int(state.step)
        if stopped == "signal":  # the loop saved this step's checkpoint before stopping
            self.checkpoints.close()
            return TrainResult(self.run_dir, step, extra["best_step"], extra["best_metrics"], None, stopped)
        best = self.checkpoints.restore_best(state)
        self.best_params = best[0].params if best is not None else state.params
        export_dir = self.export(self.best_params)
        summary = {"steps": step, "total_steps": self.total_steps, "stopped": stopped,
                   "best_step": extra["best_step"], "best_validation": extra["best_metrics"],
                   "steps_per_epoch": self.steps_per_epoch, "export": str(export_dir),
                   "attention": self.attention_kernel}
        write_text_atomic(self.run_dir / "summary.json", json.dumps(json_ready(summary), indent=1) + "\n")
        self.checkpoints.close()
        return TrainResult(self.run_dir, step, extra["best_step"], extra["best_metrics"], export_dir, stopped)

    def export(self, params) -> Path:
        host = fetch(params["embedder"])  # gathered when parameters span processes
        return export_encoder(self.run_dir / "export", params=host, config=self.base.config,
                              tokenizer=self.base.tokenizer, pooling=self.config.model.pooling,
                              normalize=True, max_length=self.config.model.max_length)
