"""Progress bars: one factory (``progress_bar``) around tqdm for every long loop (eval cells, data
loading, an encoder's batches, search).

Two modes, chosen by the stream the bar writes to (``sys.stderr`` unless told):

* **terminal** (``stream.isatty()``): a tqdm bar redrawn in place. A bar opened while another one
  is open is *nested*: it takes the next row (``position`` = number of bars open) and is cleared
  when it closes (``leave=False``), so the outer bar keeps its row and the two never interleave;
  the outermost bar stays on screen when done.
* **log** (a file or a pipe): no carriage returns or cursor moves, only a few plain lines per bar::

      eval: 0/630 cells
      eval: 63/630 cells (10%), 00:41 elapsed, 06:10 left [minilm / stel:formality / order_quad]
      ...
      eval: done, 630/630 cells in 07:57

  A line when the bar starts, at every further ``LOG_STEP`` (10%) or after ``LOG_INTERVAL``
  (30 s) without a line, whichever comes first, and one at the end. A nested bar (an encoder's
  batches inside an eval cell), or one asked to wait (``delay``, e.g. search), says nothing unless
  it runs longer than ``LOG_INTERVAL``, so the log of a 630-cell run holds a few dozen progress
  lines, not thousands of redraws, and a short search that fails logs its error alone.

``enabled``: ``True`` = a bar in either mode; ``None`` = a bar on a terminal only (a library's
default: silent when its output is redirected); ``False`` = nothing. In a multi-process run only the
primary process shows bars (``parallel.distributed.is_primary``).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

from tqdm import tqdm

from stylebench_jax.parallel.distributed import is_primary

LOG_STEP = 0.1  # log mode: a line at every further 10% ...
LOG_INTERVAL = 30.0  # ... or after this many seconds without one

# The bars now open, outermost first. Module state on purpose: nesting is a property of the one
# terminal the process writes to, shared by call sites that do not know about each other (the eval
# runner's cell bar and an encoder's batch bar).
_OPEN: list[Any] = []
_LOCK = threading.Lock()


def _open(bar: Any) -> int:
    with _LOCK:
        _OPEN.append(bar)
        return len(_OPEN) - 1


def _forget(bar: Any) -> None:
    with _LOCK:
        if bar in _OPEN:
            _OPEN.remove(bar)


def open_depth() -> int:
    """How many bars made here are open now (the next bar's nesting depth)."""
    with _LOCK:
        return len(_OPEN)


def _isatty(stream: IO[str]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def progress_bar(iterable: Iterable | None = None, *, total: int | None = None, desc: str = "",
                 unit: str = "it", enabled: bool | None = True, stream: IO[str] | None = None,
                 unit_scale: bool = False, delay: float = 0.0, leave: bool | None = None,
                 clock: Callable[[], float] = time.monotonic):
    """A progress bar over ``iterable`` (or ``total`` steps advanced by ``update(n)``).

    Returns an object with tqdm's ``update``, ``set_postfix_str``, ``close``, ``n``, ``total`` and
    ``leave`` (settable before ``close``), usable as a context manager and, given ``iterable``, as
    an iterator. ``stream`` defaults to ``sys.stderr`` (looked up now, so redirections apply);
    ``delay`` seconds pass before anything is shown; ``leave`` defaults to True for an outermost
    bar and False for a nested one; ``clock`` (seconds) is for tests of the log mode.
    """
    stream = sys.stderr if stream is None else stream
    if total is None and iterable is not None and hasattr(iterable, "__len__"):
        total = len(iterable)
    terminal = _isatty(stream)
    if enabled is False or (enabled is None and not terminal) or not is_primary():
        return tqdm(iterable, total=total, disable=True)
    depth = open_depth()
    leave = depth == 0 if leave is None else leave
    if terminal:
        return _TerminalBar(iterable, total=total, desc=desc, unit=unit, file=stream, unit_scale=unit_scale,
                            delay=delay, leave=leave, position=depth, dynamic_ncols=True)
    return _LogBar(iterable, total=total, desc=desc, unit=unit, stream=stream, unit_scale=unit_scale,
                   delay=max(delay, LOG_INTERVAL) if depth or delay > 0 else 0.0, leave=leave, clock=clock)


class _TerminalBar(tqdm):
    """tqdm that registers itself as open until closed (for the nesting depth of later bars)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _open(self)

    def close(self) -> None:
        try:
            super().close()
        finally:
            _forget(self)


class _LogBar:
    """Log mode: plain lines (module docstring), written and flushed one at a time."""

    def __init__(self, iterable: Iterable | None, *, total: int | None, desc: str, unit: str, stream: IO[str],
                 unit_scale: bool, delay: float, leave: bool, clock: Callable[[], float]):
        self.iterable, self.total, self.desc, self.unit, self.stream = iterable, total, desc, unit, stream
        self.unit_scale, self.delay, self.leave, self.clock = unit_scale, delay, leave, clock
        self.n = 0
        self.postfix = ""
        self.closed = False
        self.started = clock()
        self.last_line: float | None = None  # clock() of the last line written; None = none yet
        self.next_step = 1  # of round(1 / LOG_STEP) equal steps; integers, so 60% is 60%
        _open(self)
        if delay <= 0:
            self._line(self._count())

    # ---------------------------------------------------------------- tqdm's interface

    def update(self, n: int = 1) -> None:
        self.n += n
        now = self.clock()
        if now - self.started < self.delay or (self.total is not None and self.n >= self.total):
            return  # waiting; or complete, which the "done" line will say
        step = self.n * round(1 / LOG_STEP) // self.total if self.total else 0
        due_step = self.total is not None and step >= self.next_step and self.n < self.total
        since = now - (self.started if self.last_line is None else self.last_line)
        if due_step or since >= LOG_INTERVAL or (self.last_line is None and self.delay > 0):
            self._line(self._progress(now))
        self.next_step = max(self.next_step, step + 1)

    def set_postfix_str(self, text: str = "", refresh: bool = True) -> None:
        self.postfix = str(text)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        _forget(self)
        finished = self.total is None or self.n >= self.total
        shown = self.last_line is not None or self.clock() - self.started >= self.delay
        if shown and (self.leave or finished):
            elapsed = tqdm.format_interval(self.clock() - self.started)
            word = "done," if finished else "stopped at"
            self._line(f"{word} {self._count()} in {elapsed}", postfix=False)

    def __enter__(self) -> _LogBar:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __iter__(self) -> Iterator:
        try:
            for item in self.iterable:
                yield item
                self.update(1)
        finally:
            self.close()

    def __len__(self) -> int:
        return self.total or 0

    # ---------------------------------------------------------------- lines

    def _number(self, value: float) -> str:
        return tqdm.format_sizeof(value, divisor=1000).strip() if self.unit_scale else str(value)

    def _count(self) -> str:
        total = "" if self.total is None else f"/{self._number(self.total)}"
        return f"{self._number(self.n)}{total} {self.unit}"

    def _progress(self, now: float) -> str:
        elapsed = now - self.started
        text = self._count()
        if self.total:
            text += f" ({100 * self.n / self.total:.0f}%), {tqdm.format_interval(elapsed)} elapsed"
            if 0 < self.n < self.total:
                text += f", {tqdm.format_interval(elapsed * (self.total - self.n) / self.n)} left"
        else:
            text += f", {tqdm.format_interval(elapsed)} elapsed"
        return text

    def _line(self, text: str, *, postfix: bool = True) -> None:
        extra = f" [{self.postfix}]" if postfix and self.postfix else ""
        self.stream.write(f"{self.desc}: {text}{extra}\n" if self.desc else f"{text}{extra}\n")
        self.stream.flush()
        self.last_line = self.clock()
