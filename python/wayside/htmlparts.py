"""The pieces of the self-contained HTML pages (`wayside report`): figures
as PNG data URIs, tables, and number formatting; nothing in them loads
anything from elsewhere."""

from __future__ import annotations

import base64
import html
import io
import math
from typing import Any, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

DPI = 90


def png(fig: Any, dpi: int = DPI) -> str:
    """The figure as base64 PNG (closed afterwards)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def figure(key: str, fig: Any, caption: str) -> str:
    """A <figure> holding `fig` inline, with its caption."""
    return (f"<figure id='{html.escape(key)}'><img alt='{html.escape(caption)}' src='data:image/png;base64,{png(fig)}'>"
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def fmt(v: Any, spec: str = "{:.3g}") -> str:
    """`v` formatted, or a dash for None and NaN."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return spec.format(v)


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], cls: str = "") -> str:
    """An HTML table; the headers are escaped here, the cells must be already."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
