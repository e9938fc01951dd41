"""`stylebench` entry point: parses arguments and calls library functions.

Each subcommand lives in ``stylebench_jax/commands/<name>.py`` and exposes
``register(subparsers)``, which adds its parser and sets ``func(args) -> int``. Errors a user can
fix (``UserInputError``) print one line to stderr and exit with code 2, without a traceback; an
``InvalidOption`` raised by library code (which names the parameter, e.g. ``max_length``) is
reported as the subcommand's own flag (``--max-length``).
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
import traceback

from stylebench_jax import __version__
from stylebench_jax.errors import InvalidOption, UserInputError
from stylebench_jax.parallel import distributed
from stylebench_jax.runtime import enable_compilation_cache, tune_malloc

COMMANDS = ("embed", "cache", "search", "eval", "train", "prepare-pairs", "raven", "data", "calibrate",
            "score", "transfer", "launch")

DESCRIPTION = """\
stylebench: benchmark and search style text embeddings (authorship, register, formality, AI-text
provenance) with JAX/Flax on CPU, GPU or TPU meshes.

Common commands:
  stylebench embed --model minilm --input texts.txt --output emb.npy
  stylebench search --queries q.npy --candidates c.npy --k 100 --output hits.jsonl
  stylebench eval --models minilm,baseline:char3gram --suite quick --output runs/quick
  stylebench prepare-pairs configs/pairs/novels.yaml [key=value ...]
  stylebench train configs/train/minilm_writing7.yaml --output runs/train/minilm
  stylebench raven --config configs/raven/bible.yaml --output runs/raven-bible
  stylebench data build configs/data/authbench_en.yaml
  stylebench launch configs/launch/slurm_2x8_h100.yaml --dry-run
  stylebench cache info | stylebench cache clean | stylebench cache clear

Run `stylebench COMMAND --help` for the options of each command.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stylebench", description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"stylebench {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"stylebench_jax.commands.{name.replace('-', '_')}").register(subparsers)
    return parser


def _subparser(parser: argparse.ArgumentParser, command: str | None) -> argparse.ArgumentParser | None:
    """The parser of subcommand ``command`` (None when there is none)."""
    subparsers = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    return subparsers.choices.get(command) if subparsers is not None and command else None


def _flag(parser: argparse.ArgumentParser, command: str | None, option: str) -> str:
    """The flag of ``command`` whose destination is ``option`` (``max_length`` -> ``--max-length``),
    else the option name itself (an option set in a config file, not on the command line)."""
    sub = _subparser(parser, command)
    for action in (sub._actions if sub is not None else ()):
        if action.dest == option and action.option_strings:
            return action.option_strings[-1]
    return option


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    # key=value overrides (and `launch`'s action) may come after flags (`train run.yaml --output R
    # trainer.steps=5`): argparse binds a trailing positional list before the flags, so the later ones
    # arrive here; the config loader names any word that is not key=value.
    if unknown and isinstance(getattr(args, "overrides", None), list) \
            and not any(item.startswith("-") for item in unknown):
        args.overrides = [*args.overrides, *unknown]
    elif unknown:  # the subcommand's parser: its usage line and its name in the message
        (_subparser(parser, getattr(args, "command", None)) or parser).error(
            f"unrecognized arguments: {' '.join(unknown)}")
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    distributed.guard_output()  # multi-process only: one clear line if the runtime aborts
    if not distributed.requested():
        return _run(parser, args)
    # One of several processes: a failure leaves at once (os._exit). A normal exit would wait in
    # JAX's shutdown barrier for peers still at work (~5 minutes) and then report that barrier
    # instead of the error; leaving makes the peers fail within the heartbeat timeout.
    try:
        code = _run(parser, args)
    except SystemExit as error:
        code = error.code if isinstance(error.code, int) else 1
    except BaseException:
        traceback.print_exc()
        code = 1
    if code:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """The command, its expected failures as one line and an exit code (2: bad input)."""
    try:
        distributed.maybe_initialize()
        if not getattr(args, "no_cache", False):
            enable_compilation_cache(getattr(args, "cache_dir", None))
        return int(args.func(args) or 0)
    except InvalidOption as error:
        print(f"stylebench {args.command}: error: {_flag(parser, args.command, error.option)}: "
              f"{error.message}", file=sys.stderr)
        return 2
    except UserInputError as error:
        print(f"stylebench {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"stylebench {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (`stylebench ... | head`): stop quietly like other Unix tools; point
        # stdout at /dev/null so the interpreter's final flush does not raise again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a pipe writer killed by it
    except OSError as error:
        # a file or folder that cannot be written (no permission, read-only or full file system):
        # the user's to fix, one line, whichever write found it (outputs are checked before the work,
        # but a place can change during it)
        if error.errno not in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT) \
                or not error.filename or distributed.peer_failure(error):
            raise
        print(f"stylebench {args.command}: error: {error.filename}: {error.strerror}", file=sys.stderr)
        return 2
    except Exception as error:
        if distributed.peer_failure(error):  # a peer died or hung inside a collective
            distributed.exit_after_failure(args.command, error)
        raise


# Commands whose process gets runtime.tune_malloc: where it is measured to pay (a MiniLM train step
# on the 2-core EPYC: 510,000 -> 0 page faults, ~18% less time). Not embed/search/eval: no gain
# measured on top-k (10^5 rows: within noise) and the memory it keeps would defeat their budgets
# (bench_topk's peak RSS 1.0 -> 3.2 GB). Only where JAX will run on the CPU (tune_malloc checks).
TUNED_MALLOC_COMMANDS = frozenset({"train"})


def entry() -> int:
    """The ``stylebench`` executable (and ``python -m stylebench_jax.cli``): for the commands of
    ``TUNED_MALLOC_COMMANDS`` the allocator settings of ``runtime.tune_malloc`` first (before JAX
    starts its threads), then :func:`main`. Callers of :func:`main` (tests, scripts) keep theirs."""
    command = next((word for word in sys.argv[1:] if not word.startswith("-")), None)
    if command in TUNED_MALLOC_COMMANDS:
        tune_malloc()
    return main()


if __name__ == "__main__":
    sys.exit(entry())
