"""One module per `stylebench` subcommand; each exposes ``register(subparsers)``."""
