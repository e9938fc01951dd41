"""User-facing errors.

``UserInputError`` is raised at the boundary (files, flags, model names) with a one-line message a
user can act on: which file, line or field, what was expected and what was found. The CLI prints
it without a traceback and exits with code 2.
"""

import math
import numbers


class UserInputError(Exception):
    """Bad input from the user: a file, flag, field or name that cannot be used as given."""


def located(path, message: str, *, line: int | None = None, column: int | None = None,
            field: str | None = None) -> UserInputError:
    """Build a ``UserInputError`` whose message starts with ``path:line:column`` (those known)."""
    where = str(path)
    if line is not None:
        where += f":{line}"
        if column is not None:
            where += f":{column}"
    if field is not None:
        message = f"field {field!r}: {message}"
    return UserInputError(f"{where}: {message}")


class InvalidOption(UserInputError, ValueError):
    """A library option (a parameter a user sets by a flag or a config key) with a value that cannot
    be used. ``option`` is the parameter's name (``max_length``); library code says only that, and
    the command line reports it as its own flag (``--max-length``)."""

    def __init__(self, option: str, message: str):
        super().__init__(f"{option}: {message}")
        self.option = option
        self.message = message


def is_count(value) -> bool:
    """Whether ``value`` is a whole number >= 1: ``3``, ``3.0`` and ``np.int64(3)`` are; ``2.7`` (which
    ``int`` would make 2 without a word), ``True``, ``0``, ``inf``, ``"3"`` and ``None`` are not. For
    argument checks that name the argument in their own message."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        return False
    return bool(value == int(value) and value >= 1)
