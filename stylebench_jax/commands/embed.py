"""`stylebench embed`: texts from a file -> float32 ``[N, D]`` ``.npy`` in input order."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from stylebench_jax.commands.common import (
    add_cache_arguments,
    add_data_root_argument,
    add_long_text_arguments,
    add_mesh_argument,
    build_mesh,
    check_cache_dir,
    check_output_file,
    check_positive,
    default_data_root,
)
from stylebench_jax.errors import UserInputError

EPILOG = """\
examples:
  stylebench embed --model minilm --input texts.txt --output emb.npy
  stylebench embed --model minilm --input docs.jsonl --text-field body --output emb.npy \\
      --long-text chunk --mesh data=4,model=2
  stylebench embed --model ./my_model_dir --input texts.txt --output emb.npy --no-cache
  stylebench embed --model ./qwen2.5-3b --input texts.txt --output emb.npy --mesh data=2,model=4 \\
      --dtype bfloat16 --pooling last --prompt "query: "
  stylebench embed --model ./llama3-8b --mesh data=1,model=8 --batch-size 8 --plan-only

A model directory holds a BERT-family encoder or a decoder (Llama, Mistral, Qwen2, Qwen3, GPT-2), told
apart by config.json's model_type. Before any weight is read, the memory per device (parameters and
activations for the mesh and batch) is computed and the run refused when it would not fit;
--plan-only prints that plan and exits.

