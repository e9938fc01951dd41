"""What every generator backend shares: the request, the result, the errors that steer the run, the
retry policy and the redaction of secrets.

A backend's ``generate(request) -> Generation`` either returns text or raises:

- ``NotApplicable``: this backend cannot make this item (e.g. the Markov backend for an author
  with no other book); the item is recorded as skipped with the reason, once;
- ``GenerationFailed``: this item failed (retries exhausted, a 4xx the server will not change its
  mind about); recorded as failed, retried on the next run;
- ``BackendStopped``: the backend can make nothing more (quota exhausted, key refused); the run
  stops submitting to it and records every item not yet generated as skipped with the reason, so
  nothing is lost: the next run (after a top-up) generates exactly those.

Retries (seed 003 §7.2 step 4: "exponential backoff retry (0.5 s, 1.5 s, 3.0 s)"): a transient error
(HTTP 429 or 5xx without a quota marker, a timeout, a dropped connection, a body that is not the
expected JSON, an empty completion) is retried after each delay in turn; after the last one the
item fails with the last error.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence

REDACTED = "[REDACTED]"


@dataclasses.dataclass(frozen=True)
class GenerationRequest:
    unit: str  # "<backend>/<item id>"
    system: str
    user: str
    excerpt: object  # transfer.excerpts.Excerpt
    seed: int
    target_words: int


@dataclasses.dataclass
class Generation:
    text: str
    attempts: int = 1
    finish_reason: str | None = None
    usage: dict | None = None
    retried_errors: list[str] = dataclasses.field(default_factory=list)
    model: str | None = None


class NotApplicable(Exception):
    """The backend cannot make this item (reason in the message)."""


class GenerationFailed(Exception):
    def __init__(self, message: str, attempts: int = 1, retried_errors: Sequence[str] = ()):
        super().__init__(message)
        self.attempts = attempts
        self.retried_errors = list(retried_errors)


class BackendStopped(Exception):
    """The backend can make nothing more in this run (``reason``: quota_exhausted | auth_failed)."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


class TransientError(Exception):
    """Worth another try after a delay."""


def redact(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every secret (at least 4 characters) replaced by ``[REDACTED]``."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    return text


def with_retries(call: Callable[[], Generation], delays: Sequence[float], *,
                 sleep: Callable[[float], None] = time.sleep, halt=None) -> Generation:
    """``call()``, retried after each of ``delays`` while it raises ``TransientError``; once ``halt``
    (a ``threading.Event``) is set, no further attempt is made (``BackendStopped``, reason
    ``interrupted``: the run was stopped, the item is generated when it resumes)."""
    errors: list[str] = []
    for attempt in range(len(delays) + 1):
        if attempt:
            sleep(delays[attempt - 1])
            if halt is not None and halt.is_set():
                raise BackendStopped("interrupted before another attempt", "interrupted")
        try:
            result = call()
        except TransientError as error:
            errors.append(str(error))
            continue
        except GenerationFailed as error:
            error.attempts, error.retried_errors = attempt + 1, errors
            raise
        result.attempts, result.retried_errors = attempt + 1, errors
        return result
    raise GenerationFailed(f"gave up after {len(delays) + 1} attempts; last error: {errors[-1]}",
                           attempts=len(delays) + 1, retried_errors=errors)
