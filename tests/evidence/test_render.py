"""`gluon-suite bench render`: docs tables written from the results, and a check that fails when a
table differs from what the results say."""
import shutil

import pytest

from gluon_suite.evidence import render, runner
from gluon_suite.utils.errors import UserError

from .conftest import git


def _results(root):
    runner.run("toy", root=str(root), show_progress=False, log=lambda m: None)
    return str(root / "bench" / "results")


def test_render_writes_the_tables_and_check_passes(toy_root):
    results = _results(toy_root)
    changed, blocks = render.render_files(str(toy_root), results)
    assert blocks == 2 and changed == [str(toy_root / "docs" / "toy.md")]
    text = (toy_root / "docs" / "toy.md").read_text()
    assert "| fast_better | acc |" in text and "| better | holds |" in text
    assert "Rendered from `bench/results/toy/" in text and "`gluon-suite bench run toy` reruns it" in text
    assert "| `toy` | v1 | fast is more accurate than slow | holds |" in text
    assert render.render_files(str(toy_root), results, check=True) == ([], 2)


def test_check_fails_when_one_number_in_a_copy_differs(toy_root, tmp_path):
    results = _results(toy_root)
    render.render_files(str(toy_root), results)
    copy = tmp_path / "copy"
    shutil.copytree(toy_root, copy)
    doc = copy / "docs" / "toy.md"
    text = doc.read_text()
    line = next(ln for ln in text.splitlines() if ln.startswith("| fast_better"))
    # change one figure of the rendered row (a digit of fast's mean accuracy)
    first_digit = next(i for i, ch in enumerate(line) if ch.isdigit() and line[i - 1] in ".0123456789")
    new = line[:first_digit] + str((int(line[first_digit]) + 1) % 10) + line[first_digit + 1:]
    doc.write_text(text.replace(line, new))
    changed, _ = render.render_files(str(copy), str(copy / "bench" / "results"), check=True)
    assert changed == [str(doc)]
    assert doc.read_text().count(new) == 1          # --check wrote nothing


def test_a_table_without_a_result_or_with_an_unknown_name_is_an_error(toy_root):
    with pytest.raises(UserError, match="no result for protocol 'toy'"):
        render.render_files(str(toy_root), str(toy_root / "nothing"), check=True)
    results = _results(toy_root)
    doc = toy_root / "docs" / "toy.md"
    doc.write_text(doc.read_text().replace("toy criteria", "toy speeds"))
    with pytest.raises(UserError, match="has no table 'speeds'"):
        render.render_files(str(toy_root), results, check=True)
    doc.write_text("<!-- bench:table toy criteria -->\nno end\n")
    with pytest.raises(UserError, match="no closing"):
        render.render_files(str(toy_root), results, check=True)


def test_the_claims_list_says_when_the_protocol_changed_since_the_result(toy_root):
    results = _results(toy_root)
    p = toy_root / "bench" / "protocols" / "toy.yaml"
    p.write_text(p.read_text().replace("version: 1", "version: 2"))
    git(toy_root, "commit", "-qam", "v2")
    render.render_files(str(toy_root), results)
    assert "| `toy` | v1 (protocol now v2) |" in (toy_root / "docs" / "toy.md").read_text()


def test_bare_figures_are_found_outside_rendered_blocks(tmp_path):
    doc = tmp_path / "d.md"
    doc.write_text("\n".join([
        "| a | b |", "|---|---|", "| sync | 13.5 s |",          # a measured figure, by hand
        "", "<!-- bench:settings -->", "| key | default |", "|---|---|", "| lr | 0.05 |",
        "", "<!-- bench:table x y -->", "| a |", "|---|", "| 0.97 |", "<!-- bench:end -->",
        "", "| flag | meaning |", "|---|---|", "| `--ratio 32` | 32x compression |", "| `--lr 0.1` | rate |"]))
    found = render.bare_figures(str(doc))
    assert [n for n, _ in found] == [3, 18]


def test_markers_and_tables_inside_code_fences_are_examples_not_blocks(toy_root):
    results = _results(toy_root)
    doc = toy_root / "docs" / "toy.md"
    doc.write_text("```text\n<!-- bench:table toy nothing -->\n| a | 0.5 |\n<!-- bench:end -->\n```\n")
    assert render.render_files(str(toy_root), results, check=True) == ([], 0)
    assert render.bare_figures(str(doc)) == []


def test_the_claims_list_marks_a_retired_protocol_with_its_reason(toy_root):
    results = _results(toy_root)
    p = toy_root / "bench" / "protocols" / "toy.yaml"
    p.write_text(p.read_text() + "retired: superseded by a longer job\n")
    git(toy_root, "commit", "-qam", "retired")
    render.render_files(str(toy_root), results)
    row = [ln for ln in (toy_root / "docs" / "toy.md").read_text().splitlines() if ln.startswith("| `toy` |")][0]
    assert row.endswith("; retired: superseded by a longer job | `" + row.rsplit("| `", 1)[1]) and "holds" in row
    # never run: the reason stands in for a verdict
    empty = toy_root / "no_results"
    empty.mkdir()
    text = "\n".join(render._claims_block(str(toy_root), str(empty)))
    assert "| never run; retired: superseded by a longer job | - |" in text
