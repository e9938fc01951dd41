"""The committed PyTorch fixtures (tests/fixtures/<family>/, written by scripts/make_torch_fixtures.py):
tiny checkpoints and transformers' reference outputs, read without torch."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
SCRIPT = REPO / "scripts" / "make_torch_fixtures.py"
DECODERS = ("llama", "mistral", "qwen2", "qwen3", "gpt2")


def model_dir(family: str) -> Path:
    return FIXTURES / family / "model"


def reference(family: str) -> dict:
    """``meta``, ``texts``, ``model_dir`` and every array the fixture lists: ``input_ids`` /
    ``attention_mask`` (right-padded, int32) and the float32 references (pooled vectors, hidden states)."""
    folder = FIXTURES / family / "reference"
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    return {"meta": meta, "texts": meta["texts"], "model_dir": model_dir(family),
            **{name: np.load(folder / f"{name}.npy") for name in meta["arrays"]}}


def fixture_script():
    """``scripts/make_torch_fixtures.py`` as a module (it imports torch only inside functions)."""
    spec = importlib.util.spec_from_file_location("make_torch_fixtures", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = script  # dataclasses resolve the module's annotations through sys.modules
    spec.loader.exec_module(script)
    return script


def left_padded(ids: np.ndarray, mask: np.ndarray, pad_id: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The right-padded batch moved to the left (same rows, same length)."""
    left_ids = np.full_like(ids, pad_id)
    left_mask = np.zeros_like(mask)
    length = ids.shape[1]
    for row in range(len(ids)):
        n = int(mask[row].sum())
        left_ids[row, length - n:] = ids[row, :n]
        left_mask[row, length - n:] = 1
    return left_ids, left_mask


def split_checkpoint(folder: Path, n_files: int = 2, index: bool = True) -> dict[str, str]:
    """Rewrite ``folder/model.safetensors`` as numbered shards (+ ``model.safetensors.index.json``, as
    ``save_pretrained`` writes big models); returns the weight map ``{tensor name: file name}``."""
    from safetensors.numpy import load_file, save_file

    tensors = load_file(str(folder / "model.safetensors"))
    (folder / "model.safetensors").unlink()
    names = sorted(tensors)
    weight_map = {}
    for part in range(n_files):
        file = f"model-{part + 1:05d}-of-{n_files:05d}.safetensors"
        chunk = names[part::n_files]
        save_file({k: tensors[k] for k in chunk}, str(folder / file), metadata={"format": "pt"})
        weight_map.update(dict.fromkeys(chunk, file))
    if index:
        (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    return weight_map


def copy_model(family: str, dest: Path) -> Path:
    """A writable copy of the family's checkpoint directory, ``dest/<family>``."""
    return Path(shutil.copytree(model_dir(family), dest / family))
