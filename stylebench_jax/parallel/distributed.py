"""Multi-process runs on ``jax.distributed``: start-up, who writes, host-side exchange, failure.

On a TPU pod slice, a multi-node GPU job or ``launch/multiprocess_cpu.sh`` every process runs the same
``python -m stylebench_jax.cli ...`` command (SPMD). With ``STYLEBENCH_DISTRIBUTED=1`` the CLI calls
:func:`maybe_initialize` before any device is touched; the coordinator, process count and id come from
the TPU metadata, SLURM, or ``JAX_COORDINATOR_ADDRESS`` / ``JAX_NUM_PROCESSES`` / ``JAX_PROCESS_ID``.
``STYLEBENCH_LOCAL_DEVICE_IDS`` names the local GPUs of a process that drives several (SLURM, one
process per node). Single-process runs leave the variable unset and every helper here degrades to the
one-process answer (no JAX backend is started just to ask).

The rules every command follows:

- every process computes the same host-side results (the same data, seeds and code); device work is
  split over the global mesh; heavy per-item host work (reading, tokenising, sentence splitting) is
  split with :func:`process_span` / :func:`map_shards` and gathered back in input order, so the
  output equals that of one process;
- only the primary process (index 0, :func:`is_primary`) writes results, reports, logs and progress
  bars (``fileio``'s atomic writers discard the writes of the others unless told ``every_process``);
- decisions read from disk that steer the run (which cells are done) are read by the primary and
  broadcast (:func:`broadcast_from_primary`), so processes with different views of a disk agree.

Failure: ``jax.distributed`` heartbeats detect a killed or frozen process within ``heartbeat``
seconds (``STYLEBENCH_HEARTBEAT_TIMEOUT``, default 30) and JAX then aborts every other process; a
process alive but stuck in Python leaves its peers waiting in a collective, which the CPU runtime
ends after ``STYLEBENCH_COLLECTIVE_TIMEOUT`` seconds (default 600; XLA's
``--xla_cpu_collective_timeout_seconds``); a peer that dies inside a collective fails it at once.
``parallel/guard.py`` turns each of these into one line on stderr (the C++ log goes to a file) and
the command exits non-zero; the run resumes from its last checkpoint or finished cell when re-run.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import socket
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from stylebench_jax.errors import UserInputError

T = TypeVar("T")
ENV_FLAG = "STYLEBENCH_DISTRIBUTED"
_GUARD_LOG: Path | None = None  # set by guard_output


@dataclasses.dataclass(frozen=True)
class Timeouts:
    """Seconds. ``heartbeat``: a process silent this long is declared dead (JAX's heartbeat);
    ``init``: how long processes wait for each other at start-up; ``collective``: longest wait of a
    CPU collective for a peer that is alive but does not arrive (a hang in Python)."""

    heartbeat: int = 30
    init: int = 300
    collective: int = 600

    @classmethod
    def from_env(cls, environ=os.environ) -> Timeouts:
        values = {}
        for field, name in (("heartbeat", "STYLEBENCH_HEARTBEAT_TIMEOUT"),
                            ("init", "STYLEBENCH_INIT_TIMEOUT"),
                            ("collective", "STYLEBENCH_COLLECTIVE_TIMEOUT")):
            text = environ.get(name)
            if text is None:
                continue
            try:
                values[field] = int(text)
            except ValueError:
                raise ValueError(f"${name}: expected a whole number of seconds, found {text!r}") from None
            if values[field] < 1:
                raise ValueError(f"${name}: expected >= 1 second, found {values[field]}")
        return cls(**values)


def requested(environ=os.environ) -> bool:
    """Whether this process was launched as one of several (``STYLEBENCH_DISTRIBUTED=1``)."""
    return environ.get(ENV_FLAG, "0") == "1"


def maybe_initialize() -> bool:
    """Initialise multi-process JAX if ``STYLEBENCH_DISTRIBUTED=1``; returns whether it did.

    Sets the CPU collective timeout (unless ``XLA_FLAGS`` already names one) before the backend
    starts, then calls ``jax.distributed.initialize`` with the heartbeat and start-up timeouts."""
    if not requested():
        return False
    import jax

    if jax.distributed.is_initialized():
        return True
    timeouts = Timeouts.from_env()
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_collective_timeout_seconds" not in flags:
        flag = f"--xla_cpu_collective_timeout_seconds={timeouts.collective}"
        os.environ["XLA_FLAGS"] = f"{flags} {flag}".strip()
    kwargs: dict[str, Any] = dict(initialization_timeout=timeouts.init,
                                  heartbeat_timeout_seconds=timeouts.heartbeat)
    kwargs.update(explicit_coordinator())
    if os.environ.get("STYLEBENCH_LOCAL_DEVICE_IDS"):  # e.g. one process driving every GPU of a SLURM node
        kwargs["local_device_ids"] = parse_device_ids(os.environ["STYLEBENCH_LOCAL_DEVICE_IDS"])
    address = kwargs.get("coordinator_address")
    if address and kwargs.get("process_id") == 0:
        check_port_free(address)
    elif address:
        wait_for_coordinator(address, kwargs["process_id"], timeouts.init)
    try:
        jax.distributed.initialize(**kwargs)
    except Exception as error:  # JaxRuntimeError: the coordinator could not start or be reached
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        where = f"$JAX_COORDINATOR_ADDRESS {address}" if address else "jax.distributed"
        raise UserInputError(f"{where}: process {kwargs.get('process_id', '?')} could not start or reach "
                             f"the coordinator ({first[:200]}; start-up timeout {timeouts.init} s)") from None
    barrier("stylebench-start")  # creates the host-exchange communicator while all processes are here
    return True


def explicit_coordinator(environ=os.environ) -> dict[str, Any]:
    """``coordinator_address``, ``num_processes`` and ``process_id`` for ``jax.distributed.initialize``
    from ``JAX_COORDINATOR_ADDRESS`` / ``JAX_NUM_PROCESSES`` / ``JAX_PROCESS_ID``, checked (one line
    naming the variable, not a ``KeyError`` traceback); ``{}`` when the first two are not both set
    (JAX then reads the TPU metadata or SLURM's variables)."""
    address, count = environ.get("JAX_COORDINATOR_ADDRESS"), environ.get("JAX_NUM_PROCESSES")
    if not (address and count):
        return {}
    if not environ.get("JAX_PROCESS_ID"):
        raise UserInputError("$JAX_PROCESS_ID: not set, though $JAX_COORDINATOR_ADDRESS and "
                             "$JAX_NUM_PROCESSES are; set it to this process's index (0 for the "
                             "coordinator's host)")
    values = {}
    for name, text in (("JAX_NUM_PROCESSES", count), ("JAX_PROCESS_ID", environ["JAX_PROCESS_ID"])):
        try:
            values[name] = int(text)
        except ValueError:
            raise UserInputError(f"${name}: expected a whole number, found {text!r}") from None
    if values["JAX_NUM_PROCESSES"] < 1 or not 0 <= values["JAX_PROCESS_ID"] < values["JAX_NUM_PROCESSES"]:
        raise UserInputError(f"$JAX_PROCESS_ID {values['JAX_PROCESS_ID']}: expected 0 .. "
                             f"{values['JAX_NUM_PROCESSES'] - 1} ($JAX_NUM_PROCESSES is "
                             f"{values['JAX_NUM_PROCESSES']})")
    return {"coordinator_address": address, "num_processes": values["JAX_NUM_PROCESSES"],
            "process_id": values["JAX_PROCESS_ID"]}


def coordinator_host_port(address: str) -> tuple[str, str]:
    """``(host, port)`` of ``$JAX_COORDINATOR_ADDRESS`` (``host:port``; ``[...]`` around an IPv6
    literal removed); ``UserInputError`` naming the variable otherwise."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise UserInputError(f"$JAX_COORDINATOR_ADDRESS {address}: expected host:port")
    return host.strip("[]"), port


def wait_for_coordinator(address: str, process_id: int, timeout: float) -> None:
    """Return once ``address`` (``host:port``) accepts a TCP connection; ``UserInputError`` naming the
    address when its host does not resolve, or nothing answers within ``timeout`` seconds. Why: JAX
    aborts the process in C++ when it cannot reach the coordinator ("DEADLINE_EXCEEDED", naming no
    address), which reads like a lost peer; process 0 may start later than this one, so it is
    polled rather than tried once."""
    import time

    host, port = coordinator_host_port(address)
    try:
        socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        raise UserInputError(f"$JAX_COORDINATOR_ADDRESS {address}: host {host!r} does not resolve on this "
                             f"machine ({error.strerror})") from None
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, int(port)), timeout=min(5.0, timeout)):
                return
        except OSError as error:
            if time.monotonic() >= deadline:
                raise UserInputError(
                    f"$JAX_COORDINATOR_ADDRESS {address}: process {process_id} found nothing listening there "
                    f"for {timeout:g} s ({error.strerror or error}); is process 0 running on that host, and "
                    "is the port open between the hosts?") from None
        time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))


def check_port_free(address: str) -> None:
    """``UserInputError`` when the coordinator's port (``host:port``) is taken on this machine, before
    process 0 starts the coordinator there (JAX would fail with "Failed to start RPC server" naming no
    port, or crash, and the other processes would wait for it until their start-up timeout)."""
    _, port = coordinator_host_port(address)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the coordinator's server does
        try:
            probe.bind(("", int(port)))
        except OSError as error:
            raise UserInputError(f"$JAX_COORDINATOR_ADDRESS {address}: port {port} is in use on this machine "
                                 f"({error.strerror}); pick a free one") from None


def parse_device_ids(text: str) -> list[int]:
    """``STYLEBENCH_LOCAL_DEVICE_IDS`` (``"0,1,2,3"``): the local accelerators this process drives.
    Why: under SLURM, JAX gives each task only the device numbered ``SLURM_LOCALID`` (one process
    per GPU); one process per node must name all of its node's GPUs (``launch/slurm.sbatch``)."""
    try:
        ids = [int(part) for part in text.split(",")]
    except ValueError:
        raise ValueError(f"$STYLEBENCH_LOCAL_DEVICE_IDS: expected comma-separated device numbers such as "
                         f"0,1,2,3, found {text!r}") from None
    if any(i < 0 for i in ids) or len(set(ids)) != len(ids):
        raise ValueError(f"$STYLEBENCH_LOCAL_DEVICE_IDS: expected distinct numbers >= 0, found {text!r}")
    return ids


def warm_up(mesh) -> None:
    """Run one tiny collective over each group of devices that the run's programs talk over (the
    ``data`` axis, the ``model`` axis, both), right after a barrier, so every communicator is
    created while the processes are in step. Why: the CPU (gloo) runtime gives the processes 30 s
    (fixed) to meet when it creates a communicator, at a program's first collective over a device
    group; processes that compile a big program at different speeds can miss that. Once created, a
    communicator waits up to the collective timeout instead. No-op with one process."""
    if process_count() == 1:
        return
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    barrier("stylebench-warm-up")
    spec = PartitionSpec(*mesh.axis_names)
    ones = jax.make_array_from_callback(tuple(mesh.shape.values()), NamedSharding(mesh, spec),
                                        lambda index: np.ones((1,) * len(mesh.axis_names), np.float32))
    axes = tuple(name for name in mesh.axis_names if mesh.shape[name] > 1)
    groups = {(name,) for name in axes} | ({axes} if axes else set())
    for group in sorted(groups):  # the same order on every process
        psum = jax.shard_map(lambda x, group=group: jax.lax.psum(x, group), mesh=mesh, in_specs=spec,
                             out_specs=spec)
        jax.block_until_ready(jax.jit(psum)(ones))


def is_distributed() -> bool:
    """True once ``jax.distributed`` is initialised (checked without starting a backend)."""
    if "jax" not in sys.modules:
        return False
    import jax

    return jax.distributed.is_initialized()


def process_index() -> int:
    if not is_distributed():
        return 0
    import jax

    return jax.process_index()


def process_count() -> int:
    if not is_distributed():
        return 1
    import jax

    return jax.process_count()


def is_primary() -> bool:
    """The one process that writes results, reports, logs and progress bars (index 0)."""
    return process_index() == 0


def process_span(n: int, index: int | None = None, count: int | None = None) -> tuple[int, int]:
    """This process's contiguous share ``[lo, hi)`` of ``n`` items: sizes differ by at most one,
    earlier processes take the extra items; spans of processes 0..count-1 tile ``[0, n)`` in order."""
    index = process_index() if index is None else index
    count = process_count() if count is None else count
    base, extra = divmod(n, count)
    lo = index * base + min(index, extra)
    return lo, lo + base + (index < extra)


# --------------------------------------------------------------------------- host-side exchange


def allgather_bytes(payload: bytes) -> list[bytes]:
    """Every process's ``payload``, in process order (one collective for the sizes, one for the data)."""
    if process_count() == 1:
        return [payload]
    from jax.experimental import multihost_utils

    sizes = multihost_utils.process_allgather(np.asarray([len(payload)], np.int64))
    sizes = np.asarray(sizes).reshape(-1)
    buffer = np.zeros(max(int(sizes.max()), 1), np.uint8)
    buffer[: len(payload)] = np.frombuffer(payload, np.uint8)
    gathered = np.asarray(multihost_utils.process_allgather(buffer))
    return [gathered[p, : int(sizes[p])].tobytes() for p in range(len(sizes))]


def allgather_objects(value: Any) -> list[Any]:
    """``value`` of every process (picklable), in process order."""
    if process_count() == 1:
        return [value]
    return [pickle.loads(b) for b in allgather_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))]


