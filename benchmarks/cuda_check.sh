#!/usr/bin/env bash
# The GPU checks in one call, for a machine with a CUDA device and torch (never part of `make test`).
#
#   bash benchmarks/cuda_check.sh [STEPS...]
#   STEPS: cuda probe suite eager big profile compiled transformer transformer-jit (default: all)
#
# cuda:     tests/test_cuda.py (pinned non-blocking copies, host-sync count, CUDA graphs, bf16);
# probe:    the Python scripts in .gpu/ (ad-hoc diagnostics carried with the call), if any;
# suite:    every test whose id names torch, with torch's default device set to cuda
#           (EMBER_TEST_TORCH_DEVICE, tests/conftest.py); the compiled-step tests are left to "compiled";
#           packaging, lint, docs and multi-process tests need tools the GPU machine lacks;
# eager:    benchmarks/training.py on cuda, W1 and W3: raw loop, Ember fit, mixed bf16/f16, CUDA graphs;
# big:      the same for W1 and W3 at batch 1024 (batch 64 on a GPU measures kernel launches);
# profile:  benchmarks/step_profile.py: operators, kernels and Python time per step, Ember vs raw;
# compiled: W1 and W3 with jit_compile=True next to a torch.compile'd raw loop;
# transformer: W4 GPT-mini, W5 ResNet-18, W5V ViT-tiny (benchmarks/big_workloads.py): raw loop, Ember fit,
#           mixed bf16/f16, CUDA graphs, remat (W4), Keras 3 fit, and each variant's peak device memory;
# transformer-jit: W4 and W5 with jit_compile=True next to a torch.compile'd raw loop.
# Logs go to $OUT (default /tmp/cuda_check); each step has a time cap so the last ones still report.
# Packages the machine lacks can travel as wheels in .whl/ (installed into /tmp/site first).
set -u
OUT=${OUT:-/tmp/cuda_check}
mkdir -p "$OUT"
PY=${PY:-python3}
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
if ls .whl/*.whl >/dev/null 2>&1; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        && export PYTHONPATH=$PYTHONPATH:/tmp/site
fi
steps=${*:-cuda probe suite eager big profile compiled transformer transformer-jit}
# W4/W5 run 3 steps per epoch on a CPU; a GPU step takes milliseconds, so more steps and calls.
export EMBER_BENCH_BIG_STEPS=${EMBER_BENCH_BIG_STEPS:-15} EMBER_BENCH_BIG_REPEAT=${EMBER_BENCH_BIG_REPEAT:-5}
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv,noheader
$PY -c "import torch, numpy, ember; print('torch', torch.__version__, torch.cuda.get_device_name(), 'numpy', numpy.__version__)"

for step in $steps; do
    echo "=== $step $(date +%T)"
    case $step in
        cuda)
            timeout 60 $PY -m pytest -q -p no:cacheprovider -rA tests/test_cuda.py 2>&1 | tee "$OUT/cuda.log" \
                | grep -E "PASSED|FAILED|ERROR|passed|failed|Error" | tail -25 ;;
        probe)
            for script in .gpu/*.py; do
                [ -e "$script" ] || continue
                echo "--- $script"; timeout 60 $PY "$script" 2>&1 | tee -a "$OUT/probe.txt" | tail -40
            done ;;
        profile)
            timeout 60 $PY benchmarks/step_profile.py --device cuda --workload W1 --top 18 2>&1 | tee "$OUT/profile.txt" \
                | head -60 ;;
        suite)
            EMBER_TEST_TORCH_DEVICE=cuda timeout 130 $PY -m pytest -q -p no:cacheprovider -n 12 -k torch \
                --ignore=tests/packaging --ignore=tests/test_lint.py --ignore=tests/distribute --ignore=tests/test_docs.py \
                --ignore=tests/training/test_torch_compiled_step.py --junitxml="$OUT/suite.xml" tests \
                > "$OUT/suite.log" 2>&1
            grep -E "^(FAILED|ERROR)" "$OUT/suite.log" | cut -c1-160 | head -40; tail -1 "$OUT/suite.log" ;;
        eager)
            timeout 80 $PY benchmarks/training.py --backend torch --device cuda --workload W1 --workload W3 \
                --no-memory --no-compile 2>&1 | tee "$OUT/eager.txt" ;;
        big)
            timeout 120 $PY benchmarks/training.py --backend torch --device cuda --workload W1 --workload W3 --batch 1024 \
                --no-memory --no-compile 2>&1 | tee "$OUT/big.txt" ;;
        compiled)
            timeout 100 $PY benchmarks/training.py --backend torch --device cuda --workload W1 --workload W3 \
                --no-memory 2>&1 | tee "$OUT/compiled.txt" ;;
        transformer)
            timeout 240 $PY benchmarks/training.py --backend torch --device cuda --workload W4 --workload W5 \
                --workload W5V --no-compile 2>&1 | tee "$OUT/transformer.txt" ;;
        transformer-jit)
            timeout 150 $PY benchmarks/training.py --backend torch --device cuda --workload W4 --workload W5 \
                --variants jit,rawc --no-memory 2>&1 | tee "$OUT/transformer_jit.txt" ;;
        *) echo "unknown step $step" ;;
    esac
done
echo "=== done $(date +%T)"
