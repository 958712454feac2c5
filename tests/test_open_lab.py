"""`contrastive-nb open`: a tutorial opened the README's way runs and saves in its own run folder, so JupyterLab's
"run all" and save (and its autosave) leave the repository as it was.

The browser test builds a small repository of its own (the project's .gitignore, one committed tutorial-like
notebook), starts `contrastive-nb open` there, runs every cell with JupyterLab's own command in Debian's Chromium
(Playwright), saves, and reads `git status`. Every wait is on a condition, with generous timeouts."""
import json
import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from helpers import ROOT, tool
from test_explorer_browser import CHROME_ARGS, CHROMIUM, _free_port, calm_browser, open_notebook

CELLS = ['out_dir = None  # the run folder (None: a new one)',
         'from pathlib import Path\nPath("written.txt").write_text("from the lab")\nprint("ran in", Path.cwd().name)']


def _git(repo, *args):
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout


def _repository(tmp_path) -> Path:
    "A checkout holding nbs/tutorials/tiny.ipynb, committed, with the project's .gitignore."
    repo = tmp_path / "repo"
    (repo / "nbs" / "tutorials").mkdir(parents=True)
    shutil.copyfile(ROOT / ".gitignore", repo / ".gitignore")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nb.cells[0].metadata["tags"] = ["parameters"]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, repo / "nbs" / "tutorials" / "tiny.ipynb")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "tutorial")
    return repo


def test_copy_only_copies_into_a_run_folder_and_refuses_a_taken_name(tmp_path, env):
    nb = ROOT / "nbs" / "tutorials" / "smoke_digits.ipynb"
    before = nb.read_bytes()
    run = lambda: subprocess.run([tool("contrastive-nb"), "open", str(nb), "--name", "mine", "--copy-only"],
                                 cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    r = run()
    assert r.returncode == 0, r.stderr
    copy = tmp_path / "runs" / "mine" / "smoke_digits.ipynb"
    assert copy.read_bytes() == before and "start JupyterLab with:" in r.stdout, r.stdout
    assert "--ServerApp.root_dir=" + str(copy.parent) in r.stdout
    again = run()                                   # a taken name: one sentence, the copy untouched
    assert again.returncode == 2 and "mine" in again.stderr and again.stderr.count("\n") == 1, again.stderr
    assert "choose another `--name`" in again.stderr, again.stderr  # an option the command has
    (tmp_path / "afile").write_text("")
    on_file = subprocess.run([tool("contrastive-nb"), "open", str(nb), "--root", "afile", "--copy-only"],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert on_file.returncode == 2 and "`--root` must be a folder" in on_file.stderr, on_file.stderr
    missing = subprocess.run([tool("contrastive-nb"), "open", "nope.ipynb"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=300)
    assert missing.returncode == 2 and "nope.ipynb" in missing.stderr, missing.stderr
    assert nb.read_bytes() == before


def test_run_all_and_save_in_jupyterlab_leave_the_repository_clean(tmp_path, env):
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}; `make test` installs Debian's chromium")
    from playwright.sync_api import sync_playwright
    repo = _repository(tmp_path)
    original = (repo / "nbs" / "tutorials" / "tiny.ipynb").read_bytes()
    assert _git(repo, "status", "--porcelain") == ""
    port, token = _free_port(), "t" * 32
    e = dict(env, JUPYTER_TOKEN=token)
    e.pop("CONTRASTIVE_NB_HEADLESS", None)
    for var, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_RUNTIME_DIR", "runtime"), ("IPYTHONDIR", "ipy")):
        e[var] = str(tmp_path / sub)
    (tmp_path / "config" / "labconfig").mkdir(parents=True)
    (tmp_path / "config" / "labconfig" / "page_config.json").write_text(
        '{"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": true}}')
    (tmp_path / "config" / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"allow_root": True, "ip": "127.0.0.1"},
                    "LabApp": {"expose_app_in_browser": True}}))
    log = open(tmp_path / "lab.log", "w")
    lab = subprocess.Popen([tool("contrastive-nb"), "open", "nbs/tutorials/tiny.ipynb", "--name", "lab",
                            "--no-browser", "--port", str(port)], cwd=repo, env=e, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    copy = repo / "runs" / "lab" / "tiny.ipynb"
    try:
        for _ in range(480):
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        else:
            raise AssertionError("JupyterLab did not start:\n" + (tmp_path / "lab.log").read_text()[-3000:])
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROME_ARGS)
            try:
                page = browser.new_page()
                page.on("dialog", lambda d: d.dismiss())
                # the copy, as `contrastive-nb open` prints it; every cell run with JupyterLab's own command
                open_notebook(page, url, token, "tiny.ipynb", timeout=240_000)
                calm_browser()
                page.wait_for_function("document.querySelector('.jp-Notebook').innerText.includes('ran in lab')",
                                       timeout=240_000)
                page.evaluate("window.jupyterapp.commands.execute('docmanager:save')")
                for _ in range(480):                   # the save reaches the copy on disk
                    if copy.exists() and "ran in lab" in copy.read_text():
                        break
                    time.sleep(0.5)
                else:
                    raise AssertionError("the saved copy never held the run's output")
            finally:
                browser.close()
    finally:
        lab.terminate()
        try:
            lab.wait(30)
        except subprocess.TimeoutExpired:
            lab.kill()
        log.close()
    assert (repo / "runs" / "lab" / "written.txt").read_text() == "from the lab"  # the notebook wrote in its folder
    assert (repo / "nbs" / "tutorials" / "tiny.ipynb").read_bytes() == original
    assert _git(repo, "status", "--porcelain") == "", _git(repo, "status", "--porcelain")