def broadcast_from_primary(value_or_fn: Any) -> Any:
    """The primary's value on every process. Given a callable, only the primary calls it (e.g. reads
    a file the others may not see or may see half-updated); an exception there is raised everywhere."""
    if process_count() == 1:
        return value_or_fn() if callable(value_or_fn) else value_or_fn
    outcome: tuple[str, Any] = ("value", None)
    if is_primary():
        try:
            outcome = ("value", value_or_fn() if callable(value_or_fn) else value_or_fn)
        except Exception as error:  # noqa: BLE001 - re-raised on every process below
            outcome = ("error", error)
    kind, value = allgather_objects(outcome if is_primary() else None)[0]
    if kind == "error":
        raise value
    return value


def check_processes_agree(what: str, digest: str) -> None:
    """``UserInputError`` on every process unless all computed the same ``digest`` of ``what``.

    Every process reads its own copy of configs and data and computes the same host-side results
    (module docstring); a host whose copy differs (an older pairs folder, another data root) would
    otherwise train on a silent mix of the hosts' views: its slice of each global batch taken from
    other rows, or token ids gathered next to other texts. One small collective; every process
    sees the same list, so all stop together instead of one waiting for the others."""
    if process_count() == 1:
        return
    digests = allgather_objects(digest)
    differ = [i for i, d in enumerate(digests) if d != digests[0]]
    if differ:
        raise UserInputError(f"{what}: process {differ[0]} of {len(digests)} read something different from "
                             "process 0; every process must read the same files (a shared file system, "
                             "or identical copies on every host)")


