"""One process of a multi-process test run (started N times by ``launch/multiprocess_cpu.sh``):
``python tests/parallel/mp_worker.py COMMANDS.json`` runs each argument list of the JSON file through
``stylebench_jax.cli.main`` in turn, in one process (one JAX start-up and one ``jax.distributed`` job
for several commands: the tests stay short). Exits with the first non-zero status."""

import json
import sys

from stylebench_jax.cli import main

if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as handle:
        commands = json.load(handle)
    for argv in commands:
        code = main(argv)
        if code:
            sys.exit(code)
