#!/usr/bin/env bash
# Measure everything on a machine with an NVIDIA GPU in one go, in under 8 minutes:
#   1. a Python environment with the CUDA build of JAX (the pinned jax version) and jaxsr;
#   2. the symbolic-regression iteration table (N = 1e4, 1e5, 1e6 x 11/51/101 nodes, ratio
#      to the [101, N] x [N, 40] matrix product, peak memory), the Feynman strategy-3
#      median and the cold first fit, on the device (benchmarks/bench_symbolic_iteration.py);
#   3. the optimal-tree benchmarks with the device backend (benchmarks/bench_trees_self.py
#      --backend jax).
# Results go to benchmarks/results/*_accelerator.{json,txt}; the tables are printed.
#
# Usage (repository root or anywhere):
#   bash benchmarks/accelerator.sh               # install CUDA JAX (needs PyPI) and run
#   JAXSR_WHEELS=/path/to/wheels bash benchmarks/accelerator.sh   # offline: pip --no-index
#   JAXSR_ACCEL_PYTHON=/some/venv/bin/python bash benchmarks/accelerator.sh  # use that env
#   bash benchmarks/accelerator.sh --dry-run     # no install, this Python, CPU, tiny sizes
#
# If the chosen Python already has a JAX that sees a GPU nothing is installed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
DRY=0
[[ "${1:-}" == "--dry-run" ]] && DRY=1
START=$(date +%s)
VENV="${JAXSR_ACCEL_VENV:-/tmp/jaxsr-accel-venv}"
JAX_VERSION="$(python3 - <<'EOF' 2>/dev/null || echo ""
import importlib.metadata as m
try:
    print(m.version("jax"))
except m.PackageNotFoundError:
    print("")
EOF
)"

log() { echo "[accelerator.sh $(( $(date +%s) - START )) s] $*" >&2; }

if [[ $DRY == 1 ]]; then
  PY="${JAXSR_ACCEL_PYTHON:-$(command -v python3)}"
  export JAX_PLATFORMS=cpu
  SIZES="2000,4000"; NODES="11,21"; REPEAT=1; EXTRA=(--cold); TREE_LIMIT=20
  SUFFIX=dryrun
  log "dry run with $PY on the CPU (tiny sizes)"
else
  PY="${JAXSR_ACCEL_PYTHON:-}"
  if [[ -z "$PY" ]]; then
    if [[ ! -x "$VENV/bin/python" ]]; then
      log "creating $VENV"
      python3 -m venv "$VENV"
    fi
    PY="$VENV/bin/python"
  fi
  if ! "$PY" -c "import jax, sys; sys.exit(0 if jax.default_backend() == 'gpu' else 1)" \
      2>/dev/null; then
    SPEC="jax[cuda12]${JAX_VERSION:+==$JAX_VERSION}"
    log "installing $SPEC and jaxsr into $("$PY" -c 'import sys; print(sys.prefix)')"
    PIP=("$PY" -m pip install -q)
    [[ -n "${JAXSR_WHEELS:-}" ]] && PIP+=(--no-index --find-links "$JAXSR_WHEELS")
    "${PIP[@]}" --upgrade pip >/dev/null 2>&1 || true
    "${PIP[@]}" "$SPEC" -e "$ROOT"
  fi
  "$PY" -c "import jax, sys; print('jax', jax.__version__, jax.devices()); \
sys.exit(0 if jax.default_backend() == 'gpu' else 'no GPU visible to JAX')"
  SIZES="10000,100000,1000000"; NODES="11,51,101"; REPEAT=3; EXTRA=(--feynman --cold)
  TREE_LIMIT=60
  SUFFIX=accelerator
fi
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p benchmarks/results

log "symbolic regression: iteration table (${SIZES} x ${NODES})${EXTRA:+, ${EXTRA[*]}}"
timeout 270 "$PY" benchmarks/bench_symbolic_iteration.py --table --sizes "$SIZES" \
  --nodes "$NODES" --repeat "$REPEAT" "${EXTRA[@]}" \
  --out "benchmarks/results/symbolic_iteration_${SUFFIX}" \
  || log "symbolic benchmark stopped (exit $?): partial results above"

log "optimal trees on the device backend"
DATASETS=()
if [[ $DRY == 1 ]]; then
  DATA="$("$PY" -c 'from jaxsr.datasets import shared_data_dir as s; d = s(required=False); print(d or "")')"
  [[ -n "$DATA" ]] && DATASETS=("$(ls "$DATA"/osrt/binarized/*.csv | head -1)")
fi
timeout 90 "$PY" benchmarks/bench_trees_self.py --backend jax --repeat 1 \
  --time-limit "$TREE_LIMIT" "${DATASETS[@]}" | tee "benchmarks/results/trees_self_${SUFFIX}.txt" \
  || log "tree benchmark stopped (exit $?): partial results above"
log "done in $(( $(date +%s) - START )) s; results in benchmarks/results/*_${SUFFIX}.*"
