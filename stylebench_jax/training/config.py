"""The typed schema of ``stylebench train`` configs (YAML in ``configs/train/``, loaded by
``stylebench_jax.config.load_config`` with ``key=value`` overrides). Defaults are the Writing7
appendix's (seed 003) unless a comment says otherwise."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Literal

from stylebench_jax.config import InvalidField

_pos = {"minimum": 1}
_nonneg = {"minimum": 0.0}
_unit = {"minimum": 0.0, "maximum": 1.0}


@dataclasses.dataclass(frozen=True)
class DataConfig:
    """``pairs``: a ``stylebench prepare-pairs`` output directory (pairs.parquet|jsonl with splits),
    or ``groups``: a JSONL of ``{text_field, group_field[, topic_field]}`` for group-contrastive
    training (AuthBench §5.5), split into train/validation by group with ``validation_fraction``."""

    pairs: Path | None = None
    groups: Path | None = None
    text_field: str = "text"
    group_field: str = "group"
    topic_field: str | None = None
    validation_fraction: float = dataclasses.field(default=0.1, metadata=_unit)
    max_train_pairs: int | None = dataclasses.field(default=None, metadata=_pos)
    max_validation_pairs: int | None = dataclasses.field(default=2000, metadata=_pos)
    per_group: int = dataclasses.field(default=2, metadata={"minimum": 2})

    def __post_init__(self):
        if (self.pairs is None) == (self.groups is None):
            raise InvalidField("pairs", "give exactly one of data.pairs (a prepare-pairs directory) and "
                                        "data.groups (a JSONL of texts with group labels)")
        if self.per_group % 2:
            raise InvalidField("per_group", f"expected an even number (texts are paired), "
                                            f"found {self.per_group}")
        if self.pairs is not None:
            if not self.pairs.is_dir():
                raise InvalidField("pairs", f"{self.pairs}: directory not found (expected a stylebench "
                                            "prepare-pairs output)")
            if not any((self.pairs / f"pairs.{fmt}").is_file() for fmt in ("parquet", "jsonl")):
                raise InvalidField("pairs", f"{self.pairs}: holds no pairs.parquet or pairs.jsonl "
                                            "(run stylebench prepare-pairs first)")
        if self.groups is not None and not self.groups.is_file():
            raise InvalidField("groups", f"{self.groups}: file not found (expected a JSONL of texts with "
                                         "group labels)")


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    base: str = "minilm"  # "minilm" or a local model directory (BERT family)

    max_length: int = dataclasses.field(default=128, metadata={"minimum": 8})
    pooling: Literal["attention", "mean", "cls"] = "attention"
    projection_dim: int | None = dataclasses.field(default=None, metadata=_pos)  # None, 512 or 768
    use_style_features: bool = True
    classifier: Literal["arcface", "mlp"] = "arcface"
    # additive angular margin (radians; below pi/2, where cos(theta + m) stops being a penalty) and
    # logit scale of the ArcFace head
    arcface_margin: float = dataclasses.field(default=0.2, metadata={"minimum": 0.0, "maximum": 1.5})
    arcface_scale: float = dataclasses.field(default=30.0, metadata={"minimum": 1e-3})
    dropout: float = dataclasses.field(default=0.1, metadata=_unit)  # the encoder's hidden dropouts
    # BERT's attention_probs_dropout_prob: dropout of the encoder's attention probabilities, 0.1 as
    # Hugging Face / sentence-transformers fine-tuning of BERT-family checkpoints applies it (run
    # directories written before this key trained without it: they resume only with 0.0)
    attention_dropout: float = dataclasses.field(default=0.1, metadata=_unit)
    head_dropout: float = dataclasses.field(default=0.1, metadata=_unit)
    remat: bool = False  # rematerialise encoder layers (memory for compute)
    compute_dtype: Literal["float32", "bfloat16"] = "float32"
    # where attention runs (trainer.training_attention): fused = the C++ CPU kernels of
    # kernels.cpu_attention (forward and backward) or an error; xla = XLA's; auto = fused on CPU
    # meshes in float32 without a model axis, when they build. (Not on/off: YAML reads those as booleans.)
    attention: Literal["auto", "fused", "xla"] = "auto"

    def __post_init__(self):
        for name in ("dropout", "attention_dropout", "head_dropout"):
            if getattr(self, name) >= 1.0:
                raise InvalidField(name, f"expected a rate below 1, found {getattr(self, name)}")
        if self.base != "minilm" and not (Path(self.base) / "config.json").is_file():
            raise InvalidField("base", f"{self.base}: expected 'minilm' or a local model directory with a "
                                       "config.json")


@dataclasses.dataclass(frozen=True)
class LossConfig:
    ce_weight: float = dataclasses.field(default=1.0, metadata=_nonneg)
    contrastive: Literal["supcon", "infonce"] = "supcon"
    contrastive_weight: float = dataclasses.field(default=0.1, metadata=_nonneg)  # alpha
    adversary_weight: float = dataclasses.field(default=0.2, metadata=_nonneg)  # lambda (target of the ramp)
    adversary_warmup: float = dataclasses.field(default=0.1, metadata=_unit)  # share of steps to ramp over
    distillation_weight: float = dataclasses.field(default=0.1, metadata=_nonneg)  # beta, with a teacher
    distillation_temperature: float = dataclasses.field(default=4.0, metadata={"minimum": 1e-3})
    label_smoothing: float = dataclasses.field(default=0.05, metadata=_unit)
    class_weights: bool = True
    initial_temperature: float = dataclasses.field(default=0.07, metadata={"minimum": 0.01, "maximum": 1.0})


@dataclasses.dataclass(frozen=True)
class OptimConfig:
    learning_rate: float = dataclasses.field(default=2e-5, metadata={"minimum": 0.0})
    # peak rate of the freshly initialised heads (pooling, projection, classifier, adversary,
    # temperature); None: learning_rate for everything, as seed 003 §4.4
    head_learning_rate: float | None = dataclasses.field(default=None, metadata={"minimum": 0.0})
    weight_decay: float = dataclasses.field(default=0.01, metadata=_nonneg)
    warmup: float = dataclasses.field(default=0.1, metadata=_unit)  # share of steps, then linear decay
    clip_norm: float = dataclasses.field(default=1.0, metadata={"minimum": 0.0})
    accumulation: int = dataclasses.field(default=1, metadata=_pos)


@dataclasses.dataclass(frozen=True)
class TrainerConfig:
    batch_size: int = dataclasses.field(default=16, metadata=_pos)  # pairs per global batch (all devices)
    steps: int | None = dataclasses.field(default=None, metadata=_pos)  # None: epochs x steps per epoch
    epochs: int = dataclasses.field(default=3, metadata=_pos)
    # gradient caching: texts per embedding chunk (None: embed the whole local batch at once)
    embed_chunk: int | None = dataclasses.field(default=None, metadata=_pos)
    log_every: int = dataclasses.field(default=10, metadata=_pos)
    eval_every: int = dataclasses.field(default=100, metadata=_pos)
    # evaluations without improvement (every eval_every steps); the seed's §4.4 counts 3 epochs
    patience: int = dataclasses.field(default=3, metadata=_pos)
    keep_checkpoints: int = dataclasses.field(default=2, metadata=_pos)
    checkpoint_every: int | None = dataclasses.field(default=None, metadata=_pos)  # default: eval_every


@dataclasses.dataclass(frozen=True)
class TeacherConfig:
    """Cross-encoder teacher for distillation: ``none`` (no distillation), ``auto`` (train one first
    on the same pairs, ``steps`` steps, and store it in the run directory) or a directory of a
    teacher trained before by ``auto``."""

    mode: Literal["none", "auto"] | Path = "none"
    steps: int = dataclasses.field(default=200, metadata=_pos)
    batch_size: int = dataclasses.field(default=32, metadata=_pos)
    learning_rate: float = dataclasses.field(default=2e-5, metadata={"minimum": 0.0})


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrainConfig:
    seed: int = dataclasses.field(default=0, metadata={"minimum": 0})
    data: DataConfig
    model: ModelConfig = ModelConfig()
    loss: LossConfig = LossConfig()
    optim: OptimConfig = OptimConfig()
    trainer: TrainerConfig = TrainerConfig()
    teacher: TeacherConfig = TeacherConfig()