def map_shards(fn: Callable[[Sequence[Any]], list[T]], items: Sequence[Any]) -> list[T]:
    """``fn(items)`` computed in parts: each process applies ``fn`` to its :func:`process_span` of
    ``items`` (``fn`` must map a list to a list of the same length, item by item) and every process
    gets all results in input order: the same list as one process computing ``fn(items)``."""
    lo, hi = process_span(len(items))
    local = list(fn(items[lo:hi]))
    if len(local) != hi - lo:
        raise ValueError(f"map_shards: fn returned {len(local)} results for {hi - lo} items")
    if process_count() == 1:
        return local
    return [result for part in allgather_objects(local) for result in part]


def check_shared_directory(path: str | os.PathLike, what: str) -> None:
    """``UserInputError`` unless every process sees ``path`` (created if missing) as one directory.
    Why: orbax saves each checkpoint from every process into one directory and the best one is
    restored at the end, so a run directory on each host's own disk trains to the last step and then
    fails (the README asks for a shared file system; this says so before any work). Process 0 writes
    a token file there; the others look for it (for up to 5 s: NFS attribute caches)."""
    if process_count() == 1:
        return
    import time

    Path(path).mkdir(parents=True, exist_ok=True)
    token = broadcast_from_primary(lambda: f".stylebench-shared-{os.getpid()}-{time.time_ns()}")
    probe = Path(path) / token
    if is_primary():
        probe.write_text("process 0 was here\n", encoding="utf-8")
    barrier("stylebench-shared-check")
    deadline = time.monotonic() + 5.0
    while not probe.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    seen = allgather_objects(probe.exists())
    if is_primary():
        probe.unlink(missing_ok=True)
    missing = [i for i, found in enumerate(seen) if not found]
    if missing:
        raise UserInputError(f"{what} {path}: process {missing[0]} of {len(seen)} does not see the files "
                             "process 0 writes there; put the run on a file system every process shares "
                             "(e.g. NFS or a Filestore mount)")


