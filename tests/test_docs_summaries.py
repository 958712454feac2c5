"""Every notebook opens with `# Title` and a one-line `> summary`, and every module's docstring — which nbdev makes
from that line — is one complete sentence (so `help(contrastive_nb.train)` and the docs never show a stub cut
mid-sentence, as they did when summaries ran over several `>` lines)."""
import ast
import re

import nbformat
import pytest

from helpers import ROOT

NOTEBOOKS = sorted(p for p in (ROOT / "nbs").rglob("*.ipynb")
                   if ".ipynb_checkpoints" not in p.parts and not p.name.startswith(("_", ".")))
MODULES = sorted(p for p in (ROOT / "contrastive_nb").glob("*.py") if not p.name.startswith("_"))


def _first_cell(nb_path):
    return nbformat.read(nb_path, as_version=4).cells[0]


def _one_sentence_problems(text: str) -> list[str]:
    problems = []
    if "\n" in text:
        problems.append("runs over several lines")
    if not re.match(r"^[A-Z*`\"'(\[]", text):
        problems.append("does not start like a sentence")
    if not text.rstrip().endswith((".", "?", "!")):
        problems.append("does not end with a full stop")
    body = text.rstrip()[:-1]
    if re.search(r"[.!?]\s+[A-Z][a-z]", body.replace("vs. ", "vs ").replace("e.g. ", "eg ").replace("i.e. ", "ie ")):
        problems.append("holds more than one sentence")
    for a, b in ["()", "[]"]:
        if body.count(a) != body.count(b):
            problems.append(f"unbalanced {a}{b}")
    if body.count("`") % 2:
        problems.append("an unclosed `")
    if len(text) > 300:
        problems.append(f"is {len(text)} characters long (a summary, not a paragraph)")
    return problems


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_notebook_opens_with_title_and_one_line_summary(nb):
    cell = _first_cell(nb)
    assert cell.cell_type == "markdown", "the first cell must be the title cell"
    lines = cell.source.strip().split("\n")
    assert re.match(r"^# \S", lines[0]), f"first line {lines[0]!r} is not `# Title`"
    assert len(lines) == 3 and lines[1] == "" and lines[2].startswith("> "), (
        f"the title cell must be exactly `# Title`, a blank line and one `> summary` line (nbdev drops the whole cell "
        f"from the docs and makes the module docstring from the `>` line); got {len(lines)} lines")
    problems = _one_sentence_problems(lines[2][2:])
    assert not problems, f"the summary {problems}: {lines[2]!r}"


@pytest.mark.parametrize("mod", MODULES, ids=lambda p: p.stem)
def test_module_docstring_is_one_complete_sentence(mod):
    doc = ast.get_docstring(ast.parse(mod.read_text(encoding="utf-8")), clean=False)
    assert doc, f"{mod.name} has no module docstring"
    problems = _one_sentence_problems(doc)
    assert not problems, f"{mod.name}: the docstring {problems}: {doc!r}"
    src = re.search(r"File to edit: \.\./nbs/(\S+\.ipynb)", mod.read_text(encoding="utf-8"))
    assert src, f"{mod.name} does not name its notebook"
    summary = _first_cell(ROOT / "nbs" / src.group(1)).source.strip().split("\n")[-1][2:]
    assert doc == summary, f"{mod.name}'s docstring is not its notebook's summary (run nbdev_export)"


def test_the_checks_catch_a_cut_summary():
    cut = "The training engine: one `fit` for an encoder + projection head on an unlabeled loader and, optionally, a"
    assert "does not end with a full stop" in _one_sentence_problems(cut)
    assert "holds more than one sentence" in _one_sentence_problems("One thing. Another thing.")
    assert "an unclosed `" in _one_sentence_problems("A `fit that never closes.")
    assert _one_sentence_problems("Results (`nbs/results/<experiment>/`), vs. baselines, e.g. SimCLR.") == []
