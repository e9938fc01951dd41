"""`stylebench score`: style similarity of two texts, or of every pair in a JSONL file (seed 003 §6)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from stylebench_jax.commands.common import build_mesh, check_output_file
from stylebench_jax.commands.style_args import (
    add_embedder_arguments,
    add_style_arguments,
    build_embedder,
    check_embedder_arguments,
    embedding_cache,
    style_settings,
)
from stylebench_jax.errors import UserInputError

DESCRIPTION = """\
Style similarity of TEXT_A and TEXT_B (or of every line of --pairs): one embedding per short text,
windows of 14 sentences overlapping by 4 for long texts, all chunk-pair cosines aggregated by mean
or topk_mean. Prints (or writes, one JSON line per pair) {"cosine", "score_0_1", "score_calibrated",
"aggregate", "pairs"}; score_calibrated is null without --calibration. A calibration file is only
applied to the embedder and settings it was fitted with (otherwise the command stops and says
what differs); settings not given on the command line are taken from it.
"""

EPILOG = """\
examples:
  stylebench score --model minilm --calibration runs/calib/minilm/style_calibration.json \\
      "It was a dark and stormy night." "The rain fell in torrents."
  stylebench score --model minilm @excerpt.txt @story.txt
  stylebench score --model minilm --calibration style_calibration.json --pairs pairs.jsonl \\
      --output scores.jsonl

TEXT_A/TEXT_B starting with @ are read from that file (UTF-8). In --pairs files each line is a JSON
object with the two texts (--text-fields, default text1,text2); other fields (ids, labels) are
copied to the output line, the texts are not.
"""


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "score", help="style similarity of two texts or of a JSONL file of pairs (calibrated or raw)",
        description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("texts", nargs="*", default=[], metavar="TEXT", help="TEXT_A TEXT_B (or @file)")
    add_embedder_arguments(parser, model_required=False)
    parser.add_argument("--calibration", type=Path, default=None,
                        help="style_calibration.json of `stylebench calibrate` (adds score_calibrated)")
    parser.add_argument("--pairs", type=Path, default=None, help="JSONL file of text pairs")
    parser.add_argument("--output", type=Path, default=None, help="JSONL output for --pairs")
    parser.add_argument("--text-fields", default="text1,text2",
                        help="the two text fields of --pairs lines (default: text1,text2)")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    add_style_arguments(parser)
    parser.set_defaults(func=run)


def _text(argument: str) -> str:
    if not argument.startswith("@"):
        if not argument.strip():
            raise UserInputError(f"text {argument!r}: expected a non-empty text (or @FILE)")
        return argument
    from stylebench_jax.data.readers import read_text
    from stylebench_jax.fileio import input_file_problem

    path = Path(argument[1:])
    problem = input_file_problem(path)
    if problem is not None:
        raise UserInputError(f"{argument}: {path}: {problem}")
    text = read_text(path)
    if not text.strip():
        raise UserInputError(f"{path}: empty text")
    return text


def _read_pairs(path: Path, fields: tuple[str, str]):
    from stylebench_jax.data.readers import read_jsonl

    rows = read_jsonl(path, keys=fields, blank_lines="skip")
    if not rows:
        raise UserInputError(f"{path}: no pairs")
    a = [row.text(fields[0]) for row in rows]
    b = [row.text(fields[1]) for row in rows]
    extra = [{k: v for k, v in row.data.items() if k not in fields} for row in rows]
    return a, b, extra


def run(args: argparse.Namespace) -> int:
    from stylebench_jax.calibration.files import StyleCalibration
    from stylebench_jax.fileio import write_jsonl_atomic
    from stylebench_jax.similarity import score_pairs

    fields = tuple(f.strip() for f in args.text_fields.split(","))
    if len(fields) != 2 or not all(fields):
        raise UserInputError(f"--text-fields: expected two comma-separated names, got {args.text_fields!r}")
    if args.pairs is not None:
        if args.texts:
            raise UserInputError("give either TEXT_A TEXT_B or --pairs, not both")
        if args.output is None:
            raise UserInputError("--pairs needs --output (a .jsonl path)")
        check_output_file(args.output, "--output", suffix=".jsonl", inputs=[args.pairs])
    elif len(args.texts) != 2:
        raise UserInputError(f"expected two texts TEXT_A TEXT_B (or --pairs FILE), got {len(args.texts)}")
    elif args.output is not None:
        raise UserInputError("--output is for --pairs; two texts print their score")
    check_embedder_arguments(args)
    calibration = StyleCalibration(args.calibration) if args.calibration is not None else None
    settings = style_settings(args, calibration)
    if args.pairs is not None:
        texts_a, texts_b, extra = _read_pairs(args.pairs, fields)
    else:
        texts_a, texts_b, extra = [_text(args.texts[0])], [_text(args.texts[1])], [{}]
    mesh = build_mesh(args.mesh)
    embedder = build_embedder(args.model, args, mesh, progress=not args.quiet and args.pairs is not None)
    if calibration is not None:
        calibration.check_compatible(settings.meta(), embedder.name, embedder.identity)
    cache = embedding_cache(args)
    results = score_pairs(embedder, texts_a, texts_b, settings, embed_fn=cache.embed, calibration=calibration,
                          mesh=mesh)
    if args.pairs is None:
        print(json.dumps(results[0]))
        return 0
    write_jsonl_atomic(args.output, [{**e, **r} for e, r in zip(extra, results)])
    if not args.quiet:
        print(f"stylebench score: {len(results)} pairs -> {args.output} ({cache.hits} cached, {cache.misses} "
              "embedded)", file=sys.stderr)
    return 0