def barrier(name: str) -> None:
    """Wait until every process reaches the barrier ``name``."""
    if process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)


def fetch(tree: Any) -> Any:
    """Host NumPy copies of a tree of arrays. A ``jax.Array`` sharded over devices of other
    processes is gathered (a collective: every process must call this); addressable or replicated
    arrays are copied locally."""
    import jax

    def one(x):
        if isinstance(x, jax.Array) and not x.is_fully_addressable and not x.is_fully_replicated:
            from jax.experimental import multihost_utils

            return np.asarray(multihost_utils.process_allgather(x, tiled=True))
        return np.asarray(jax.device_get(x))

    return jax.tree.map(one, tree)


def allgather_rows(local: np.ndarray) -> list[np.ndarray]:
    """Every process's ``local [n_p, ...]`` array (``n_p`` may differ; the trailing shape and dtype
    may not), in process order, gathered with one device collective (no pickling)."""
    local = np.ascontiguousarray(local)
    if process_count() == 1:
        return [local]
    from jax.experimental import multihost_utils

    sizes = np.asarray(multihost_utils.process_allgather(np.asarray([local.shape[0]], np.int64))).reshape(-1)
    padded = np.zeros((max(int(sizes.max()), 1), *local.shape[1:]), local.dtype)
    padded[: local.shape[0]] = local
    gathered = np.asarray(multihost_utils.process_allgather(padded))
    return [gathered[p, : int(sizes[p])] for p in range(len(sizes))]


