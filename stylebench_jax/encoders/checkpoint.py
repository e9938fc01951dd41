"""Safetensors checkpoints of a Hugging Face directory: which file holds which tensor, and how one
PyTorch tensor becomes one Flax parameter, read block by block.

A directory holds one ``model.safetensors``, or several shards listed by ``model.safetensors.index.json``
(``{"weight_map": {tensor name: file name}}``) or named ``*-00001-of-00003.safetensors``.
``tensor_files`` maps every tensor name to its file after checking that the index and the files agree.
Only safetensors are read: pickled checkpoints (``*.bin``, ``*.pt``) can run arbitrary code when loaded
and are refused.

A ``TensorMap`` says how one stored tensor becomes one Flax parameter: an optional fixed slice of the
PyTorch tensor (``select``, e.g. the query third of GPT-2's fused ``c_attn``), a split of each PyTorch
axis into Flax axes (``split``, e.g. ``4096 -> (32 heads, 128)``) and a transpose (``perm``).
``TensorMap.read`` reads only the block of the Flax parameter that one device shard needs through
``safe_open(...).get_slice`` (mmap-backed), so a tensor-parallel model is never materialised whole on
the host; ``encoders.loading.load_params`` places those blocks. The per-family tables of maps are
``encoders.weights`` (BERT family) and ``encoders.decoder_weights`` (causal decoders).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import math
import re
from pathlib import Path

import numpy as np
from safetensors import safe_open

from stylebench_jax.errors import UserInputError
from stylebench_jax.fileio import read_json_file

PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")
INDEX_NAME = "model.safetensors.index.json"
_SHARD_NAME = re.compile(r"-(\d+)-of-(\d+)\.safetensors$")


def safetensors_files(model_dir: Path) -> list[Path]:
    """The model's ``*.safetensors`` files, or a ``UserInputError`` saying what was found instead."""
    files = sorted(model_dir.glob("*.safetensors"))
    if files:
        return files
    pickled = sorted(p.name for p in model_dir.iterdir() if p.suffix in PICKLE_SUFFIXES)
    if pickled:
        raise UserInputError(
            f"{model_dir}: found only pickled weights ({', '.join(pickled)}); loading pickles can run "
            "arbitrary code, so stylebench reads safetensors only. Convert them once with "
            "safetensors.torch.save_file in a trusted environment.")
    raise UserInputError(f"{model_dir}: no model.safetensors file (expected config.json, "
                         "model.safetensors and tokenizer.json or vocab.txt)")


def weights_digest(files: list[Path]) -> str:
    """SHA-256 of the weight files' bytes (first 16 hex digits), part of the embedder identity."""
    digest = hashlib.sha256()
    for path in files:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 22), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


def tensor_files(model_dir: Path) -> tuple[dict[str, Path], list[Path]]:
    """``({tensor name: file}, files)`` of ``model_dir``'s safetensors checkpoint.

    Raises ``UserInputError`` naming the file when the index is malformed or names a missing file,
    when numbered shards (``-00002-of-00003``) are missing, when a file is unreadable, or (through
    ``safetensors_files``) when only pickles or nothing are found.
    """
    index_path = model_dir / INDEX_NAME
    if index_path.exists():
        index = read_json_file(index_path)
        weight_map = index.get("weight_map") if isinstance(index, dict) else None
        if not isinstance(weight_map, dict) or not weight_map:
            raise UserInputError(f"{index_path}: expected a non-empty 'weight_map' object")
        files = sorted({model_dir / str(name) for name in weight_map.values()})
        for path in files:
            if not path.is_file():
                raise UserInputError(f"{index_path}: names shard {path.name}, which does not exist in "
                                     f"{model_dir}")
    else:
        files = safetensors_files(model_dir)
        _check_numbered_shards(model_dir, files)
        weight_map = None
    where: dict[str, Path] = {}
    for path in files:
        for name in _keys(path):
            if name in where:
                raise UserInputError(f"{path}: tensor {name!r} also stored in {where[name].name}")
            where[name] = path
    if weight_map is not None:
        for name, file_name in weight_map.items():
            if where.get(name) != model_dir / str(file_name):
                raise UserInputError(f"{index_path}: tensor {name!r} is mapped to {file_name}, which does "
                                     "not contain it")
    return where, files


def single_file_tensors(path: Path) -> dict[str, Path]:
    """``{tensor name: path}`` of one safetensors file (e.g. ``1_Pooling/model.safetensors``)."""
    return dict.fromkeys(_keys(path), path)


def _check_numbered_shards(model_dir: Path, files: list[Path]) -> None:
    numbered = [(_SHARD_NAME.search(p.name), p) for p in files]
    numbered = [(int(m.group(1)), int(m.group(2)), p) for m, p in numbered if m]
    if not numbered:
        return
    total = numbered[0][1]
    present = {number for number, _, _ in numbered}
    missing = sorted(set(range(1, total + 1)) - present)
    if missing:
        stem = _SHARD_NAME.sub("", numbered[0][2].name)
        width = len(_SHARD_NAME.search(numbered[0][2].name).group(1))
        name = f"{stem}-{missing[0]:0{width}d}-of-{total:0{width}d}.safetensors"
        raise UserInputError(f"{model_dir / name}: shard missing ({len(present)} of {total} present and no "
                             f"{INDEX_NAME})")


def _keys(path: Path) -> list[str]:
    try:
        with safe_open(str(path), framework="numpy") as handle:
            return list(handle.keys())
    except Exception as error:  # safetensors raises its own error types for corrupt headers
        raise UserInputError(f"{path}: not a readable safetensors file ({error})") from None


