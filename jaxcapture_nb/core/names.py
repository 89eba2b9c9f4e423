"""Names and values from user code, as the text and HTML views write them.

A sow name, a module attribute or a mode label can hold any character. A
newline in one would split a row of a text table, so a name could forge
rows; NUL shows raw; a right-to-left override (U+202E) reorders the text
after it. Every view writes such names through :func:`shown_name`, which
spells these characters as Python does in ``repr`` (``\\n``, ``\\x00``,
``\\u202e``); HTML views write names with :func:`html_name`, which also
isolates a name in ``<bdi>``, so right-to-left letters in it cannot move the
rest of a row. ``js/names.js`` does the same in the browser.
"""

from __future__ import annotations

import html
import re
from typing import Any

# C0 and C1 controls (Unicode category Cc), the line and paragraph
# separators, and the bidi marks, embeddings, overrides and isolates.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}

# How much of a value an error message quotes.
QUOTE_LIMIT = 200


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown_name(text: Any) -> str:
    """``text`` with its control characters written as visible escapes.

    Example:
      >>> shown_name("a\\nb"), shown_name("x\\x00y"), shown_name("r\\u202eevil"), shown_name(3)
      ('a\\\\nb', 'x\\\\x00y', 'r\\\\u202eevil', '3')
    """
    return _CONTROLS.sub(_escape, str(text))


def counted(n: int, noun: str) -> str:
    """A count and its noun, plural unless the count is one (``js/names.js`` has the same).

    Example:
      >>> counted(1, "step"), counted(0, "site"), counted(12, "run")
      ('1 step', '0 sites', '12 runs')
    """
    return f"{n} {noun}{'' if n == 1 else 's'}"


def html_name(text: Any) -> str:
    """A name as HTML: escaped as :func:`shown_name` and for HTML, isolated in a ``<bdi>``.

    Only letters of right-to-left scripts (and the controls, spelled out
    here) change the direction of the text around them, and ASCII holds
    none: a name that is all ASCII once escaped needs no ``<bdi>``, and
    most names are written without one.

    Example:
      >>> html_name("<b>\\u202e"), html_name("\\u05e9\\u05dc\\u05d5\\u05dd.h")
      ('&lt;b&gt;\\\\u202e', '<bdi>שלום.h</bdi>')
    """
    shown = html.escape(shown_name(text))
    return shown if shown.isascii() else f"<bdi>{shown}</bdi>"


def quoted(value: Any, limit: int = QUOTE_LIMIT) -> str:
    """``repr(value)`` for a message, cut after ``limit`` characters with an ellipsis and the size.

    A value sent from a browser or passed by mistake can be megabytes long;
    an error that quotes it whole would send it all back.

    Example:
      >>> quoted("abc")
      "'abc'"
      >>> quoted("x" * 10_000, limit=5)
      "'xxxx… (str, 10,000 characters)"
      >>> quoted(list(range(1000)), limit=8)
      '[0, 1, 2… (list, 1,000 items)'
    """
    text = repr(value)
    if len(text) <= limit:
        return text
    if isinstance(value, str):
        size = f"{len(value):,} characters"
    elif hasattr(value, "__len__"):
        size = f"{len(value):,} items"
    else:
        size = f"{len(text):,} characters written out"
    return f"{text[:limit]}… ({type(value).__name__}, {size})"
