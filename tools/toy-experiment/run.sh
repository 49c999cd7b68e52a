#!/usr/bin/env bash
# CONTRIBUTING's worked example, run: add a toy experiment to a scratch checkout of HEAD (a git worktree,
# removed at the end) by its module, its notebook and one line of _toc.yml; run it, regenerate
# CATALOGUE.md, execute its page, run the tests that read every experiment, and print what changed.
# Run from the repository root after `make venv`: tools/toy-experiment/run.sh
set -euo pipefail
root=$(pwd)
here="$root/tools/toy-experiment"
tmp=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$tmp/wt" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git worktree add -q --detach "$tmp/wt" HEAD
cd "$tmp/wt"
ln -s "$root/.venv" .venv
[ -d "$root/.cache" ] && ln -s "$root/.cache" .cache
export PYTHONPATH="$tmp/wt"
# 1-3: what a contributor writes
cp "$here/h_x_toy.py" dpcompanion/experiments/h_x_toy.py
cp "$here/h-x-toy.ipynb" notebooks/h-x-toy.ipynb
sed -i 's|      - file: book/h-f-curv$|      - file: book/h-f-curv\n      - file: book/h-x-toy|' _toc.yml
# what the tools then generate
.venv/bin/python -m dpcompanion experiment h-x-toy --mode full
.venv/bin/python -m dpcompanion.book.catalogue > CATALOGUE.md
.venv/bin/python -m dpcompanion reproduce --only h-x-toy
.venv/bin/python -m pytest -q -p no:cacheprovider -n 2 tests/test_catalogue.py tests/test_judgements.py \
    tests/test_margins_pooling.py tests/test_verdicts_report.py tests/test_comparisons.py \
    tests/test_experiment_contract.py tests/test_store.py tests/test_layering.py tests/test_show.py
echo "--- changed by the contributor, then generated (git status of the scratch checkout):"
git status --short -- . ':!.venv' ':!.cache' ':!book'
