"""The package files a reader follows from ``python -m dpcompanion experiment h-f-eff --mode paper`` to
the verdict table of its page (the hops a reader makes): every file of the package whose functions the
command and ``ExperimentPage.verdicts`` call, in first-call order, found with ``sys.setprofile`` (calls
made while a module is being imported are the import's and are left out). The stored paper result is
loaded, not recomputed. Run from the repository root: ``.venv/bin/python tools/walk-files.py [ROOT]``
(ROOT: another checkout, e.g. a ``git worktree`` of an older commit, to compare)."""
import contextlib
import io
import os
import sys

root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
sys.path.insert(0, root)
files: list[str] = []


def profile(frame, event, arg):
    if event != "call" or frame.f_code.co_name == "<module>":
        return
    f = frame.f_code.co_filename
    if not f.startswith(os.path.join(root, "dpcompanion") + os.sep) or f in files:
        return
    b = frame.f_back
    while b is not None:
        if b.f_code.co_name == "<module>" and os.sep + "dpcompanion" + os.sep in b.f_code.co_filename:
            return
        b = b.f_back
    files.append(f)


from dpcompanion import cli  # noqa: E402
from dpcompanion.book import show  # noqa: E402

show.display = lambda obj: None
sys.setprofile(profile)
with contextlib.redirect_stdout(io.StringIO()):
    cli.main(["experiment", "h-f-eff", "--mode", "paper"])
    show.ExperimentPage("h-f-eff", mode="quick").verdicts()
sys.setprofile(None)
print(f"{len(files)} files")
for f in files:
    print(" ", os.path.relpath(f, root))
