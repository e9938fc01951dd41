"""Output guard of one process of a multi-process run (started by ``distributed.guard_output``).

Run as ``python -S guard.py OUT_FD ERR_FD LOG_PATH PROCESS`` (standard library only, so it starts in
milliseconds and survives the process it watches). It reads the process's stdout and stderr pipes:

- ordinary output passes through unchanged (and is copied to the log);
- the C++ runtime's own log lines (absl/glog ``E1123 13:23:16.728 ... file.cc:289] ...`` and the
  lines written with them, gloo's ``[Gloo] ...`` banners, ``*** Check failure stack trace`` frames)
  go to ``LOG_PATH`` only (Python's ``absl`` logger, orbax's, is sent there by the process itself:
  ``distributed.route_library_logs``);
- when the runtime aborts the process (a fatal ``F...`` line: JAX's heartbeat found a dead or frozen
  peer, or the coordinator on process 0 went away), the guard prints one line on stderr once the
  process is gone, naming what happened and the log, so a user sees one clear error instead of a
  page of C++ log and stack frames.

It ignores SIGINT and SIGTERM (they are meant for the process, which may save a checkpoint and say
so) and exits when both pipes are closed.
"""

import os
import re
import select
import signal
import sys

GLOG = re.compile(rb"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [^ \]]+:\d+\] ")
STACK = re.compile(rb"^(\*\*\* Check failure stack trace|\s+@\s+0x)")
# gloo's banner, also when two threads' banners interleave on one line
GLOO = re.compile(rb"\[Gloo\]|is connected to \d+ peer ranks")


def summarize(fatal: bytes) -> str:
    """What a fatal runtime message means, in a few words."""
    text = fatal.decode("utf-8", "replace")
    if "unhealthy" in text or "heartbeat" in text:
        match = re.search(r"stopped sending heartbeats\):\s*\n?\s*([\d, \n]+)", text)
        tasks = ", ".join(match.group(1).split()) if match else "?"
        return f"process {tasks} stopped sending heartbeats (killed or frozen)"
    if "coordination service" in text or "Socket closed" in text:
        return "lost the coordination service on process 0 (it died or stopped responding)"
    status = text.split("absl::Status:", 1)[-1].strip().splitlines()
    return (status[0] if status else "fatal runtime error")[:200]


def main(out_fd: int, err_fd: int, log_path: str, process: str) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    targets = {out_fd: sys.stdout.buffer, err_fd: sys.stderr.buffer}
    pending = {out_fd: b"", err_fd: b""}
    fatal = b""
    with open(log_path, "ab") as log:
        open_fds = [out_fd, err_fd]
        while open_fds:
            ready, _, _ = select.select(open_fds, [], [])
            for fd in ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    open_fds.remove(fd)
                    lines, pending[fd] = [pending[fd]] if pending[fd] else [], b""
                else:
                    data = pending[fd] + chunk
                    *lines, pending[fd] = data.split(b"\n")
                    lines = [line + b"\n" for line in lines]
                # A fatal runtime line owns what follows it in the same read (its status text; the
                # process is dying); another runtime line owns only indented continuation lines, so
                # the process's own output written just after it (its error line) still shows.
                runtime_block = fatal_block = False
                for line in lines:
                    log.write(line)
                    if GLOG.match(line):
                        runtime_block, fatal_block = True, line.startswith(b"F")
                        if fatal_block:
                            fatal = line
                            continue
                    elif fatal_block or (runtime_block and line[:1] in b" \t"):
                        if fatal_block and len(fatal) < 4096:
                            fatal += line
                    else:
                        runtime_block = False
                    if runtime_block or GLOO.search(line) or STACK.match(line):
                        continue
                    targets[fd].write(line)
                    targets[fd].flush()
                log.flush()
    if fatal:
        sys.stderr.write(f"stylebench: error: process {process}: stopped by the JAX runtime: "
                         f"{summarize(fatal)}; log: {log_path}; re-run the same command to resume\n")
        sys.stderr.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]))