# --------------------------------------------------------------------------- batches on a global mesh


@dataclasses.dataclass(frozen=True)
class DataSlot:
    """Where this process's rows go in a batch sharded over ``data``: processes whose devices hold
    the same block of the data axis form one slot (they must feed identical rows); ``count`` slots
    of ``devices`` data-axis devices each tile the axis in order."""

    index: int
    count: int
    devices: int


def data_slot(mesh) -> DataSlot:
    """This process's :class:`DataSlot` in ``mesh`` (one slot of every data device in one process).
    ValueError when a process's devices do not cover one contiguous block of the data axis, or
    blocks differ in size, or this process has no device in the mesh."""
    grid = np.asarray(mesh.devices)
    axis = mesh.axis_names.index("data")
    blocks: dict[int, set[int]] = {}
    for position in np.ndindex(grid.shape):
        blocks.setdefault(grid[position].process_index, set()).add(position[axis])
    spans = {}
    for process, rows in blocks.items():
        lo, hi = min(rows), max(rows) + 1
        if len(rows) != hi - lo:
            raise ValueError(f"mesh: the devices of process {process} are not one contiguous block of the "
                             f"data axis (rows {sorted(rows)})")
        spans[process] = (lo, hi)
    distinct = sorted(set(spans.values()))
    for (lo1, hi1), (lo2, hi2) in zip(distinct, distinct[1:]):
        if hi1 > lo2 or hi1 - lo1 != hi2 - lo2:
            raise ValueError(f"mesh: processes hold overlapping or unequal data-axis blocks: {distinct}")
    me = process_index()
    if me not in spans:
        raise ValueError(f"mesh: process {me} has no device in the mesh {dict(mesh.shape)}")
    return DataSlot(distinct.index(spans[me]), len(distinct), spans[me][1] - spans[me][0])


def put_batch(local: np.ndarray, mesh, slot: DataSlot | None = None):
    """A global ``jax.Array`` sharded over ``data`` from this process's rows ``local [h, ...]``: the
    global batch is the slots' rows in slot order, ``[h * slot.count, ...]``
    (``jax.make_array_from_process_local_data``; a plain ``device_put`` with one process)."""
    import jax

    from stylebench_jax.parallel.mesh import batch_sharding

    sharding = batch_sharding(mesh, local.ndim)
    if process_count() == 1:
        return jax.device_put(local, sharding)
    slot = slot or data_slot(mesh)
    return jax.make_array_from_process_local_data(sharding, local,
                                                  (local.shape[0] * slot.count, *local.shape[1:]))


def put_global_batch(tree: Any, mesh) -> Any:
    """A tree of host arrays holding the whole global batch (the same on every process) as global
    ``jax.Array``s sharded over ``data``; each process transfers only its slot's rows."""
    import jax

    if process_count() == 1:
        from stylebench_jax.parallel.mesh import batch_sharding

        return jax.tree.map(lambda v: jax.device_put(v, batch_sharding(mesh, np.ndim(v))), tree)
    slot = data_slot(mesh)

    def one(value):
        value = np.asarray(value)
        share, extra = divmod(value.shape[0], slot.count)
        if extra:
            raise ValueError(f"put_global_batch: {value.shape[0]} rows do not divide over {slot.count} "
                             "process slots")
        return put_batch(value[slot.index * share:(slot.index + 1) * share], mesh, slot)

    return jax.tree.map(one, tree)


