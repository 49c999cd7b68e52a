#!/usr/bin/env bash
# The runs that need a GPU (issue 31, item 5), in one sitting on a machine with CUDA.
#
#   tools/gpu-runs.sh OUTDIR [SECONDS]
#
# Runs, each under its own time limit so that one failure or overrun leaves the others:
#   1. H-F-INFL-EXTRA at the paper's size (--mode paper --device cuda; resumable: finished
#      units stay under results/h-f-infl-extra/paper.units/, a rerun resumes them);
#   2. bench on the GPU (absolute times are valid there), to results/bench/cuda-full.json.
# Then packs results/ (the new files) into OUTDIR/results.tgz, with the logs beside it.
# Python packages not on the machine travel as wheels in .whl/ (see tools/README or
# CONTRIBUTING: opacus, dp-accounting, dm-tree); the MNIST cache in .cache/ avoids the wheel.
set -u
OUTDIR=${1:?usage: tools/gpu-runs.sh OUTDIR [SECONDS]}
BUDGET=${2:-480}
PY=${PYTHON:-python3}
mkdir -p "$OUTDIR"
start=$(date +%s)
left() { echo $(( BUDGET - ($(date +%s) - start) )); }
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "gpu-runs: the wheels in .whl/ did not install" >&2; exit 2; }
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1 PYTHONHASHSEED=0
nvidia-smi -L 2>&1 | tee "$OUTDIR/device.txt"
$PY -c "import torch, sys; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else '-')" 2>&1 | tee -a "$OUTDIR/device.txt"
find results -type f | sort > /tmp/gpu-runs.before
# 1. the paper-size influence rows (most of the budget)
t1=$(( $(left) - 150 ))
echo "== h-f-infl-extra paper (limit ${t1}s)"
timeout "$t1" $PY -m dpcompanion experiment h-f-infl-extra --mode paper --device cuda 2>&1 | tee "$OUTDIR/infl-extra.log" | tail -40
echo "h-f-infl-extra: exit ${PIPESTATUS[0]}"
# 2. the benchmark on this GPU
t2=$(( $(left) - 20 ))
echo "== bench (limit ${t2}s)"
timeout "$t2" $PY -m dpcompanion bench --device cuda --out results/bench/cuda-full.json --json > "$OUTDIR/bench.json" 2> "$OUTDIR/bench.log"
echo "bench: exit $?"; tail -5 "$OUTDIR/bench.log"
find results -type f | sort > /tmp/gpu-runs.after
comm -13 /tmp/gpu-runs.before /tmp/gpu-runs.after > "$OUTDIR/new-files.txt"
find results -newer /tmp/gpu-runs.before -type f | sort >> "$OUTDIR/new-files.txt"
sort -u "$OUTDIR/new-files.txt" -o "$OUTDIR/new-files.txt"
tar czf "$OUTDIR/results.tgz" -T "$OUTDIR/new-files.txt"
echo "packed $(wc -l < "$OUTDIR/new-files.txt") files in $(( $(date +%s) - start ))s"
