"""User-facing errors.

``UserInputError`` is raised at the boundary (files, flags, model names) with a one-line message a
user can act on: which file, line or field, what was expected and what was found. The CLI prints
it without a traceback and exits with code 2.
"""


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
