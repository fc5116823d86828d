#!/usr/bin/env bash
# Runs several offline bundles side by side on one lent GPU box and packs what comes back: the
# device run of experiments/deepspeed/gpu_h200.yaml (docs/deepspeed.md, "On a GPU node: measured
# on an H200"). Each bundle is one member of the experiment, exported here by
#   tools/gpu_h200.sh --export DIR            (needs .venv-deepspeed; wheels for the box's Python 3.12)
# run there by
#   OUT=/somewhere tools/gpu_h200.sh --offline DIR   (every DIR/<member>/ at once; OUT/<member>.tar.gz back)
# and judged here by
#   tools/gpu_h200.sh --import DIR            (DIR/<member>.tar.gz or DIR/<member>/: parity run --import)
#   tools/gpu_h200.sh --dry-run               (anywhere: `parity plan` of every member; tested in CI)
# Bundles run side by side because one tiny phase leaves the GPU and the box's 16 cores mostly idle;
# each phase is still its own process on its own rendezvous port (torchrun --standalone).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
experiment=experiments/deepspeed/gpu_h200.yaml
members=(seed zero3-adamw zero1 zero2)
# The members are --set overrides of the one file (its header says what each is).
member_sets() {
  # torch AdamW, nothing offloaded; no CPU-Adam, so no primed resume. ZeRO-1/2 have no shared
  # Adam step to unshare, so no fixed resume either.
  local adamw=(--set trainer.args.optimizer=torch_adamw --set trainer.args.offload=none
    --set 'compare=[{a: baseline, b: resume-native, lane: exact}, {a: baseline, b: resume-universal, lane: exact}, {a: resume-native, b: resume-universal, lane: exact}]')
  case "$1" in
    seed) ;;
    zero3-adamw) printf '%s\n' "${adamw[@]}" \
      --set 'resume={native: {from: native}, universal: {from: universal}, universal-fixed: {from: universal, args: {unshare_adam_step: true}}}' \
      --set 'compare=[{a: baseline, b: resume-native, lane: exact}, {a: baseline, b: resume-universal, lane: exact}, {a: resume-native, b: resume-universal, lane: exact}, {a: baseline, b: resume-universal-fixed, lane: exact}]' ;;
    zero1 | zero2) printf '%s\n' "${adamw[@]}" --set "trainer.args.zero_stage=${1#zero}" \
      --set 'resume={native: {from: native}, universal: {from: universal}}' ;;
  esac
}
mode="${1:-}" dir="${2:-}"
if [[ $mode == --dry-run ]]; then
  for m in "${members[@]}"; do
    mapfile -t sets < <(member_sets "$m")
    npx -y deno@2.9.6 run -A src/cli/main.ts plan "$experiment" --set "name=deepspeed-gpu-h200-$m" \
      "${sets[@]}" || exit $?
  done
  exit 0
fi
[[ -n $dir ]] || { echo "usage: tools/gpu_h200.sh --export|--offline|--import DIR" >&2; exit 2; }

