"""A titled document of notes, figures and tables, rendered as Markdown and as one self-contained
HTML page (inline CSS, figures as base64 PNG): the reports of ``stylebench calibrate`` and
``stylebench transfer``. Same input, same bytes."""

from __future__ import annotations

import base64
import dataclasses
import html
import re
from collections.abc import Sequence
from pathlib import Path

from stylebench_jax.fileio import atomic_open, write_text_atomic

_CSS = ("body{font-family:system-ui,sans-serif;max-width:1150px;margin:2em auto;padding:0 1em;color:#222;"
        "line-height:1.4}table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:.85em}"
        "th,td{border:1px solid #ccc;padding:3px 7px;text-align:right;white-space:nowrap}"
        "th{background:#f2f2f2}"
        "td:first-child,th:first-child{text-align:left}.note{color:#555;font-size:.9em}img{max-width:100%}"
        ".scroll{overflow-x:auto}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}")


def markdown_text(text: str) -> str:
    """``text`` for a Markdown line, read literally: ``<``/``>`` would start an HTML tag (a model
    called ``<tfidf>`` would vanish on GitHub), ``*`` emphasis (``styl*o*metric``), a backtick code,
    ``&lt;`` an entity: each is backslash-escaped (backslashes too); ``[a](b)`` would be a link: its
    ``](`` becomes ``]\\(`` (an interval ``[0.1, 0.2]`` stays as it is). ``_`` is left: GitHub reads
    it literally inside a word, as in ``function_words``."""
    return re.sub(r"([\\<>*`&])", r"\\\1", str(text)).replace("](", "]\\(")


def markdown_cell(text: str) -> str:
    """``text`` for a Markdown table cell: as :func:`markdown_text`, and ``|`` (it would end the cell)."""
    return markdown_text(text).replace("|", "\\|")


@dataclasses.dataclass(frozen=True)
class Table:
    title: str
    note: str
    header: Sequence[str]
    rows: Sequence[Sequence[str]]


def fmt(value, digits: int = 3) -> str:
    """A number for a table cell (``-`` for None/NaN, never ``-0.000``), strings as they are."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            return "-"
        text = f"{value:.{digits}f}"
        return text[1:] if text.startswith("-") and float(text) == 0 else text
    return str(value)


def render_markdown(title: str, intro: Sequence[str], figures: Sequence[str], tables: Sequence[Table]) -> str:
    lines = [f"# {markdown_text(title)}", ""]
    for paragraph in intro:
        lines += [markdown_text(paragraph), ""]
    lines += [f"![{name}]({name})" for name in figures]
    lines.append("")
    for table in tables:
        lines += [f"## {markdown_text(table.title)}", ""]
        if table.note:
            lines += [markdown_text(table.note), ""]
        lines += ["| " + " | ".join(markdown_cell(h) for h in table.header) + " |",
                  "|" + "---|" * len(table.header)]
        lines += ["| " + " | ".join(markdown_cell(c) for c in row) + " |" for row in table.rows]
        lines.append("")
    return "\n".join(lines)


def render_html(title: str, intro: Sequence[str], pngs: dict[str, bytes], tables: Sequence[Table]) -> str:
    e = html.escape
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{e(title)}</title>"
             f"<style>{_CSS}</style></head><body>", f"<h1>{e(title)}</h1>"]
    parts += [f"<p>{e(p)}</p>" for p in intro]
    for name, png in pngs.items():
        data = base64.b64encode(png).decode("ascii")
        parts.append(f"<img alt='{e(name)}' src='data:image/png;base64,{data}'>")
    for table in tables:
        parts.append(f"<h2>{e(table.title)}</h2>")
        if table.note:
            parts.append(f"<p class='note'>{e(table.note)}</p>")
        header = "".join(f"<th>{e(h)}</th>" for h in table.header)
        parts.append(f"<div class='scroll'><table><tr>{header}</tr>")
        parts += ["<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in row) + "</tr>" for row in table.rows]
        parts.append("</table></div>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_document(output_dir: str | Path, stem: str, title: str, intro: Sequence[str],
                   tables: Sequence[Table], pngs: dict[str, bytes]) -> dict[str, Path]:
    """``<stem>.md``, ``<stem>.html`` and the PNG files in ``output_dir`` (each written atomically)."""
    output_dir = Path(output_dir)
    paths = {}
    for name, png in pngs.items():
        with atomic_open(output_dir / name, "wb") as handle:
            handle.write(png)
        paths[name] = output_dir / name
    paths["markdown"] = output_dir / f"{stem}.md"
    write_text_atomic(paths["markdown"], render_markdown(title, intro, list(pngs), tables))
    paths["html"] = output_dir / f"{stem}.html"
    write_text_atomic(paths["html"], render_html(title, intro, pngs, tables))
    return paths
