"""A link's rate from its text (``plan --bandwidth``)."""

from __future__ import annotations

import re

from dgl_chunked.errors import OptionError

__all__ = ["parse_bandwidth"]

_RATE = re.compile(r"^\s*([0-9.]+(?:e[0-9]+)?)\s*([kmgt]?)(bit|bps|b/s|B/s|B)?\s*$", re.IGNORECASE)


def parse_bandwidth(text: str | float | None) -> float | None:
    """Bytes per second from ``"1gbit"``, ``"100mbit"``, ``"125MB/s"`` or a number of bytes/s.

    Raises
    ------
    OptionError
        The text is not a rate.
    """
    if text is None or isinstance(text, (int, float)):
        return None if text is None else float(text)
    match = _RATE.match(text)
    if not match:
        raise OptionError(f"bandwidth {text!r}: expected a rate such as '1gbit', '100mbit' or '125MB/s'")
    value, prefix, unit = float(match[1]), match[2].lower(), (match[3] or "B")
    scale = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}[prefix]
    bits = unit.lower() in ("bit", "bps") or unit == "b/s"
    rate = value * scale / (8 if bits else 1)
    if rate <= 0:
        raise OptionError(f"bandwidth {text!r}: expected a positive rate")
    return rate
