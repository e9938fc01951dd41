"""Run-directory checkpoints with orbax: the latest few for resume, the best one for export.

    RUN/checkpoints/<step>/   TrainState + trainer bookkeeping, the ``keep`` most recent
    RUN/best/<step>/          the state with the best validation balanced accuracy so far

Saves are synchronous (a run killed at any moment leaves only complete checkpoints: orbax writes
to a temporary directory and renames it when done). Paths are made absolute (orbax needs that).

Replica-parallel saving (orbax's default on CPU: each replica of a replicated array writes a slice of
it) only pays when the replicas live in different processes; within one process it compiled a
``slice`` program per parameter shape and device (128 programs, 5-6 s, for the tiny test model on 8
devices) to write the same bytes. So it is on only for multi-process runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import orbax.checkpoint as ocp


def _manager(folder: Path, keep: int) -> ocp.CheckpointManager:
    registry = ocp.type_handlers.create_type_handler_registry(
        (jax.Array, ocp.type_handlers.ArrayHandler(use_replica_parallel=jax.process_count() > 1)))
    options = ocp.CheckpointManagerOptions(max_to_keep=keep, create=True, enable_async_checkpointing=False)
    handlers = {"state": ocp.PyTreeCheckpointHandler(type_handler_registry=registry),
                "extra": ocp.JsonCheckpointHandler()}
    return ocp.CheckpointManager(folder, options=options, item_handlers=handlers)


class RunCheckpoints:
    def __init__(self, run_dir: Path, keep: int):
        run_dir = Path(run_dir).resolve()
        self.latest = _manager(run_dir / "checkpoints", keep)
        self.best = _manager(run_dir / "best", 1)

    def latest_step(self) -> int | None:
        return self.latest.latest_step()

    def best_step(self) -> int | None:
        """The step ``best/`` holds (None before the first evaluation)."""
        return self.best.latest_step()

    def save(self, step: int, state: Any, extra: dict, *, best: bool = False,
             only_best: bool = False) -> None:
        """``checkpoints/<step>``, then with ``best`` also ``best/<step>`` (``only_best``: that alone). A
        run killed between the two resumes from ``checkpoints/<step>``, whose ``extra`` names ``step``
        as the best: ``Trainer._resume`` then writes ``best/<step>`` again."""
        managers = (self.best,) if only_best else (self.latest, self.best) if best else (self.latest,)
        for manager in managers:
            manager.save(step, args=ocp.args.Composite(state=ocp.args.PyTreeSave(state),
                                                       extra=ocp.args.JsonSave(extra)), force=True)
            manager.wait_until_finished()

    def _restore(self, manager, step: int, like: Any) -> tuple[Any, dict]:
        abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, like)
        restore_args = ocp.checkpoint_utils.construct_restore_args(abstract)
        state = ocp.args.PyTreeRestore(abstract, restore_args=restore_args)
        restored = manager.restore(step, args=ocp.args.Composite(state=state, extra=ocp.args.JsonRestore()))
        return restored.state, restored.extra

    def restore_latest(self, like: Any) -> tuple[Any, dict]:
        return self._restore(self.latest, self.latest.latest_step(), like)

    def restore_best(self, like: Any) -> tuple[Any, dict] | None:
        step = self.best.latest_step()
        return None if step is None else self._restore(self.best, step, like)

    def close(self) -> None:
        self.latest.close()
        self.best.close()
