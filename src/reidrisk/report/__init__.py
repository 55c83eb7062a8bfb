"""The HTML report and its plots.

A report is a list of ``Section`` objects written by ``write_report`` into one folder
(``index.html`` plus PNG figures linked by relative path). Capabilities add their own sections.
"""

from reidrisk.report.html import (
    ReportFigure,
    Section,
    definition_list,
    escape,
    html_table,
    paragraph,
    render_html,
    write_report,
)

__all__ = [
    "ReportFigure", "Section", "definition_list", "escape", "html_table", "paragraph",
    "render_html", "write_report",
]
