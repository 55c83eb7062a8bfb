"""Plots for the report, drawn with matplotlib's object API on the Agg canvas.

Every ``plot_*`` function returns the PNG bytes of one figure (``figure_png``) so a ``ReportFigure``
can be built from it; the matching ``*_figure`` function returns the matplotlib ``Figure`` itself (to
inspect or restyle). No pyplot state is used, so figures never leak between calls or threads.

Text is set in ``FONT_FAMILY``: DejaVu Sans (bundled with matplotlib) first, then whichever of some
common fonts for other scripts (CJK, Arabic, Devanagari, ...) are installed, so a category label
such as "東京" is drawn from the first font that has its glyphs. Characters no installed font has are
drawn as boxes, and ``figure_png`` says so in one ``MissingGlyphWarning`` naming them and the fix.
"""

from __future__ import annotations

import io
import re
import warnings
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import NullLocator

from reidrisk.schema import Attribute

DPI = 110

FONT_PREFERENCE: tuple[str, ...] = (
    "DejaVu Sans",
    "Noto Sans", "Noto Sans CJK JP", "Noto Sans CJK SC", "Noto Sans CJK TC", "Noto Sans CJK KR",
    "Source Han Sans", "WenQuanYi Micro Hei", "WenQuanYi Zen Hei", "Droid Sans Fallback",
    "Noto Sans Arabic", "Noto Sans Hebrew", "Noto Sans Devanagari", "Noto Sans Thai",
    "Arial Unicode MS", "Microsoft YaHei", "Yu Gothic", "Malgun Gothic", "PingFang SC",
    "Hiragino Sans", "Apple SD Gothic Neo", "Segoe UI",
)
"""Fonts tried in order for every character of a figure's text (those installed are used)."""


class MissingGlyphWarning(UserWarning):
    """Some text of a figure uses characters that no installed font can draw."""


@lru_cache(maxsize=1)
def font_family() -> tuple[str, ...]:
    """The installed fonts of ``FONT_PREFERENCE``, in order (DejaVu Sans always)."""
    from matplotlib import font_manager

    manager = font_manager.fontManager
    installed = {f.name for f in manager.ttflist}
    if not installed.intersection(FONT_PREFERENCE[1:]):
        # matplotlib's font list is cached when first built: fonts installed since are missing
        # from it, so look for the preferred ones among the system's font files once
        known = {f.fname for f in manager.ttflist}
        for path in font_manager.findSystemFonts():
            if path in known:
                continue
            try:
                name = font_manager.get_font(path).family_name
                if name in FONT_PREFERENCE:
                    manager.addfont(path)
                    installed.add(name)
            except Exception:  # an unreadable font file is skipped
                continue
    return tuple(name for name in FONT_PREFERENCE if name == "DejaVu Sans" or name in installed)
_LINESTYLES = ("-", "--", ":", "-.")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def new_figure(width: float, height: float) -> Figure:
    """A figure of ``width`` x ``height`` inches attached to an Agg canvas.

    Parameters
    ----------
    width, height : float
        Size in inches.

    Returns
    -------
    matplotlib.figure.Figure
        The empty figure.
    """
    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def figure_png(fig: Figure) -> bytes:
    """Encode a figure as PNG bytes, its text in ``font_family()`` (module doc).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.

    Returns
    -------
    bytes
        The PNG image.
    """
    from matplotlib.text import Text

    family = list(font_family())
    for text in fig.findobj(Text):
        text.set_fontfamily(family)
    buf = io.BytesIO()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig.savefig(buf, format="png", dpi=DPI)
    missing = []
    for w in caught:
        found = re.search(r"Glyph \d+ \((.*?)\) missing from", str(w.message))
        if found is None:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        elif found.group(1) not in missing:
            missing.append(found.group(1))
    if missing:
        warnings.warn(
            f"no installed font can draw {len(missing)} character(s) of the figure's labels "
            f"({', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''}); they show as boxes. "
            "Install a font that covers them (e.g. Noto Sans CJK for Chinese, Japanese and Korean: "
            "`apt install fonts-noto-cjk`)", MissingGlyphWarning, stacklevel=2)
    return buf.getvalue()


def _colors(labels: Sequence[str]) -> dict[str, tuple]:
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return {lab: cmap(i % 10) for i, lab in enumerate(labels)}


def plot_error_curves(*args, **kwargs) -> bytes:
    """PNG of ``error_curves_figure``.

    Parameters
    ----------
    *args, **kwargs
        As in ``error_curves_figure``.

    Returns
    -------
    bytes
        The PNG image.
    """
    return figure_png(error_curves_figure(*args, **kwargs))


