"""The package files a reader follows, counted at run time: every file of the package whose functions
a command calls, in first-call order, found with ``sys.setprofile`` (calls made while a module is being
imported are the import's and are left out).

* ``experiment``: from ``python -m dpcompanion experiment h-f-eff --mode paper`` to the verdict table of
  its page (``ExperimentPage.verdicts``); the stored paper result is loaded, not recomputed;
* ``train``: from ``python -m dpcompanion train`` (the logistic model on synthetic data) to the first noise
  draw (``NoiseSource.draw``), the files after it left out.

Run from the repository root: ``.venv/bin/python tools/walk-files.py [experiment|train|all] [ROOT]``
(ROOT: another checkout, e.g. a ``git worktree`` of an older commit, to compare). Exit 1 when a walk
passes through more than ``LIMIT`` files."""
import contextlib
import io
import os
import sys

LIMIT = 10
which = sys.argv[1] if len(sys.argv) > 1 else "all"
if which not in ("experiment", "train", "all"):
    sys.exit(f"walk-files: error: the walk must be experiment, train or all, got {which!r}")
root = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else ".")
sys.path.insert(0, root)
PKG = os.path.join(root, "dpcompanion") + os.sep


class Walk:
    """The package files whose functions are called, in first-call order, until ``stop`` is called."""

    def __init__(self, stop: str | None = None):
        self.files: list[str] = []
        self.stop, self.done = stop, False

    def __call__(self, frame, event, arg):
        if event != "call" or self.done or frame.f_code.co_name == "<module>":
            return
        f = frame.f_code.co_filename
        if not f.startswith(PKG):
            return
        b = frame.f_back
        while b is not None:
            if b.f_code.co_name == "<module>" and b.f_code.co_filename.startswith(PKG):
                return
            b = b.f_back
        if f not in self.files:
            self.files.append(f)
        if self.stop and frame.f_code.co_qualname == self.stop:
            self.done = True


def run(walk: Walk, action) -> list[str]:
    sys.setprofile(walk)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            action()
    finally:
        sys.setprofile(None)
    return [os.path.relpath(f, root) for f in walk.files]


from dpcompanion import cli  # noqa: E402
from dpcompanion.book import show  # noqa: E402

show.display = lambda obj: None


def experiment():
    # the walk is of loading a stored result: a stale one would start the 95-minute paper run and
    # write its units into results/
    from dpcompanion.experiments import store
    if store.fresh_paper("h-f-eff") is None:
        sys.exit("walk-files: error: no fresh stored h-f-eff paper result to load; run "
                 "`python -m dpcompanion results --revalidate` first")
    cli.main(["experiment", "h-f-eff", "--mode", "paper"])
    show.ExperimentPage("h-f-eff", mode="quick").verdicts()


def train():
    cli.main(["train", "--dataset", "synthetic", "--model", "logistic", "--schedule", "uniform",
              "--epsilon", "1", "--delta", "1e-5", "--T", "5", "--seed", "0", "--json", "--no-progress"])


worst = 0
for name, action, stop in (("experiment", experiment, None), ("train", train, "NoiseSource.draw")):
    if which not in (name, "all"):
        continue
    files = run(Walk(stop), action)
    worst = max(worst, len(files))
    print(f"{name}: {len(files)} files")
    for f in files:
        print("  ", f)
sys.exit(1 if worst > LIMIT else 0)
