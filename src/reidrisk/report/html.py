"""The HTML report: a list of sections written atomically into one folder.

A report is a folder holding ``index.html`` and the PNG figures it links to by relative path, so the
folder can be moved, zipped or served as it is. Every capability contributes ``Section`` objects;
``write_report`` renders them in order with one Jinja2 template (autoescaped).

Writing is atomic: the folder is built beside ``out`` under a temporary name and renamed into place
only when complete. A failure part-way leaves the previous report (if any) untouched and no
half-written folder behind.
"""

from __future__ import annotations

import html
import re
import shutil
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import jinja2

from reidrisk import __version__
from reidrisk._files import user_path_in_errors

_SAFE_FILENAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\.png$")


@dataclass(frozen=True)
class ReportFigure:
    """One PNG figure of a report section.

    Parameters
    ----------
    filename : str
        A bare name ending in .png, unique within the report (the figure sits next to
        index.html).
    png : bytes
        The encoded image.
    caption : str
        Plain text, escaped when rendered.
    alt : str
        Alternative text for screen readers.
    """

    filename: str
    png: bytes
    caption: str = ""
    alt: str = ""

    def __post_init__(self) -> None:
        if not _SAFE_FILENAME.match(self.filename):
            raise ValueError(
                f"figure filename {self.filename!r} must be a bare name of letters, digits, '.', '_' "
                "or '-' ending in .png (figures sit next to index.html)"
            )
        if not self.png.startswith(b"\x89PNG"):
            raise ValueError(f"figure {self.filename!r}: the bytes are not a PNG image")


@dataclass(frozen=True)
class Section:
    """One section of the report.

    ``title`` and figure captions are plain text (escaped when rendered). ``body`` is trusted HTML
    built by code: escape any value that comes from data (attribute names, categories) with
    ``escape`` or build it with ``html_table``/``paragraph``, which escape their inputs.
    Figures are shown after the body, in order.

    Parameters
    ----------
    title : str
        The heading (plain text).
    body : str
        Trusted HTML.
    figures : sequence of ReportFigure
        Shown after the body.
    anchor : str
        The section's id in the page (default: a slug of the title).
    """

    title: str
    body: str = ""
    figures: tuple[ReportFigure, ...] = ()
    anchor: str = field(default="")

    def __post_init__(self) -> None:
        object.__setattr__(self, "figures", tuple(self.figures))
        if not self.anchor:
            slug = re.sub(r"[^a-z0-9]+", "-", self.title.lower()).strip("-") or "section"
            object.__setattr__(self, "anchor", slug)


def escape(text: object) -> str:
    """HTML-escape a value for use inside a section body.

    Parameters
    ----------
    text : object
        The value (converted with ``str``).

    Returns
    -------
    str
        The escaped text.
    """
    return html.escape(str(text), quote=True)


def paragraph(text: str) -> str:
    """A ``<p>`` of escaped plain text.

    Parameters
    ----------
    text : str
        The paragraph's text.

    Returns
    -------
    str
        The ``<p>`` element.
    """
    return f"<p>{escape(text)}</p>"


def html_table(
    header: Sequence[object],
    rows: Iterable[Sequence[object]],
    caption: str | None = None,
    numeric: Sequence[bool] | None = None,
) -> str:
    """An HTML table with escaped cells.

    The table sits in a ``<div class="table-wrap">`` that scrolls sideways when the table is wider
    than the page (a narrow window or a phone), instead of overflowing it.

    Parameters
    ----------
    header : sequence
        The column headings.
    rows : iterable of sequence
        The rows' cells.
    caption : str, optional
        The table's caption.
    numeric : sequence of bool, optional
        ``numeric[i]`` right-aligns column i.

    Returns
    -------
    str
        The table's HTML.
    """
    header = list(header)
    numeric = list(numeric) if numeric is not None else [False] * len(header)
    cls = lambda i: ' class="num"' if i < len(numeric) and numeric[i] else ""  # noqa: E731
    parts = ['<div class="table-wrap"><table>']
    if caption:
        parts.append(f"<caption>{escape(caption)}</caption>")
    parts.append("<thead><tr>" + "".join(f"<th{cls(i)}>{escape(h)}</th>" for i, h in enumerate(header))
                 + "</tr></thead><tbody>")
    for row in rows:
        parts.append("<tr>" + "".join(f"<td{cls(i)}>{escape(c)}</td>" for i, c in enumerate(row))
                     + "</tr>")
    parts.append("</tbody></table></div>")
    return "".join(parts)


def definition_list(items: Mapping[str, object]) -> str:
    """A ``<dl>`` of escaped key/value pairs (for run parameters).

    Parameters
    ----------
    items : mapping
        The pairs, in order.

    Returns
    -------
    str
        The ``<dl>`` element.
    """
    return "<dl>" + "".join(
        f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in items.items()
    ) + "</dl>"


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("reidrisk", "report/templates"),
        autoescape=jinja2.select_autoescape(["html"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_html(sections: Sequence[Section], title: str, subtitle: str = "") -> str:
    """Render the sections into the page's HTML text (no files written).

    Parameters
    ----------
    sections : sequence of Section
        The page's sections, in order.
    title : str
        The page title.
    subtitle : str
        A line under the title.

    Returns
    -------
    str
        The whole page.
    """
    anchors = [s.anchor for s in sections]
    dupes = sorted({a for a in anchors if anchors.count(a) > 1})
    if dupes:
        raise ValueError(f"sections share the anchor(s) {dupes}; give them distinct titles or anchors")
    template = _environment().get_template("index.html")
    return template.render(
        title=title,
        subtitle=subtitle,
        sections=[
            {"title": s.title, "anchor": s.anchor, "body": s.body, "figures": s.figures}
            for s in sections
        ],
        version=__version__,
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )


def write_report(
    sections: Sequence[Section],
    out: str | Path,
    title: str = "reidrisk report",
    subtitle: str = "",
) -> Path:
    """Write ``out/index.html`` and the sections' figures next to it; return the path of index.html.

    The folder is assembled under a temporary name in ``out``'s parent and renamed into place at the
    end; an existing ``out`` is replaced only then. On any error (including an interrupt) the
    temporary folder is removed and an existing ``out`` is left as it was.

    Parameters
    ----------
    sections, title, subtitle
        As in ``render_html``.
    out : str or Path
        The report folder.

    Returns
    -------
    Path
        ``out/index.html``.
    """
    sections = list(sections)
    out = Path(out)
    names = [f.filename for s in sections for f in s.figures]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"figure filenames must be unique within a report; repeated: {dupes}")
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"report folder {str(out)!r} exists and is not a folder; pass another --out")
    parent = out.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    page = render_html(sections, title, subtitle)

    # a plain mkdir (not mkdtemp, which makes the folder private) so the report gets the same
    # permissions as any folder the user creates

    tmp = parent / f".{out.name}.tmp-{uuid.uuid4().hex[:12]}"
    with user_path_in_errors(out):
        tmp.mkdir()
    old: Path | None = None
    try:
        with user_path_in_errors(out):
            for s in sections:
                for fig in s.figures:
                    (tmp / fig.filename).write_bytes(fig.png)
            (tmp / "index.html").write_text(page, encoding="utf-8")
            if out.exists():
                old = parent / f".{out.name}.old-{uuid.uuid4().hex[:12]}"
                out.rename(old)
            tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None and old.exists() and not out.exists():
            old.rename(out)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return out / "index.html"
