"""Project Gutenberg (and similar digitisation) boilerplate removal: the one home for it.

Two steps, each usable alone:

- ``strip_gutenberg_markers(text)``: keep only the text between Project Gutenberg's start and end
  markers (``*** START OF THE/THIS PROJECT GUTENBERG EBOOK ... ***``, the older
  ``*END*THE SMALL PRINT!...`` header end; ``*** END OF THE/THIS PROJECT GUTENBERG EBOOK``,
  ``End of (the) Project Gutenberg('s) ...``). A text without markers is returned unchanged.
  Writing7 (§3.1) uses the ``gutenberg`` library's ``strip_headers`` for this; that library needs
  a Berkeley-DB install, so the markers it looks for are matched here by line patterns instead.
- ``drop_boilerplate_lines(text)``: drop lines that name the digitisation (Project Gutenberg,
  "A Celebration of Women Writers", "Produced by" at a line start, "Transcribed from", "HTML
  version", Distributed Proofreading, HTML comment marks) in the text's edges, the first and last
  ``EDGE_FRACTION`` of its characters (at least ``EDGE_CHARS``): the shared novel collections had
  their headers cut already but keep stray credit and trailer lines there (all within 0.5% of the
  ends), while the same words inside a book are prose ("produced by those ruins on the castled
  Rhine", "transcribed from the Bible", "doctor Kysarcius-->": without the edge rule 19 lines of
  the shared novels' prose were dropped).

``clean_book`` is what the novel loaders apply (``data/novels.py``): ``drop_boilerplate_lines`` then
the first and last 2% of the characters cut at line boundaries (title pages and editors' notes
often name the author, a shortcut no style model should see).
"""

from __future__ import annotations

import re

TRIM_FRACTION = 0.02
EDGE_FRACTION = 0.01  # boilerplate lines are looked for in the first and last 1% of a text ...
EDGE_CHARS = 5_000  # ... or its first and last 5,000 characters, whichever is longer

_BOILERPLATE = ("gutenberg", "celebration of women writers", "transcribed from", "html version",
                "distributed proofreading", "<!--", "-->")
_BOILERPLATE_AT_LINE_START = ("produced by",)

_START_MARKER = re.compile(
    r"^[ \t]*(\*{3}[ \t]*START OF (THE|THIS) PROJECT GUTENBERG[^\n]*|\*END\*THE SMALL PRINT[^\n]*)$",
    re.IGNORECASE | re.MULTILINE)
_END_MARKER = re.compile(
    r"^[ \t]*(\*{3}[ \t]*END OF (THE|THIS) PROJECT GUTENBERG|END OF (THE )?PROJECT GUTENBERG)[^\n]*$",
    re.IGNORECASE | re.MULTILINE)


def strip_gutenberg_markers(text: str) -> str:
    """The text between the first start marker and the first end marker after it (see module)."""
    start = _START_MARKER.search(text)
    begin = start.end() if start else 0
    end = _END_MARKER.search(text, begin)
    if start is None and end is None:
        return text
    return text[begin:end.start() if end else len(text)]


def boilerplate_line_spans(text: str) -> list[tuple[int, int]]:
    """``[start, end)`` spans (line end included) of lines naming the digitisation in the text's
    edges (module docstring), sorted."""
    lowered = text.lower()
    edge = max(int(len(text) * EDGE_FRACTION), EDGE_CHARS)
    spans = set()
    for keyword in _BOILERPLATE + _BOILERPLATE_AT_LINE_START:
        position = lowered.find(keyword)
        while position >= 0:
            start = lowered.rfind("\n", 0, position) + 1
            end = lowered.find("\n", position)
            end = len(lowered) if end < 0 else end + 1
            in_edges = start < edge or end > len(text) - edge
            at_start = keyword not in _BOILERPLATE_AT_LINE_START or not lowered[start:position].strip()
            if in_edges and at_start:
                spans.add((start, end))
            position = lowered.find(keyword, end)
    return sorted(spans)


def drop_boilerplate_lines(text: str) -> str:
    """``text`` without the lines of :func:`boilerplate_line_spans`."""
    pieces, previous = [], 0
    for start, end in boilerplate_line_spans(text):
        if start >= previous:
            pieces.append(text[previous:start])
            previous = end
    return "".join(pieces) + text[previous:]


def strip_gutenberg(text: str) -> str:
    """Header/footer cut at the markers, then boilerplate lines dropped (no trimming)."""
    return drop_boilerplate_lines(strip_gutenberg_markers(text))


def clean_book(text: str, trim_fraction: float = TRIM_FRACTION) -> str:
    """Drop digitisation boilerplate lines, then the first and last ``trim_fraction`` of the
    characters (cut at line ends); stripped."""
    body = drop_boilerplate_lines(text)
    cut = int(len(body) * trim_fraction)
    start = body.find("\n", cut)
    end = body.rfind("\n", 0, len(body) - cut)
    if start < 0 or end <= start:
        return body.strip()
    return body[start + 1:end].strip()
