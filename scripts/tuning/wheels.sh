#!/usr/bin/env bash
# Download, here (with network), the wheels benchmarks/tuning.py needs on the GPU machine
# (no network there): Optuna for --strategy bayes and Kernel Tuner for the comparison, with
# the dependencies the device image lacks (it has numpy, scipy, pandas, scikit-learn,
# PyYAML, tqdm, matplotlib, wrapt, typing-extensions; Mako and platformdirs travel in
# .device-kit). Then carry .whl and install there with
#   python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .whl
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo /.whl/ >>.git/info/exclude
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
           --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64
           --platform manylinux2014_x86_64)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp "${platforms[@]}" -d .whl \
    optuna==5.0.0 alembic==1.20.1 sqlalchemy==2.1.9 colorlog==6.12.0 greenlet==3.5.6 \
    kernel_tuner==1.5.0 jsonschema==4.26.0 jsonschema-specifications==2025.9.1 \
    referencing==0.37.0 rpds-py==2026.9.1 pymoo==0.6.2 python-constraint2==2.9.0 \
    xmltodict==1.0.4 moocore==0.3.2 autograd==1.9.1 cma==4.5.0 alive_progress==3.3.0 \
    about-time==4.2.1 graphemeu==0.7.2 deprecated==3.0.1 cffi==2.1.1 pycparser==3.12
ls .whl