def local_rows(array) -> np.ndarray:
    """The rows of a ``data``-sharded ``jax.Array`` held by this process's devices (its slot's rows,
    the inverse of :func:`put_batch`), as NumPy; the whole array when it is fully addressable."""
    if array.is_fully_addressable:
        return np.asarray(array)
    shards = {}
    for shard in array.addressable_shards:
        start = shard.index[0].start or 0
        shards.setdefault(start, shard)
    starts = sorted(shards)
    rows = [np.asarray(shards[s].data) for s in starts]
    if any(s + r.shape[0] != nxt for s, r, nxt in zip(starts, rows, starts[1:])):
        raise ValueError("local_rows: this process's rows of the array are not contiguous")
    return np.concatenate(rows)


# --------------------------------------------------------------------------- failure reporting


def guard_output(log_dir: str | os.PathLike | None = None) -> Path | None:
    """Route this process's stdout and stderr through ``parallel/guard.py``: ordinary output passes
    through, the C++ runtime's log lines (JAX/XLA/gloo) go to ``<log_dir>/process-<id>.log``, and a
    fatal abort of the runtime (a peer killed or hung) becomes one line on stderr. Call before JAX
    starts; returns the log path (None when not distributed). Once per process: later calls (a
    script calling ``cli.main`` several times) return the first call's path."""
    global _GUARD_LOG
    if not requested():
        return None
    if _GUARD_LOG is not None:
        return _GUARD_LOG
    # before JAX starts the index is known only from the launcher; on a TPU pod (JAX reads it from the
    # metadata later) the host name, which ends in the worker number (...-w-2), and the pid name it
    index = (os.environ.get("JAX_PROCESS_ID") or os.environ.get("SLURM_PROCID")
             or f"{socket.gethostname()}-{os.getpid()}")
    directory = Path(log_dir or os.environ.get("STYLEBENCH_LOG_DIR") or os.environ.get("TMPDIR", "/tmp"))
    directory.mkdir(parents=True, exist_ok=True)
    log_path = directory / f"stylebench-process-{index}.log"
    sys.stdout.flush()
    sys.stderr.flush()
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    guard = Path(__file__).with_name("guard.py")
    subprocess.Popen(  # noqa: S603 - our own script, no shell
        [sys.executable, "-S", str(guard), str(out_read), str(err_read), str(log_path), index],
        pass_fds=(out_read, err_read), stdin=subprocess.DEVNULL, start_new_session=False)
    os.close(out_read)
    os.close(err_read)
    os.dup2(out_write, 1)
    os.dup2(err_write, 2)
    os.close(out_write)
    os.close(err_write)
    route_library_logs(log_path)
    _GUARD_LOG = log_path
    return log_path


def route_library_logs(log_path: str | os.PathLike) -> None:
    """Send the Python ``absl`` logger's records (orbax's and optax's diagnostics) to ``log_path``
    instead of stderr. In a multi-process run a lost peer also fails orbax's background checkpoint
    thread, which logs the exception with its traceback; the main thread meets the same failure and
    prints the one line of ``exit_after_failure``, so the traceback belongs in the process log, not on
    the user's screen. Errors are not lost: orbax re-raises them in the main thread at the next wait."""
    import logging

    from absl import logging as absl_logging  # noqa: F401 - creates the "absl" logger with its class

    logger = logging.getLogger("absl")
    handler = logging.FileHandler(log_path, mode="a", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(levelname)s:%(name)s:%(threadName)s: %(message)s"))
    logger.addHandler(handler)
    logger.propagate = False


def exit_after_failure(command: str, error: BaseException) -> None:
    """A collective failed because a peer died or hung: print one line and leave at once
    (``os._exit``: JAX's exit handlers would wait for the dead peer at the shutdown barrier)."""
    first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    print(f"stylebench {command}: error: process {process_index()} of {process_count()}: a collective "
          f"failed, another process died or stopped responding ({first[:200]}); re-run the same command "
          "to resume", file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(1)


def peer_failure(error: BaseException) -> bool:
    """Whether ``error`` is the runtime reporting a lost peer (collective failed or timed out)."""
    if not is_distributed():
        return False
    text = str(error)
    markers = ("Gloo", "gloo", "Connection reset", "Connection closed", "Timed out", "DEADLINE_EXCEEDED",
               "UNAVAILABLE", "coordination service", "heartbeat")
    return type(error).__name__ in ("JaxRuntimeError", "XlaRuntimeError") and any(m in text for m in markers)
