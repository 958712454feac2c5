"""The library must be exactly what the notebooks export: edit nbs/, run nbdev_export, commit both."""
import filecmp
import shutil
import subprocess

from helpers import ROOT, tool


def test_library_matches_notebooks(tmp_path, env):
    for name in ["settings.ini", "setup.py", "README.md"]:
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "nbs", tmp_path / "nbs", ignore=shutil.ignore_patterns(".ipynb_checkpoints", "_proc", "_docs"))
    subprocess.run([tool("nbdev_export")], cwd=tmp_path, env=env, check=True, capture_output=True)
    fresh, ours = tmp_path / "contrastive_nb", ROOT / "contrastive_nb"
    fresh_files = sorted(p.relative_to(fresh) for p in fresh.rglob("*.py"))
    our_files = sorted(p.relative_to(ours) for p in ours.rglob("*.py"))
    assert fresh_files == our_files, f"modules differ: exported {fresh_files}, committed {our_files}"
    stale = [str(p) for p in fresh_files if not filecmp.cmp(fresh / p, ours / p, shallow=False)]
    assert not stale, f"contrastive_nb/ is not what nbs/ exports: {stale}; run nbdev_export and commit"