case "$mode" in
--export)
  venv_python="$root/.venv-deepspeed/bin/python"
  [[ -x $venv_python ]] || { echo "gpu_h200: no .venv-deepspeed (deno task setup-deepspeed)" >&2; exit 3; }
  wheels="$dir/.wheels"
  mkdir -p "$wheels"
  mkdir -p "$dir/extra"
  "$venv_python" -m pip download --quiet --no-deps --only-binary=:all: -d "$dir/extra" transformers==5.22.2
  # DeepSpeed and what the box lacks; pydantic-core and msgpack are binary, so for the box's
  # CPython 3.12, not this machine's 3.11.
  DS_BUILD_OPS=0 "$venv_python" -m pip wheel --no-deps --no-build-isolation --quiet -w "$wheels" \
    deepspeed==0.19.8 hjson==3.1.0 annotated-types==0.8.0 typing-inspection==0.4.5 pydantic==2.14.3
  "$venv_python" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$wheels" pydantic-core==2.50.4 msgpack==1.2.4
  wheel_args=()
  for w in "$wheels"/*.whl; do wheel_args+=(--wheel "$w"); done
  for m in "${members[@]}"; do
    mapfile -t sets < <(member_sets "$m")
    npx -y deno@2.9.6 run -A src/cli/main.ts plan "$experiment" --set "name=deepspeed-gpu-h200-$m" \
      "${sets[@]}" --bundle "$dir/$m" "${wheel_args[@]}" || exit $?
  done
  ;;
--offline)
  out="${OUT:?OUT: the folder to pack the results into}"
  python=$(command -v python3)
  # transformers at the CPU runs' pin (5.22.2, pure Python; it works with the box's hub, tokenizers
  # and safetensors), ahead of the box's own on every phase's PYTHONPATH, so that CUDA and torch are
  # the only differences from the CPU runs.
  if compgen -G "$dir/extra/*.whl" >/dev/null; then
    "$python" -m pip install --quiet --no-deps --no-index --no-compile --disable-pip-version-check \
      --target /tmp/parity-extra "$dir"/extra/*.whl && export PYTHONPATH=/tmp/parity-extra${PYTHONPATH:+:$PYTHONPATH}
  fi
  {
    date -u +%FT%TZ
    nvidia-smi -L
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    # The box's own preinstalled CUDA build of torch, reported as found: nothing here installs it.
    "$python" -c 'import sys, torch, transformers; print("python", sys.version.split()[0]); print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version()); print("transformers", transformers.__version__)'
    command -v nvcc >/dev/null && nvcc --version | tail -2
    nproc
  } >"$out/box.txt" 2>&1
  pids=()
  for m in "${members[@]}"; do
    (
      t0=$SECONDS
      PYTHONUNBUFFERED=1 timeout -k 10 "${PARITY_GPU_BUNDLE_TIMEOUT:-420}" \
        "$python" tools/offline_phases.py "$dir/$m" --python "$python" --copy-to "$dir/back/$m"
      echo "gpu_h200: $m exit $? in $((SECONDS - t0)) s"
    ) >"$out/$m.log" 2>&1 &
    pids+=($!)
  done
  wait "${pids[@]}"
  # At most 8 files come back from a lent box: the logs go into one.
  for m in "${members[@]}"; do echo "== $m"; cat "$out/$m.log"; done >"$out/phases.txt"
  for m in "${members[@]}"; do rm -f "$out/$m.log"; done
  for m in "${members[@]}"; do
    # --copy-to writes <copy>/<bundle>/; a bundle that timed out made no copy: pack the bundle
    # itself without what is large. Either way the archive's top folder is <member>/.
    src="$dir/back/$m/$m"
    [[ -d $src ]] || src="$dir/$m"
    tar -C "$(dirname "$src")" --exclude=site --exclude=wheels --exclude='checkpoints' \
      --exclude='global_step*' -czf "$out/$m.tar.gz" "$(basename "$src")"
  done
  ls -la "$out"
  ;;
--import)
  code=0
  for m in "${members[@]}"; do
    bundle="$dir/$m"
    if [[ -f $dir/$m.tar.gz ]]; then
      rm -rf "$dir/unpacked/$m" && mkdir -p "$dir/unpacked" && tar -C "$dir/unpacked" -xzf "$dir/$m.tar.gz"
      bundle="$dir/unpacked/$m"
    fi
    mapfile -t sets < <(member_sets "$m")
    npx -y deno@2.9.6 run -A src/cli/main.ts run "$experiment" --set "name=deepspeed-gpu-h200-$m" \
      "${sets[@]}" --import "$bundle" --keep-going
    rc=$?
    [[ $rc -gt $code ]] && code=$rc
  done
  exit $code
  ;;
*) echo "usage: tools/gpu_h200.sh --export|--offline|--import DIR" >&2; exit 2 ;;
esac
