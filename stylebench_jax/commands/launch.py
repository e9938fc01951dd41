"""`stylebench launch PROFILE [ACTION] [key=value ...]`: run a command on a TPU pod slice, a SLURM
cluster or N local processes, as a launch profile (configs/launch/*.yaml) describes."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shlex
import subprocess
import sys
from pathlib import Path

DESCRIPTION = """\
Run the stylebench command a launch profile names as one jax.distributed job, through the scripts
in launch/ (tpu_pod.sh, slurm.sbatch, multiprocess_cpu.sh): every process runs the same command,
process 0 writes the results.

PROFILE is a YAML file (configs/launch/*.yaml) checked against the schema in
stylebench_jax/parallel/launch.py before anything runs, the profile's command included (its flags are
parsed by that command's own parser); key=value arguments override it (e.g. slurm.nodes=4
tpu_pod.name=my-pod).

ACTION depends on the profile's target:
  tpu_pod  create | copy | install | run | fetch | delete (no default: name one)
  slurm    submit (default): sbatch with the profile's nodes, GPUs and time
  cpu      run (default): N processes on 127.0.0.1 (the multi-host code paths on one machine)
"""

EPILOG = """\
examples:
  stylebench launch configs/launch/tpu_v4_32.yaml create
  stylebench launch configs/launch/tpu_v4_32.yaml copy
  stylebench launch configs/launch/tpu_v4_32.yaml install
  stylebench launch configs/launch/tpu_v4_32.yaml run --dry-run
  stylebench launch configs/launch/slurm_2x8_h100.yaml slurm.partition=gpu --dry-run
  stylebench launch configs/launch/cpu_2_processes.yaml

Resume: launch the same profile again; finished cells and the last training checkpoint are kept.

Every process reads its own copy of the config, data and models: put them, and the output
directory, on a file system every host sees (train refuses to start when a process's copy differs
or a process does not see the run directory). trainer.batch_size is the global batch, split over
every device of every process; the learning rate is not rescaled. Process 0 writes results, logs
and progress; the others log to stylebench-process-N.log in $STYLEBENCH_LOG_DIR or $TMPDIR (on a
TPU pod, where N is known only after start-up, stylebench-process-HOST-PID.log). Timeouts:
$STYLEBENCH_INIT_TIMEOUT (start-up, 300 s), $STYLEBENCH_HEARTBEAT_TIMEOUT (a lost process, 30 s),
$STYLEBENCH_COLLECTIVE_TIMEOUT (a stuck one, CPU only, 600 s). For slurm, `bash launch/slurm.sbatch
--dry-run CMD` shows each task's environment.
"""


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "launch", help="run a command on a TPU pod, a SLURM cluster or N local processes (launch profile)",
        description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("profile", type=Path, help="launch profile YAML (configs/launch/*.yaml)")
    parser.add_argument("overrides", nargs="*", default=[], metavar="[ACTION] key=value",
                        help="the action (see above), then config overrides")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the commands that would run; create, submit or run nothing")
    parser.set_defaults(func=run, no_cache=True)


def launch_dir() -> Path:
    """``launch/`` of the checkout this package runs from (the scripts are not part of a wheel)."""
    from stylebench_jax.errors import UserInputError

    folder = Path(__file__).resolve().parents[2] / "launch"
    if not (folder / "tpu_pod.sh").is_file():
        raise UserInputError(f"launch scripts not found in {folder}: `stylebench launch` runs from a "
                             "checkout of stylebench_jax (git clone), not from an installed wheel")
    return folder


def check_command(profile_path: Path, overrides: list[str], profile) -> None:
    """Parse the profile's command with the CLI's own parser: a typo fails here, not on the cluster."""
    from stylebench_jax.cli import build_parser
    from stylebench_jax.config import InvalidField, locate_field
    from stylebench_jax.parallel.launch import LaunchProfile

    if profile.command[0] == "launch":
        error = InvalidField("command[0]", "a launch profile cannot launch `stylebench launch`")
        raise locate_field(profile_path, LaunchProfile, overrides, error)
    messages = io.StringIO()
    try:
        with contextlib.redirect_stderr(messages), contextlib.redirect_stdout(io.StringIO()):
            build_parser().parse_args(list(profile.command))
    except SystemExit as stop:
        if stop.code:
            lines = [line for line in messages.getvalue().splitlines() if line.strip()]
            reason = lines[-1] if lines else "not a valid stylebench command"
            error = InvalidField("command", f"`stylebench {shlex.join(profile.command)}`: {reason}")
            raise locate_field(profile_path, LaunchProfile, overrides, error) from None


def run(args: argparse.Namespace) -> int:
    from stylebench_jax.config import load_config
    from stylebench_jax.errors import InvalidOption
    from stylebench_jax.parallel.launch import ACTIONS, LaunchProfile, default_action, launcher_argv

    words = list(args.overrides)
    action = words.pop(0) if words and "=" not in words[0] else None
    profile = load_config(args.profile, LaunchProfile, words)
    action = action or default_action(profile)
    if action is None:
        raise InvalidOption("action", f"target {profile.target!r} needs an action: "
                                      f"{' | '.join(ACTIONS[profile.target])}")
    try:  # launcher_argv checks the action against the target before the command is parsed
        argv = launcher_argv(profile, action, launch_dir(), dry_run=args.dry_run)
    except ValueError as error:
        raise InvalidOption("action", str(error).removeprefix("action: ")) from None
    check_command(args.profile, words, profile)
    if args.dry_run and profile.target == "slurm":  # sbatch has no dry run of its own: show its line
        print(shlex.join(argv))
        return 0
    print(f"stylebench launch: {shlex.join(argv)}", file=sys.stderr)
    # multiprocess_cpu.sh and slurm.sbatch start `$PYTHON -m stylebench_jax.cli`: this interpreter, not
    # PATH's python3 (sbatch passes the environment on to the job)
    return subprocess.run(argv, env={**os.environ, "PYTHON": sys.executable}).returncode
