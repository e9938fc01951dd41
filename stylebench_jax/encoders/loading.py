"""Read a local model directory and put its parameters on the mesh, sharded by a rules table.

Shared by the embedders (``encoders.neural``: BERT-family encoders and causal decoders) and the
trainer: parameters are never placed "by hand". A module's abstract parameter tree (``jax.eval_shape``
of its ``init``) carries logical axis names; a rules table (``parallel.DEFAULT_RULES``,
``parallel.DECODER_RULES``) maps them to mesh axes, which gives one ``NamedSharding`` per parameter
(dimensions that do not divide their mesh axis are replicated, ``parallel.fitted_shardings``).

- ``init_params``: new parameters, created already sharded (``jax.jit(init, out_shardings=...)``, as
  big_vision and MaxText do);
- ``load_params``: parameters of a checkpoint, each device shard read straight from the safetensors
  files (``checkpoint.TensorMap.read`` through ``jax.make_array_from_callback``): only the rows and
  columns a shard needs are read, and no device ever receives more than its shard, so a model split
  over ``model=8`` never sits whole on the host;
- ``place_params``: a parameter tree already on the host (NumPy), checked against the module's shapes
  and put on the mesh with the same shardings (``jax.device_put`` transfers each device its shard).

Directory layout read here (Hugging Face / sentence-transformers): ``config.json``, ``*.safetensors``
or ``model-0000k-of-0000n.safetensors`` + ``model.safetensors.index.json`` (pickles refused,
``encoders.checkpoint``), ``tokenizer.json``, a SentencePiece model or ``vocab.txt``
(``encoders.tokenizer.load_tokenizer``), and optionally ``sentence_bert_config.json`` (max length),
``modules.json`` (normalisation; the Pooling module's folder), that folder's ``config.json`` (pooling)
and ``config_sentence_transformers.json`` (default prompt).
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from stylebench_jax.encoders.checkpoint import (
    TensorMap,
    check_tensor_shapes,
    open_slices,
    single_file_tensors,
    tensor_files,
    weights_digest,
)
from stylebench_jax.encoders.config import SUPPORTED_MODEL_TYPES, EncoderConfig
from stylebench_jax.encoders.decoder_config import DECODER_MODEL_TYPES, DecoderConfig
from stylebench_jax.encoders.decoder_weights import decoder_tensor_maps
from stylebench_jax.encoders.pooling import DECODER_POOLING_MODES, POOLING_MODES
from stylebench_jax.encoders.tokenizer import load_tokenizer, read_tokenizer_config
from stylebench_jax.encoders.weights import (
    POOLING_WEIGHTS,
    PROJECTION_DIR,
    attention_pooling_maps,
    bert_tensor_maps,
    check_shapes,
    projection_maps,
)
from stylebench_jax.errors import UserInputError, located
from stylebench_jax.fileio import read_json_file
from stylebench_jax.parallel import DEFAULT_RULES, fitted_shardings, logical_shardings

SAMPLE_LENGTH = 8  # sequence length of the dummy input that traces ``init`` (parameters do not depend on it)
# compute dtypes by name (decoders store their parameters in it too)
DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}
# sentence-transformers' Pooling keys -> our pooling names ("pooling_mode_attention" is ours, encoders.export)
ST_POOLING = {"pooling_mode_cls_token": "cls", "pooling_mode_mean_tokens": "mean",
              "pooling_mode_lasttoken": "last", "pooling_mode_attention": "attention"}
# sentence-transformers 5's one key, ``"pooling_mode": "cls"`` (or a list of names), in the same terms
ST5_POOLING = {"cls": "pooling_mode_cls_token", "mean": "pooling_mode_mean_tokens",
               "lasttoken": "pooling_mode_lasttoken", "max": "pooling_mode_max_tokens",
               "mean_sqrt_len_tokens": "pooling_mode_mean_sqrt_len_tokens",
               "weightedmean": "pooling_mode_weightedmean_tokens"}
# modules.json entries we run: the transformer, its pooling, normalisation and our projection head
# (matched by the class name that ends the type: "sentence_transformers.models.Pooling" and 5.x's
# "sentence_transformers.sentence_transformer.modules.pooling.Pooling" alike)
ST_MODULES = ("Transformer", "Pooling", "Normalize", "Projection")
TOKENIZER_VERY_LARGE = 100_000  # a tokenizer's model_max_length above this means "not set" (Hugging Face)

ParamPath = tuple[str, ...]  # a parameter's place in the tree: ("encoder", "layer_0", "output", "kernel")


# ----------------------------------------------------------------------------- directory
def check_model_dir(model_dir: Path) -> None:
    """``UserInputError`` unless ``model_dir`` is a directory with a ``config.json``."""
    if not model_dir.exists():
        raise UserInputError(f"{model_dir}: model directory not found")
    if not model_dir.is_dir():
        raise UserInputError(f"{model_dir}: expected a model directory, found a file")
    if not (model_dir / "config.json").is_file():
        raise UserInputError(f"{model_dir}: no config.json (expected a Hugging Face model directory)")


def model_family(model_dir: str | Path) -> str:
    """``"encoder"`` (BERT family) or ``"decoder"`` from ``config.json``'s ``model_type``;
    ``UserInputError`` naming the file when it is missing, not JSON or names an architecture we do not
    implement."""
    model_dir = Path(model_dir)
    check_model_dir(model_dir)
    path = model_dir / "config.json"
    raw = read_json_file(path)
    model_type = raw.get("model_type", "bert") if isinstance(raw, dict) else None
    if model_type in DECODER_MODEL_TYPES:
        return "decoder"
    if model_type in SUPPORTED_MODEL_TYPES:
        return "encoder"
    raise located(path, f"model_type {model_type!r} is not supported (BERT family: "
                        f"{', '.join(SUPPORTED_MODEL_TYPES)}; decoders: {', '.join(DECODER_MODEL_TYPES)})",
                  field="model_type")


def sentence_transformers_defaults(model_dir: Path, pooling_modes: tuple[str, ...] = POOLING_MODES) -> dict:
    """Max length, normalisation, pooling, prompt and (ours) projection width from sentence-transformers'
    files, those present.

    The Pooling module's folder comes from ``modules.json`` (``1_Pooling`` when it does not say). Its
    config must switch on exactly one pooling among ``pooling_modes``: combined or other modes (max,
    weighted mean, CLS for a decoder...) and ``include_prompt: false`` are refused, naming the file,
    rather than silently embedding differently from what the model card promises. The prompt is
    ``config_sentence_transformers.json``'s ``prompts[default_prompt_name]``.
    """
    defaults: dict = {}
    st_path = model_dir / "sentence_bert_config.json"
    st_config = read_json_file(st_path, {})
    if isinstance(st_config, dict) and st_config.get("max_seq_length") is not None:
        defaults["max_length"] = int(st_config["max_seq_length"])
    if isinstance(st_config, dict) and st_config.get("do_lower_case"):
        defaults["lowercase"] = True  # sentence-transformers lowercases every text before tokenising
    # sentence-transformers 5 keeps the length as the tokenizer's model_max_length; older versions
    # without max_seq_length take min(positions, model_max_length): the same min, applied by
    # ``chosen_max_length`` where the position table is known
    limit = read_tokenizer_config(model_dir).get("model_max_length")
    if isinstance(limit, int) and not isinstance(limit, bool) and 0 < limit <= TOKENIZER_VERY_LARGE:
        defaults["tokenizer_max_length"] = limit
    modules = read_json_file(model_dir / "modules.json", [])
    pooling_dir = "1_Pooling"
    if isinstance(modules, list) and modules:
        modules = [m for m in modules if isinstance(m, dict)]
        for module in modules:
            kind = str(module.get("type", "")).rsplit(".", 1)[-1]
            if kind not in ST_MODULES:
                raise UserInputError(f"{model_dir / 'modules.json'}: module {module.get('type')!r} "
                                     f"({module.get('path') or 'no path'}) is not supported; expected only "
                                     f"{', '.join(ST_MODULES[:3])} modules (and this package's projection)")
        defaults["normalize"] = any("Normalize" in str(m.get("type", "")) for m in modules)
        if any(m.get("path") == PROJECTION_DIR for m in modules):  # ours (encoders.export): Writing7's head
            projection = read_json_file(model_dir / PROJECTION_DIR / "config.json", {})
            if not isinstance(projection, dict) or not isinstance(projection.get("out_features"), int):
                raise UserInputError(f"{model_dir / PROJECTION_DIR / 'config.json'}: expected an object with "
                                     "an integer out_features")
            defaults["projection_dim"] = projection["out_features"]
        pooling_dir = next((m["path"] for m in modules
                            if "Pooling" in str(m.get("type", "")) and m.get("path")), pooling_dir)
    pooling_path = model_dir / pooling_dir / "config.json"
    pooling = read_json_file(pooling_path, {})
    if isinstance(pooling, dict):
        modes = [key for key, value in pooling.items() if key.startswith("pooling_mode_") and value]
        named = pooling.get("pooling_mode")
        if named is not None:  # sentence-transformers 5
            names = [named] if isinstance(named, str) else named
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise UserInputError(f"{pooling_path}: pooling_mode: expected a name or a list of names, "
                                     f"found {named!r}")
            modes += [ST5_POOLING.get(n, n) for n in names]
        if modes:
            known = [key for key, name in ST_POOLING.items() if name in pooling_modes]
            if len(modes) != 1 or modes[0] not in known:
                raise UserInputError(f"{pooling_path}: pooling {modes} is not supported for this model "
                                     f"(expected exactly one of {', '.join(known)})")
            defaults["pooling"] = ST_POOLING[modes[0]]
        if pooling.get("include_prompt", True) is False:
            raise UserInputError(f"{pooling_path}: include_prompt false (prompt tokens left out of the "
                                 "pooling) is not supported")
    prompts_path = model_dir / "config_sentence_transformers.json"
    prompts_config = read_json_file(prompts_path, {})
    prompt_name = prompts_config.get("default_prompt_name") if isinstance(prompts_config, dict) else None
    if prompt_name:
        prompts = prompts_config.get("prompts") or {}
        if prompt_name not in prompts:
            raise located(prompts_path, f"default_prompt_name {prompt_name!r} is not a key of 'prompts'")
        defaults["prompt"] = prompts[prompt_name]
    return defaults


@dataclasses.dataclass(frozen=True)
class EncoderFiles:
    """What a local model directory holds, read and checked; weights not read yet, only their headers.

    ``tensors``: ``{parameter path: TensorMap}`` for every parameter the checkpoint provides (resolved
    names and files, shapes checked against ``config.json``); ``load_params`` reads them.
    """

    model_dir: Path
    config: EncoderConfig | DecoderConfig
    tokenizer: Any  # TextTokenizer or SentencePieceTokenizer
    tensors: dict[ParamPath, TensorMap]
    weights_digest: str
    defaults: dict  # pooling, normalize, max_length, prompt, projection_dim (those the directory sets)

    @functools.cached_property
    def host_params(self) -> dict:
        """Every parameter the checkpoint provides as one NumPy tree on the host (read on first use;
        the whole model in host memory; ``load_params`` reads straight into device shards instead)."""
        params: dict = {}
        with open_slices() as get:
            for path, tmap in self.tensors.items():
                node = params
                for key in path[:-1]:
                    node = node.setdefault(key, {})
                node[path[-1]] = np.ascontiguousarray(
                    tmap.read(get(tmap), tuple(slice(None) for _ in tmap.flax_shape)), dtype=np.float32)
        return params


def _lowercasing(tokenizer, defaults: dict, model_dir: Path):
    """``tokenizer``, lowercasing first when ``sentence_bert_config.json`` says ``do_lower_case``."""
    if not defaults.get("lowercase"):
        return tokenizer
    if not hasattr(tokenizer, "lowercased"):
        raise UserInputError(f"{model_dir / 'sentence_bert_config.json'}: do_lower_case true is implemented "
                             "for tokenizer.json / vocab.txt tokenizers, not SentencePiece models")
    return tokenizer.lowercased()


def read_encoder_dir(model_dir: str | Path) -> EncoderFiles:
    """Config, tokenizer, tensor maps and sentence-transformers defaults of a BERT-family directory
    (every problem a ``UserInputError`` naming the file). A learned attention pooling
    (``1_Pooling/model.safetensors``) is included when the pooling config asks for it."""
    model_dir = Path(model_dir)
    check_model_dir(model_dir)
    config = EncoderConfig.from_json(model_dir / "config.json")
    tokenizer = load_tokenizer(model_dir)
    defaults = sentence_transformers_defaults(model_dir, POOLING_MODES)
    tokenizer = _lowercasing(tokenizer, defaults, model_dir)
    where, files = tensor_files(model_dir)
    tensors = bert_tensor_maps(config, where, model_dir)
    if defaults.get("pooling") == "attention":
        pooling_file = model_dir / POOLING_WEIGHTS
        if not pooling_file.is_file():
            raise UserInputError(f"{pooling_file}: file not found; 1_Pooling/config.json asks for learned "
                                 "attention pooling, whose weights live there")
        tensors.update(attention_pooling_maps(config, single_file_tensors(pooling_file), pooling_file))
        files = [*files, pooling_file]
    if "projection_dim" in defaults:
        projection_file = model_dir / PROJECTION_DIR / "model.safetensors"
        if not projection_file.is_file():
            raise UserInputError(f"{projection_file}: file not found; modules.json lists a projection head")
        available = single_file_tensors(projection_file)
        tensors.update(projection_maps(config, defaults["projection_dim"], available, projection_file))
        files = [*files, projection_file]
    check_tensor_shapes(tensors)
    return EncoderFiles(model_dir, config, tokenizer, tensors, weights_digest(files), defaults)


def read_decoder_dir(model_dir: str | Path) -> EncoderFiles:
    """The same for a causal decoder (Llama, Mistral, Qwen2, Qwen3, GPT-2); its LM head is not mapped."""
    model_dir = Path(model_dir)
    check_model_dir(model_dir)
    config = DecoderConfig.from_json(model_dir / "config.json")
    tokenizer = load_tokenizer(model_dir)
    defaults = sentence_transformers_defaults(model_dir, DECODER_POOLING_MODES)
    tokenizer = _lowercasing(tokenizer, defaults, model_dir)
    if "projection_dim" in defaults:
        raise UserInputError(f"{model_dir / 'modules.json'}: lists a projection head ({PROJECTION_DIR}), "
                             "which is implemented for BERT-family encoders only")
    where, files = tensor_files(model_dir)
    tensors = decoder_tensor_maps(config, where, model_dir)
    check_tensor_shapes(tensors)
    return EncoderFiles(model_dir, config, tokenizer, tensors, weights_digest(files), defaults)


# ----------------------------------------------------------------------------- parameters on the mesh
def _sample_inputs() -> tuple[jax.Array, jax.Array]:
    dummy = jnp.zeros((1, SAMPLE_LENGTH), jnp.int32)
    return dummy, jnp.ones_like(dummy)


def abstract_params(module: nn.Module) -> Any:
    """The module's parameter tree as ``ShapeDtypeStruct`` leaves boxed with logical axis names
    (``jax.eval_shape`` of ``init``: nothing is allocated)."""
    return jax.eval_shape(module.init, jax.random.key(0), *_sample_inputs())["params"]


def param_shardings(module: nn.Module, mesh: Mesh, rules=DEFAULT_RULES) -> Any:
    """One ``NamedSharding`` per parameter of ``module`` (logical names mapped by ``rules``)."""
    return logical_shardings(abstract_params(module), mesh, rules)


def replicated_dims(module: nn.Module, mesh: Mesh, rules=DEFAULT_RULES) -> list[str]:
    """The parameter dimensions ``rules`` would split but that do not divide their mesh axis (so are
    replicated), e.g. ``"['decoder']['layers_0']['self_attn']['k_proj']['kernel']: dim 1 (size 2)
    replicated, not divisible by model=4"``."""
    return fitted_shardings(abstract_params(module), mesh, rules)[1]


