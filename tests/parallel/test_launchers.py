"""The launch scripts: syntax (bash -n, shellcheck when installed) and the commands --dry-run prints."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
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
    assert "pip install --user -e ." in shlex.split(install)[-1]
    assert "jax[tpu]==$(python3 -c 'import jax; print(jax.__version__)')" in shlex.split(install)[-1]
    (run,) = dry_run("tpu_pod.sh", *pod, "run", "pod1", "us-central2-b", "eval", "--suite", "my suite")
    words = shlex.split(run)
    assert words[:6] + words[6:-2] == ["gcloud", "compute", "tpus", "tpu-vm", "ssh", "pod1", *where,
                                       "--worker=all"]
    remote = words[-1]
    assert remote.startswith("cd ~/stylebench_jax && STYLEBENCH_DISTRIBUTED=1 python3 -m stylebench_jax.cli ")
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
    *environment, srun = dry_run("slurm.sbatch", "--dry-run", "eval", "--suite", "a b")
    assert environment == ["STYLEBENCH_DISTRIBUTED=1", "JAX_COORDINATOR_ADDRESS=HEAD_NODE:12355",
                           "JAX_NUM_PROCESSES=NTASKS", "STYLEBENCH_LOCAL_DEVICE_IDS=0,1,2,3,4,5,6,7"]
    words = shlex.split(srun)
    assert words[:3] == ["srun", "bash", "-c"]
    assert re.search(r"JAX_PROCESS_ID=\$SLURM_PROCID exec python3 -m stylebench_jax.cli", words[3])
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
                               "SLURM_NTASKS_PER_NODE": "8", "SLURM_GPUS_ON_NODE": "8"})
    assert done.returncode == 0, done.stderr
    *environment, srun = done.stdout.splitlines()
    assert environment == ["STYLEBENCH_DISTRIBUTED=1", "JAX_COORDINATOR_ADDRESS=node07:9999",
                           "JAX_NUM_PROCESSES=16"]  # JAX picks GPU SLURM_LOCALID for each task
    assert shlex.split(srun)[-2:] == ["train", "c.yaml"]


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
