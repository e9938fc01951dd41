"""Markdown leaderboard and self-contained HTML report from ``results.jsonl`` rows."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stylebench_jax.fileio import write_text_atomic
from stylebench_jax.report.html import render_html
from stylebench_jax.report.markdown import ScoreTable, render_leaderboard

__all__ = ["ScoreTable", "render_html", "render_leaderboard", "run_description", "write_report"]


def run_description(suite: str, datasets: Sequence[tuple[str, str]], models: Sequence[str], *, seed: int,
                    n_boot: int, version: str, long_text: str = "chunk",
                    max_length: int | None = None, code: str | None = None,
                    built: str | None = None) -> tuple[str, list[str]]:
    """Title and description lines of an eval run's report (``datasets``: ``[(name, size)]``;
    ``code``: the source digest, ``built``: the folders of built benchmarks); the run and its
    re-render (``python -m stylebench_jax.report``, from run_info.json) both call it."""
    where = f" (built benchmarks: {built})" if built else ""
    lines = [f"Suite {suite!r}{where}: {', '.join(f'{name} ({size})' for name, size in datasets)}.",
             f"Models: {', '.join(models)}. Seed {seed}, {n_boot} bootstrap replicates. "
             f"stylebench_jax {version}" + (f", code {code}" if code else "")
             + "; model identities (weight digests) and settings are in run_info.json."]
    if long_text != "chunk" or max_length is not None:
        lines.append(f"Neural models embed long texts with --long-text {long_text}"
                     + (f" --max-length {max_length}" if max_length else "") + ".")
    return f"stylebench eval — {suite}", lines


def write_report(output_dir: Path, rows: Sequence[dict[str, Any]], skipped: Sequence[dict[str, Any]],
                 scores: Sequence[ScoreTable], *, title: str,
                 description: Sequence[str] = ()) -> tuple[Path, Path]:
    """Write ``leaderboard.md`` and ``report.html`` atomically into ``output_dir``; returns both paths."""
    output_dir = Path(output_dir)
    markdown_path, html_path = output_dir / "leaderboard.md", output_dir / "report.html"
    write_text_atomic(markdown_path, render_leaderboard(rows, skipped, scores, title=title,
                                                        description=description))
    write_text_atomic(html_path, render_html(rows, skipped, scores, title=title, description=description))
    return markdown_path, html_path
