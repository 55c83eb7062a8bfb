"""The report writer: rendering, escaping, and atomic replacement of the report folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from reidrisk.report import ReportFigure, Section, definition_list, html_table, write_report
from reidrisk.report import html as report_html

# The smallest valid PNG: signature, IHDR (1 x 1, grey), IDAT, IEND.
PNG_1x1 = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108000000003a7e9b55"
    "0000000a49444154789c63600000000200015d0b2d6d0000000049454e44ae426082"
)


def _sections(tag: str = "a") -> list[Section]:
    return [
        Section("First part", f"<p>body {tag}</p>", (ReportFigure(f"fig_{tag}.png", PNG_1x1, "cap 1"),)),
        Section("Second part", html_table(["x", "y"], [[1, 2]]), ()),
    ]


def _leftovers(parent: Path, name: str) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(f".{name}."))


def test_writes_index_and_figures(tmp_path):
    out = tmp_path / "rep"
    index = write_report(_sections(), out, title="My report", subtitle="sub")
    assert index == out / "index.html"
    page = index.read_text(encoding="utf-8")
    assert (out / "fig_a.png").read_bytes() == PNG_1x1
    assert 'src="fig_a.png"' in page
    for text in ("My report", "sub", "First part", "Second part", "<p>body a</p>", "cap 1"):
        assert text in page
    assert 'id="first-part"' in page and 'href="#second-part"' in page
    assert _leftovers(tmp_path, "rep") == []


def test_plain_text_is_escaped_and_body_is_kept(tmp_path):
    sections = [Section("<b>title</b>", "<em>trusted</em>",
                        (ReportFigure("f.png", PNG_1x1, caption="<i>cap</i>"),))]
    page = write_report(sections, tmp_path / "r", title="<script>x</script>").read_text()
    assert "<script>x</script>" not in page and "&lt;script&gt;x&lt;/script&gt;" in page
    assert "&lt;b&gt;title&lt;/b&gt;" in page
    assert "&lt;i&gt;cap&lt;/i&gt;" in page
    assert "<em>trusted</em>" in page


def test_helpers_escape_data_values():
    table = html_table(["name", "n"], [["<x>", 3]], caption="a & b", numeric=[False, True])
    assert "&lt;x&gt;" in table and "<x>" not in table
    assert "a &amp; b" in table
    assert '<td class="num">3</td>' in table
    dl = definition_list({"k<": "v>"})
    assert "k&lt;" in dl and "v&gt;" in dl


def test_replaces_existing_report_entirely(tmp_path):
    out = tmp_path / "rep"
    write_report(_sections("a"), out)
    write_report(_sections("b"), out)
    assert sorted(p.name for p in out.iterdir()) == ["fig_b.png", "index.html"]
    assert "body b" in (out / "index.html").read_text()
    assert _leftovers(tmp_path, "rep") == []


def test_failure_midway_leaves_no_folder(tmp_path, monkeypatch):
    def boom(self, *args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(Path, "write_text", boom)  # figures are written, then index.html fails
    with pytest.raises(OSError, match="disk full"):
        write_report(_sections(), tmp_path / "rep")
    assert not (tmp_path / "rep").exists()
    assert list(tmp_path.iterdir()) == []


def test_failure_midway_keeps_the_old_report(tmp_path, monkeypatch):
    out = tmp_path / "rep"
    write_report(_sections("old"), out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def boom(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(Path, "write_text", boom)
    with pytest.raises(KeyboardInterrupt):
        write_report(_sections("new"), out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert _leftovers(tmp_path, "rep") == []


def test_failed_final_rename_restores_the_old_report(tmp_path, monkeypatch):
    out = tmp_path / "rep"
    write_report(_sections("old"), out)
    real_rename = Path.rename

    def rename(self, target):
        if ".tmp-" in self.name:  # moving the new folder into place fails
            raise OSError("rename failed")
        return real_rename(self, target)

    monkeypatch.setattr(Path, "rename", rename)
    with pytest.raises(OSError, match="rename failed"):
        write_report(_sections("new"), out)
    assert "body old" in (out / "index.html").read_text()
    assert _leftovers(tmp_path, "rep") == []


def test_render_failure_creates_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(report_html, "render_html", lambda *a, **k: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        write_report(_sections(), tmp_path / "rep")
    assert list(tmp_path.iterdir()) == []


def test_out_must_not_be_a_file(tmp_path):
    target = tmp_path / "rep"
    target.write_text("not a folder")
    with pytest.raises(FileExistsError, match="not a folder"):
        write_report(_sections(), target)


def test_creates_missing_parent_folders(tmp_path):
    index = write_report(_sections(), tmp_path / "a" / "b" / "rep")
    assert index.is_file()


@pytest.mark.parametrize("name", ["../x.png", "sub/x.png", "x.jpg", ".hidden.png", ""])
def test_figure_filename_must_be_a_bare_png_name(name):
    with pytest.raises(ValueError, match="bare name"):
        ReportFigure(name, PNG_1x1)


def test_figure_bytes_must_be_png():
    with pytest.raises(ValueError, match="not a PNG"):
        ReportFigure("x.png", b"GIF89a")


def test_duplicate_figure_names_rejected(tmp_path):
    fig = ReportFigure("same.png", PNG_1x1)
    with pytest.raises(ValueError, match="same.png"):
        write_report([Section("A", "", (fig,)), Section("B", "", (fig,))], tmp_path / "rep")
    assert not (tmp_path / "rep").exists()


def test_duplicate_anchors_rejected(tmp_path):
    with pytest.raises(ValueError, match="anchor"):
        write_report([Section("Same"), Section("same")], tmp_path / "rep")


def test_section_anchor_from_title():
    assert Section("Error against budget (JS)").anchor == "error-against-budget-js"
    assert Section("!!!").anchor == "section"
    assert Section("x", anchor="custom").anchor == "custom"


def test_report_folder_has_ordinary_permissions(tmp_path):
    out = tmp_path / "rep"
    write_report(_sections(), out)
    plain = tmp_path / "plain"
    plain.mkdir()
    assert out.stat().st_mode == plain.stat().st_mode


def test_tables_scroll_instead_of_overflowing(tmp_path):
    table = html_table(["a"] * 30, [[1] * 30])
    assert table.startswith('<div class="table-wrap"><table>') and table.endswith("</table></div>")
    page = write_report([Section("Wide", table)], tmp_path / "r").read_text()
    assert ".table-wrap { max-width: 100%; overflow-x: auto;" in page


def test_a_write_error_names_the_report_folder_not_the_temporary_one(tmp_path, monkeypatch):
    import errno
    from pathlib import Path

    def full_disk(self, data, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(self))

    monkeypatch.setattr(Path, "write_text", full_disk)
    out = tmp_path / "report"
    with pytest.raises(OSError) as info:
        write_report([Section("A", "<p>x</p>")], out)
    assert info.value.filename == str(out) and ".tmp-" not in str(info.value)
    assert list(tmp_path.iterdir()) == []
