"""Texts that look blank but are not: only zero-width, format or control characters (U+200B, NUL, a
BOM) pass `str.strip()`, yet a reader sees nothing. `predict`, `score` and `serve` refuse them."""

from __future__ import annotations

import unicodedata

from tinytf.errors import DataError

# letters and symbols that draw nothing: the Hangul fillers and the blank Braille pattern
BLANK_LOOKING = {"\u115f", "\u1160", "\u3164", "\uffa0", "\u2800"}
# control, format (zero-width space and joiners, BOM, bidi marks), unassigned, and every separator
INVISIBLE_CATEGORIES = {"Cc", "Cf", "Cn", "Zs", "Zl", "Zp"}


def invisible(char: str) -> bool:
    if char.isspace() or char in BLANK_LOOKING:
        return True
    if 0xFE00 <= ord(char) <= 0xFE0F or 0xE0100 <= ord(char) <= 0xE01EF:  # variation selectors
        return True
    return unicodedata.category(char) in INVISIBLE_CATEGORIES


def refuse_invisible(name: str, text: str) -> None:
    """Refuse a non-empty text made only of invisible characters, naming the first few."""
    if not text or not all(invisible(c) for c in text):
        return
    if not text.strip():  # only whitespace: tinytf.data.texts.refuse_blank's words
        raise DataError(f"{name} is only whitespace: there is nothing to read; give a text with words in it")
    seen = list(dict.fromkeys(c for c in text if not c.isspace()))
    codes = ", ".join(f"U+{ord(c):04X}" for c in seen[:3]) + (", ..." if len(seen) > 3 else "")
    raise DataError(
        f"{name} is only invisible characters ({codes}): there is nothing to read; "
        f"give a text with words in it"
    )