@dataclasses.dataclass(frozen=True)
class TensorMap:
    """One PyTorch tensor -> one Flax parameter: ``flax = T[select].reshape(R).transpose(perm)``.

    ``split[d]`` lists the sizes PyTorch axis ``d`` (after ``select``) splits into; ``R`` is their
    concatenation. ``select[d]`` is ``(start, stop)`` or ``None`` for the whole axis. ``torch_shape``
    is the full stored shape config.json implies. ``file`` is set once the name is resolved against
    the checkpoint (``resolve_maps``).
    """

    name: str
    torch_shape: tuple[int, ...]
    split: tuple[tuple[int, ...], ...]
    perm: tuple[int, ...]
    select: tuple[tuple[int, int] | None, ...] = ()
    file: Path | None = None

    @property
    def flax_shape(self) -> tuple[int, ...]:
        flat = [size for sizes in self.split for size in sizes]
        return tuple(flat[p] for p in self.perm)

    def read(self, tensor_slice, index: tuple[slice, ...]) -> np.ndarray:
        """The block ``flax[index]`` read from ``tensor_slice`` (a safetensors ``get_slice`` handle, or
        anything indexable by a tuple of slices).

        Along each PyTorch axis only the needed contiguous range is read when the Flax slice cuts
        just the leading factor of that axis's split (the case of every head/MLP/vocab sharding);
        otherwise the whole axis is read and sliced after the reshape.
        """
        flat = [size for sizes in self.split for size in sizes]
        r_index: list[slice] = [slice(None)] * len(flat)
        for axis, source in enumerate(self.perm):
            r_index[source] = index[axis] if axis < len(index) else slice(None)
        r_index = [slice(*s.indices(size)[:2]) for s, size in zip(r_index, flat)]
        torch_index, block_shape, after = [], [], []
        position = 0
        for d, sizes in enumerate(self.split):
            start = self.select[d][0] if self.select and self.select[d] else 0
            parts = r_index[position:position + len(sizes)]
            inner = math.prod(sizes[1:])
            if all(p.start == 0 and p.stop == s for p, s in zip(parts[1:], sizes[1:])):
                lead = parts[0]
                torch_index.append(slice(start + lead.start * inner, start + lead.stop * inner))
                block_shape += [lead.stop - lead.start, *sizes[1:]]
                after += [slice(None)] * len(sizes)
            else:
                torch_index.append(slice(start, start + math.prod(sizes)))
                block_shape += list(sizes)
                after += parts
            position += len(sizes)
        block = np.asarray(tensor_slice[tuple(torch_index)]).reshape(block_shape)[tuple(after)]
        return block.transpose(self.perm)


def linear_map(name: str, out_sizes, in_sizes, perm) -> TensorMap:
    """A 2-D ``(out, in)`` tensor whose axes split into ``out_sizes`` and ``in_sizes``."""
    shape = (math.prod(out_sizes), math.prod(in_sizes))
    return TensorMap(name, shape, (tuple(out_sizes), tuple(in_sizes)), tuple(perm))


def vector_map(name: str, sizes) -> TensorMap:
    """A 1-D tensor reshaped to ``sizes``."""
    return TensorMap(name, (math.prod(sizes),), (tuple(sizes),), tuple(range(len(sizes))))


def resolve_maps(maps: dict[tuple[str, ...], TensorMap], available: dict[str, Path],
                 prefixes: tuple[str, ...], where: Path, what: str) -> dict[tuple[str, ...], TensorMap]:
    """``maps`` with each name prefixed as stored and its ``file`` set.

    The prefix (e.g. ``model.`` of ``*ForCausalLM`` checkpoints, ``0.auto_model.`` of
    sentence-transformers ones) is the first of ``prefixes`` under which the first map's tensor is
    stored. Raises ``UserInputError`` naming ``where`` and the first tensor that no file holds;
    ``what`` says what the tensors were for (``"a 2-layer qwen2 decoder"``).
    """
    probe = next(iter(maps.values())).name
    prefix = next((p for p in prefixes if p + probe in available), None)
    if prefix is None:
        found = ", ".join(sorted(available)[:3])
        named = ", ".join(repr(p) for p in prefixes if p)
        raise UserInputError(f"{where}: no tensor {probe!r} (under any of the prefixes {named}) for {what}; "
                             f"found e.g. {found}")
    resolved = {}
    for path, tmap in maps.items():
        name = prefix + tmap.name
        if name not in available:
            files = ", ".join(sorted({p.name for p in available.values()}))
            raise UserInputError(f"{where}: weights lack tensor {name!r} for {what} (searched {files})")
        resolved[path] = dataclasses.replace(tmap, name=name, file=available[name])
    return resolved


@contextlib.contextmanager
def open_slices():
    """``get(tmap)`` -> the safetensors slice handle of ``tmap`` (one open file per path), closed on exit."""
    handles: dict[Path, object] = {}

    def get(tmap: TensorMap):
        if tmap.file not in handles:
            handles[tmap.file] = safe_open(str(tmap.file), framework="numpy")
        return handles[tmap.file].get_slice(tmap.name)

    try:
        yield get
    finally:
        handles.clear()


def check_tensor_shapes(maps: dict[tuple[str, ...], TensorMap]) -> None:
    """Every mapped tensor has the shape config.json implies (read from the file headers only)."""
    with open_slices() as get:
        for tmap in maps.values():
            shape = tuple(get(tmap).get_shape())
            if shape != tmap.torch_shape:
                raise UserInputError(f"{tmap.file}: tensor {tmap.name!r} has shape {shape}, config.json "
                                     f"implies {tmap.torch_shape}")


def read_full(tmap: TensorMap, tensor_slice) -> np.ndarray:
    """The whole Flax parameter of ``tmap`` as a NumPy array (host copy)."""
    return tmap.read(tensor_slice, tuple(slice(None) for _ in tmap.flax_shape))