def init_params(module: nn.Module, rng: jax.Array, mesh: Mesh, rules=DEFAULT_RULES, *,
                skip: tuple[tuple[str, ...], ...] = ()) -> Any:
    """Fresh parameters, created sharded: ``jax.jit(init, out_shardings=...)`` so no device ever
    holds a full copy of a parameter it only needs a shard of.

    ``skip``: paths of subtrees the caller fills from a checkpoint, e.g. ``(("embedder", "encoder"),)``;
    they are left out of the result. Being no output of the program, their random initialisers
    are dropped by XLA before code generation (for a trainer whose encoder is pretrained, the
    threefry of every encoder weight was most of the init's compile time); the other parameters
    get the same values as without ``skip`` (flax derives each one's key from its path)."""
    shardings = _without(param_shardings(module, mesh, rules), skip)

    def init(key):
        return _without(nn.unbox(module.init(key, *_sample_inputs())["params"]), skip)

    return jax.jit(init, out_shardings=shardings)(rng)


def _without(tree: dict, paths: tuple[tuple[str, ...], ...]) -> dict:
    """``tree`` (nested dicts) less the subtree at each of ``paths`` (new dicts along the paths)."""
    for path in paths:
        tree = _drop(tree, path)
    return tree


def _drop(tree: dict, path: tuple[str, ...]) -> dict:
    head, rest = path[0], path[1:]
    if head not in tree:
        raise KeyError(f"no parameter subtree {head!r} (of {'/'.join(path)})")
    out = dict(tree)
    if rest:
        out[head] = _drop(tree[head], rest)
    else:
        del out[head]
    return out