def error_curves_figure(
    table: pd.DataFrame,
    value: str = "js",
    panels: Sequence[tuple[str, str]] = (("marginal", "Single attributes"), ("pair", "Pairs of attributes")),
    reference: Mapping[str, float] | None = None,
    ylabel: str = "mean JS divergence (bits)",
    xlabel: str = "epsilon (whole record)",
    title: str = "",
) -> Figure:
    """Error against budget, one panel per target, log-log.

    Each (mechanism, method) is one line: colour = mechanism, line style = method.

    Parameters
    ----------
    table : pandas.DataFrame
        Long format with columns ``mechanism``, ``epsilon``, ``target``, ``method`` and the
        ``value`` column.
    value : str
        The column plotted.
    panels : sequence of (str, str)
        (target, panel title) of each panel.
    reference : mapping, optional
        ``reference[target]`` draws a dotted horizontal line (e.g. the error of a uniform guess).
    ylabel, xlabel, title : str
        Axis labels and the figure title.

    Returns
    -------
    matplotlib.figure.Figure
        The figure.
    """
    mechanisms = list(dict.fromkeys(table["mechanism"]))
    methods = list(dict.fromkeys(table["method"]))
    colors = _colors(mechanisms)
    styles: dict[str, Any] = {m: _LINESTYLES[i % len(_LINESTYLES)] for i, m in enumerate(methods)}
    fig = new_figure(5.2 * len(panels), 4.2)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (target, panel_title) in zip(axes, panels):
        sub = table[table["target"] == target]
        for (mech, method), grp in sub.groupby(["mechanism", "method"], sort=False):
            grp = grp.sort_values("epsilon")
            y = grp[value].to_numpy(float)
            ax.plot(grp["epsilon"], np.where(y > 0, y, np.nan), color=colors[mech],
                    linestyle=styles[method], marker=_MARKERS[mechanisms.index(mech) % len(_MARKERS)],
                    markersize=4, linewidth=1.6)
        if reference and target in reference:
            ax.axhline(reference[target], color="0.45", linestyle=":", linewidth=1.2)
            ax.annotate("uniform guess", (1.0, reference[target]), xycoords=("axes fraction", "data"),
                        xytext=(-4, -3), textcoords="offset points", ha="right", va="top",
                        fontsize=8, color="0.35")
        ax.set_xscale("log")
        ax.set_yscale("log")
        eps = np.sort(sub["epsilon"].unique())
        ax.set_xticks(eps, [f"{e:g}" for e in eps])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_title(panel_title, fontsize=11)
        ax.set_xlabel(xlabel)
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_ylabel(ylabel)
    handles = [Line2D([], [], color=colors[m], marker=_MARKERS[i % len(_MARKERS)], label=m)
               for i, m in enumerate(mechanisms)]
    if len(methods) > 1:
        handles += [Line2D([], [], color="0.3", linestyle=styles[m], label=f"method: {m}") for m in methods]
    fig.legend(handles=handles, loc="outside right center", fontsize=9, frameon=False)
    if title:
        fig.suptitle(title, fontsize=12)
    return fig


def _short(label: str, width: int = 12) -> str:
    return label if len(label) <= width else label[: width - 1] + "\u2026"


def plot_distributions(
    attributes: Sequence[Attribute],
    truth: Sequence[np.ndarray],
    estimates: Mapping[str, Mapping[str, Sequence[np.ndarray]]],
    title: str = "",
) -> bytes:
    """PNG of ``distributions_figure``.

    Parameters
    ----------
    attributes, truth, estimates, title
        As in ``distributions_figure``.

    Returns
    -------
    bytes
        The PNG image.
    """
    return figure_png(distributions_figure(attributes, truth, estimates, title))


def distributions_figure(
    attributes: Sequence[Attribute],
    truth: Sequence[np.ndarray],
    estimates: Mapping[str, Mapping[str, Sequence[np.ndarray]]],
    title: str = "",
) -> Figure:
    """True against estimated distributions: one row per attribute, one column per mechanism.

    Bars show the truth, markers the estimates (one marker shape per method).

    Parameters
    ----------
    attributes : sequence of Attribute
        The attributes, one row each.
    truth : sequence of numpy.ndarray
        ``truth[i]`` is the true distribution of ``attributes[i]`` (shape (f_i,)).
    estimates : mapping
        ``estimates[mechanism][method][i]`` is the estimate of ``truth[i]``.
    title : str
        The figure title.

    Returns
    -------
    matplotlib.figure.Figure
        The figure.
    """
    mechanisms = list(estimates)
    methods = list(dict.fromkeys(m for per in estimates.values() for m in per))
    colors = _colors(mechanisms)
    markers = {m: _MARKERS[i % len(_MARKERS)] for i, m in enumerate(methods)}
    ncol, nrow = max(len(mechanisms), 1), len(attributes)
    fig = new_figure(max(2.6 * ncol, 6.0), 2.7 * nrow + 0.6)
    axes = fig.subplots(nrow, ncol, squeeze=False, sharey="row")
    for r, (attr, p_true) in enumerate(zip(attributes, truth)):
        x = np.arange(attr.size)
        ymax = float(np.max(p_true))
        for c, mech in enumerate(mechanisms):
            ax = axes[r, c]
            ax.bar(x, p_true, color="0.82", edgecolor="0.6", width=0.8, label="true")
            for k, method in enumerate(methods):
                if method not in estimates[mech]:
                    continue
                est = np.asarray(estimates[mech][method][r], dtype=float)
                ymax = max(ymax, float(est.max()))
                offset = (k - (len(methods) - 1) / 2) * 0.22
                ax.plot(x + offset, est, linestyle="none", marker=markers[method], markersize=4.5,
                        color=colors[mech], markerfacecolor="white" if k else colors[mech])
            step = max(1, int(np.ceil(attr.size / 8)))
            ax.set_xticks(x[::step], [_short(lab) for lab in attr.categories[::step]],
                          rotation=45 if attr.size > 4 else 0, ha="right" if attr.size > 4 else "center",
                          fontsize=7)
            ax.tick_params(axis="y", labelsize=8)
            if r == 0:
                ax.set_title(mech, fontsize=11, color=colors[mech])
            if c == 0:
                ax.set_ylabel(f"{_short(attr.name, 18)}\nprobability", fontsize=9)
            ax.grid(True, axis="y", alpha=0.3)
        axes[r, 0].set_ylim(0, ymax * 1.12)
    handles = [Line2D([], [], color="0.82", marker="s", linestyle="none", markersize=8,
                      markeredgecolor="0.6", label="true")]
    handles += [Line2D([], [], color="0.3", marker=markers[m], linestyle="none",
                       markerfacecolor="white" if i else "0.3", label=m) for i, m in enumerate(methods)]
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=9, frameon=False)
    if title:
        fig.suptitle(title, fontsize=12)
    return fig