Texts longer than the model's token budget are split at sentence boundaries, packed into chunks
within the budget, embedded chunk by chunk and mean-pooled (--long-text chunk, ours; --long-text
steb, STEB's exact settings), or cut at the budget (--long-text truncate / steb-truncate). Vectors
are cached by (model identity, settings, text): a second run on the same input runs no encoder
forward pass.
"""


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "embed", help="embed texts from a .txt or .jsonl file into a .npy matrix",
        description="Embed every text of a .txt (one per line) or .jsonl file; write float32 [N, D].",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="minilm",
                        help="'minilm', 'baseline:<name>', a local model directory or a `stylebench "
                             "train` run (its export/) (default: minilm)")
    parser.add_argument("--input", type=Path,
                        help=".txt or .jsonl file of texts (required unless --plan-only)")
    parser.add_argument("--output", type=Path, help="output .npy path (required unless --plan-only)")
    parser.add_argument("--text-field", default=None, help="JSONL field holding the text (default: text)")
    parser.add_argument("--batch-size", type=int, default=64, help="sequences per batch (default: 64)")
    add_long_text_arguments(parser)
    parser.add_argument("--pooling", choices=("mean", "cls", "attention", "last"), default=None,
                        help="pooling: mean, cls or attention (learned weights) for encoders, last or mean "
                             "for decoders (default: the model's sentence-transformers files, else mean for "
                             "encoders and last for decoders)")
    parser.add_argument("--prompt", default=None,
                        help="text put before every input, e.g. 'query: ' (default: the model's "
                             "sentence-transformers default prompt, else none; part of the cache key)")
    parser.add_argument("--dtype", choices=("float32", "bfloat16"), default=None,
                        help="compute dtype (default: float32); bfloat16 runs the matrix products in "
                             "bfloat16 with float32 accumulation, norms and softmax (decoders also store "
                             "their parameters in bfloat16; encoders keep them in float32): faster on "
                             "GPUs/TPUs, slower on CPUs without native bfloat16")
    parser.add_argument("--fused-attention", choices=("auto", "on", "off"), default="auto",
                        help="BERT-family attention on CPU in the fused C++ kernel (float32, head sizes "
                             "divisible by 16): auto uses it whenever it applies and builds, on refuses to "
                             "run without it, off keeps XLA's attention (default: auto)")
    parser.add_argument("--device-memory", default=None, metavar="SIZE",
                        help="memory per device for the memory plan, e.g. 80GB (default: the device's own "
                             "limit; on CPU host RAM divided among the CPU devices)")
    parser.add_argument("--plan-only", action="store_true",
                        help="print the memory plan of --model on --mesh and exit without loading weights")
    add_mesh_argument(parser)
    add_cache_arguments(parser)
    add_data_root_argument(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from stylebench_jax.cache import EmbeddingCache
    from stylebench_jax.data.readers import TEXT_SUFFIXES, MissingField, read_texts
    from stylebench_jax.encoders.base import Embedder
    from stylebench_jax.encoders.memory_plan import parse_bytes
    from stylebench_jax.encoders.registry import resolve_embedder
    from stylebench_jax.fileio import save_npy_atomic
    from stylebench_jax.parallel.distributed import is_primary

    # Every check that needs no model runs first: a bad path never costs a model load or an embedding.
    # --plan-only reads nothing but the model's config.json, so it needs no --input, --output or cache.
    if not args.plan_only:
        for flag, value in (("--input", args.input), ("--output", args.output)):
            if value is None:
                raise UserInputError(f"{flag} is required (unless --plan-only)")
        check_output_file(args.output, "--output", suffix=".npy", inputs=[args.input])
        if args.text_field is not None and Path(args.input).suffix.lower() in TEXT_SUFFIXES:
            raise UserInputError(f"--text-field {args.text_field}: only for a .jsonl input; {args.input} "
                                 "holds one text per line")
    check_positive(args.batch_size, "--batch-size")
    check_positive(args.max_length, "--max-length")
    _check_neural_flags(args)
    device_memory = None if args.device_memory is None else parse_bytes(args.device_memory)
    if not args.no_cache and not args.plan_only:
        check_cache_dir(args.cache_dir)
    mesh = build_mesh(args.mesh)
    plan = _memory_plan(args, mesh, device_memory)
    if args.plan_only:
        if plan is None:
            raise UserInputError(f"--plan-only needs 'minilm' or a model directory, got --model {args.model}")
        print(plan.describe())
    if plan is not None and not plan.fits:
        raise UserInputError(_refusal(plan))
    if args.plan_only:
        return 0
    try:
        texts = read_texts(args.input, text_field=args.text_field or "text")
    except MissingField as error:
        raise UserInputError(f"{error} (choose the field with --text-field)") from None
    model = resolve_embedder(
        args.model, max_length=args.max_length, long_text=args.long_text, batch_size=args.batch_size,
        mesh=mesh, progress=not args.quiet, pooling=args.pooling, prompt=args.prompt, dtype=args.dtype,
        fused_attention={"auto": None, "on": True, "off": False}[args.fused_attention],
        data_root=args.data_root or default_data_root())
    if not isinstance(model, Embedder):
        raise UserInputError(f"{args.model} is a pairwise similarity without vectors; it cannot embed")
    cache = EmbeddingCache(args.cache_dir, enabled=not args.no_cache)
    vectors = cache.embed(model, texts)
    save_npy_atomic(args.output, vectors)  # the primary process only (fileio)
    if not args.quiet and is_primary():
        print(f"wrote {args.output}: {vectors.shape[0]} x {vectors.shape[1]} float32 "
              f"({cache.hits} cached, {cache.misses} embedded)", file=sys.stderr)
    return 0


NEURAL_FLAGS = (("--long-text", "long_text", "chunk"), ("--max-length", "max_length", None),
                ("--pooling", "pooling", None), ("--prompt", "prompt", None), ("--dtype", "dtype", None),
                ("--fused-attention", "fused_attention", "auto"), ("--device-memory", "device_memory", None))


def _check_neural_flags(args: argparse.Namespace) -> None:
    """A neural model's flag given with a baseline is refused, not silently dropped (``eval`` mixes
    both kinds in one run, so there baselines ignore them)."""
    if not args.model.strip().startswith("baseline:"):
        return
    given = [flag for flag, name, default in NEURAL_FLAGS if getattr(args, name) != default]
    if given:
        raise UserInputError(f"{', '.join(given)}: options of neural models; {args.model.strip()} has none "
                             "(a baseline embeds its texts whole, with its own features)")


def _memory_plan(args: argparse.Namespace, mesh, device_memory: int | None):
    """The memory plan of ``--model`` (``None`` for baselines and names that are not model directories,
    which ``resolve_embedder`` then reports)."""
    from stylebench_jax.encoders.memory_plan import plan_memory
    from stylebench_jax.encoders.registry import minilm_dir, train_run_export

    if args.model.startswith("baseline:"):
        return None
    path = minilm_dir() if args.model.strip() == "minilm" else Path(args.model).expanduser()
    if not path.is_dir():
        return None
    name = args.model.strip() if args.model.strip() == "minilm" else path.name
    path = train_run_export(path) or path
    return plan_memory(path, mesh, name=name, batch_size=args.batch_size, max_length=args.max_length,
                       dtype=args.dtype or "float32", device_memory=device_memory)


def _refusal(plan) -> str:
    """The plan's refusal with the flags that would make it fit."""
    remedies = "a larger model axis in --mesh, a smaller --batch-size or --max-length"
    if plan.dtype == "float32":  # decoders: half the parameters and activations; encoders: activations
        remedies += ", or --dtype bfloat16"
    return f"{plan.refusal()}; use {remedies}"
