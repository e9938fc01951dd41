"""Launch profiles: where and how a `stylebench` command runs as one ``jax.distributed`` job.

A profile (YAML in ``configs/launch/``, read by ``stylebench_jax.config.load_config`` with
``key=value`` overrides) names a *target* and the command every process runs; ``stylebench launch
PROFILE [ACTION]`` turns it into the command line of the matching script in ``launch/``, which stays
the one place that knows gcloud, sbatch and the JAX environment variables::

    target: slurm                    # tpu_pod | slurm | cpu
    command: [train, configs/train/minilm_writing7.yaml, --output, runs/train/minilm]
    slurm: {nodes: 2, gpus_per_node: 8, processes: per_node, time: "04:00:00", partition: gpu,
            exclusive: true}

- ``tpu_pod``: ``launch/tpu_pod.sh ACTION NAME ZONE ...`` with ACTION one of ``create`` (the slice of
  ``tpu_pod.accelerator``), ``copy``, ``install``, ``run`` (``command`` on every worker), ``fetch``
  (``fetch`` from worker 0 into ``fetch_to``) and ``delete``;
- ``slurm``: ``sbatch --nodes N --ntasks-per-node T --gpus-per-node G ... launch/slurm.sbatch CMD``
  (T = 1 for ``processes: per_node``, G for ``per_gpu``);
- ``cpu``: ``launch/multiprocess_cpu.sh --devices D N CMD`` (N local processes on 127.0.0.1).

Only the section of the chosen target may be present, so a profile cannot silently carry settings
that do nothing. The command's own flags are checked by the caller (``commands/launch.py`` parses
them with the CLI's parser) before anything is created or submitted.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Literal

from stylebench_jax.config import InvalidField

TARGETS = ("tpu_pod", "slurm", "cpu")
TPU_ACTIONS = ("create", "copy", "install", "run", "fetch", "delete")
ACTIONS = {"tpu_pod": TPU_ACTIONS, "slurm": ("submit",), "cpu": ("run",)}
_pos = {"minimum": 1}
_name = {"non_empty": True}
_SLURM_MEM = re.compile(r"^\d+[KMGT]?$")  # sbatch --mem: megabytes, or with a unit
_SLURM_TIME = re.compile(r"^(\d+-)?\d{1,2}(:\d{2}){0,2}$")  # sbatch --time: [D-]HH[:MM[:SS]] or MM


@dataclasses.dataclass(frozen=True)
class TpuPodConfig:
    name: str = dataclasses.field(metadata=_name)  # the TPU VM name gcloud knows it by
    zone: str = dataclasses.field(metadata=_name)  # e.g. us-central2-b
    accelerator: str = dataclasses.field(metadata=_name)  # e.g. v4-32, v5litepod-16
    runtime: str = "tpu-ubuntu2204-base"  # TPU VM software version
    project: str | None = None  # gcloud project (default: gcloud's configured one)


@dataclasses.dataclass(frozen=True)
class SlurmConfig:
    nodes: int = dataclasses.field(metadata=_pos)
    gpus_per_node: int = dataclasses.field(metadata=_pos)
    processes: Literal["per_node", "per_gpu"] = "per_node"  # one process drives a node's GPUs, or one each
    time: str = "04:00:00"  # sbatch --time
    partition: str | None = None
    account: str | None = None
    job_name: str = "stylebench"
    # each task's CPU cores and each node's memory (sbatch --cpus-per-task, --mem, e.g. "480G"; None:
    # the cluster's defaults, often one core per task, too few to tokenise and compile for 8 GPUs);
    # exclusive: the whole nodes (sbatch --exclusive)
    cpus_per_task: int | None = dataclasses.field(default=None, metadata=_pos)
    mem: str | None = None
    exclusive: bool = False
    # the coordinator's port; None: slurm.sbatch's default, 12355 + SLURM_JOB_ID mod 10000
    port: int | None = dataclasses.field(default=None, metadata={"minimum": 1024, "maximum": 65535})

    def __post_init__(self):
        if self.mem is not None and not _SLURM_MEM.match(self.mem):
            raise InvalidField("mem", f"expected sbatch's --mem size, a number with an optional K, M, G or T "
                                      f"(e.g. '480G'), found {self.mem!r}")
        if not _SLURM_TIME.match(self.time):
            raise InvalidField("time", f"expected sbatch's [D-]HH:MM:SS (e.g. '04:00:00'), "
                                       f"found {self.time!r}")

    @property
    def tasks_per_node(self) -> int:
        return 1 if self.processes == "per_node" else self.gpus_per_node


@dataclasses.dataclass(frozen=True)
class CpuConfig:
    processes: int = dataclasses.field(metadata=_pos)
    devices_per_process: int = dataclasses.field(default=2, metadata=_pos)  # fake CPU devices each


@dataclasses.dataclass(frozen=True)
class LaunchProfile:
    target: Literal["tpu_pod", "slurm", "cpu"]
    command: tuple[str, ...] = dataclasses.field(metadata=_name)  # `stylebench` args: [eval, --suite, ...]
    fetch: str | None = None  # tpu_pod: the run's output directory to fetch (relative: to the checkout)
    fetch_to: Path = Path("results")  # tpu_pod: where `fetch` puts it locally
    tpu_pod: TpuPodConfig | None = None
    slurm: SlurmConfig | None = None
    cpu: CpuConfig | None = None

    def __post_init__(self):
        if self.command[0] in ("stylebench", "python", "python3"):
            raise InvalidField("command[0]", "give the stylebench subcommand and its arguments "
                                             f"(e.g. [eval, --suite, stel]), not {self.command[0]!r}")
        if getattr(self, self.target) is None:
            raise InvalidField(self.target, f"target {self.target!r} needs a {self.target} section")
        for other in TARGETS:
            if other != self.target and getattr(self, other) is not None:
                raise InvalidField(other, f"a {other} section does nothing under target {self.target!r}: "
                                          "remove it (one profile per target)")
        if self.fetch is not None and self.target != "tpu_pod":
            raise InvalidField("fetch", "only tpu_pod runs are fetched (SLURM and local runs write to "
                                        "a file system you read directly)")


def default_action(profile: LaunchProfile) -> str | None:
    """The action ``stylebench launch PROFILE`` takes without one (``None``: one must be named)."""
    return {"slurm": "submit", "cpu": "run"}.get(profile.target)


def launcher_argv(profile: LaunchProfile, action: str, launch_dir: Path, *,
                  dry_run: bool = False) -> list[str]:
    """The command line that carries out ``action`` on ``profile`` with the scripts in ``launch_dir``.
    ``ValueError`` naming ``action`` when the target has no such action (or ``tpu_pod`` ``fetch``
    without ``fetch``)."""
    if action not in ACTIONS[profile.target]:
        raise ValueError(f"action: target {profile.target!r} takes {', '.join(ACTIONS[profile.target])}; "
                         f"got {action!r}")
    dry = ["--dry-run"] if dry_run else []
    command = list(profile.command)
    if profile.target == "tpu_pod":
        pod = profile.tpu_pod
        head = ["bash", str(launch_dir / "tpu_pod.sh"), *dry,
                *(["--project", pod.project] if pod.project else []), action, pod.name, pod.zone]
        if action == "create":
            return [*head, pod.accelerator, pod.runtime]
        if action == "run":
            return [*head, *command]
        if action == "fetch":
            if profile.fetch is None:
                raise ValueError("action: 'fetch' needs the profile's fetch key (the run's output directory)")
            return [*head, profile.fetch, str(profile.fetch_to)]
        return head
    if profile.target == "slurm":
        s = profile.slurm
        sbatch = ["sbatch", f"--job-name={s.job_name}", f"--nodes={s.nodes}",
                  f"--ntasks-per-node={s.tasks_per_node}", f"--gpus-per-node={s.gpus_per_node}",
                  f"--time={s.time}", *([f"--partition={s.partition}"] if s.partition else []),
                  *([f"--account={s.account}"] if s.account else []),
                  *([f"--cpus-per-task={s.cpus_per_task}"] if s.cpus_per_task else []),
                  *([f"--mem={s.mem}"] if s.mem else []), *(["--exclusive"] if s.exclusive else [])]
        port = ["--port", str(s.port)] if s.port is not None else []
        return [*sbatch, str(launch_dir / "slurm.sbatch"), *port, *command]
    c = profile.cpu
    return ["bash", str(launch_dir / "multiprocess_cpu.sh"), *dry, "--devices", str(c.devices_per_process),
            str(c.processes), "stylebench", *command]