def place_params(host_params: Any, module: nn.Module, mesh: Mesh, rules=DEFAULT_RULES) -> Any:
    """Check ``host_params`` (NumPy tree) against the module's shapes and put each parameter on the
    mesh with its sharding. A shape that differs names the parameter and both shapes."""
    abstract = abstract_params(module)
    check_shapes(host_params, nn.unbox(abstract))
    return jax.device_put(host_params, logical_shardings(abstract, mesh, rules))


def load_params(tensors: dict[ParamPath, TensorMap], module: nn.Module, mesh: Mesh,
                rules=DEFAULT_RULES) -> dict:
    """The module's parameters read from the checkpoint, each a ``jax.Array`` in its sharding.

    ``tensors``: ``EncoderFiles.tensors`` (maps for parameters the module lacks, e.g. a learned
    pooling the caller chose not to use, are ignored). Each device shard is read from the files
    straight into that shard's block (``TensorMap.read``) and cast to the module's parameter dtype;
    replicas of one block reuse a single read, released once the parameter is placed.
    """
    abstract = abstract_params(module)
    shapes = _flatten(nn.unbox(abstract))
    shardings = _flatten(logical_shardings(abstract, mesh, rules))
    missing = sorted(set(shapes) - set(tensors))
    if missing:  # a module parameter without a tensor map is a bug in the family's table, not bad input
        raise ValueError(f"no tensor map for parameters {missing[:3]}")
    params: dict = {}
    with open_slices() as get:
        for path, shape in shapes.items():
            tmap = tensors[path]
            if tmap.flax_shape != tuple(shape.shape):
                raise ValueError(f"tensor map of {path} gives shape {tmap.flax_shape}, the module expects "
                                 f"{tuple(shape.shape)}")
            node = params
            for key in path[:-1]:
                node = node.setdefault(key, {})
            node[path[-1]] = _sharded_array(tmap, get(tmap), shape.dtype, shardings[path])
    return params


def _sharded_array(tmap: TensorMap, tensor_slice, dtype, sharding) -> jax.Array:
    blocks: dict[tuple, np.ndarray] = {}
    shape = tmap.flax_shape

    def callback(index: tuple[slice, ...]) -> np.ndarray:
        key = tuple(s.indices(n)[:2] for s, n in zip(index, shape))
        if key not in blocks:
            blocks[key] = np.ascontiguousarray(tmap.read(tensor_slice, index), dtype=dtype)
        return blocks[key]

    return jax.make_array_from_callback(shape, sharding, callback)


def _flatten(tree: dict, prefix: ParamPath = ()) -> dict[ParamPath, Any]:
    """``{("a", "b"): leaf}`` for a nested dict, in the dict's own order."""
    out = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out.update(_flatten(value, (*prefix, key)))
        else:
            out[(*prefix, key)] = value
    return out

