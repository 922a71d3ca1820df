#!/usr/bin/env bash
# An op file whose reference lives in a helper module beside it (_ref.py, which imports a
# _helpers/ package when it runs), on the GPU: the run passes; after the helper is made
# wrong, the next run's checks fail, with the CPU-reference cache on, and again with a
# worker kept across the commands. Then `ab` on two copies of the folder, A's helper right
# and B's wrong, in one process: A's rows pass and B's fail (each side its own _ref.py).
# Last, a reference that runs its helper in a spawned pool passes, and one in a
# forkserver's pool on a kept worker, in two commands. Logs under OUT.
#   op-helpers.sh [OUT]
set -uo pipefail
out=${1:-${OUT:-/tmp/cudabench-op-helpers}}
STEP_PATTERN="expected|Error|error"
. "$(dirname "$0")/steps.sh"
export CUDABENCH_CACHE_DIR="$out/cache"
for placement in plain kept; do
    folder="$out/$placement/softmax"
    mkdir -p "$folder" && cp -r examples/softmax/. "$folder/"
    python3 - "$folder" <<'PY'
import pathlib, sys
folder = pathlib.Path(sys.argv[1])
op = folder / "softmax.py"
text = op.read_text().replace("import numpy as np\n", "import numpy as np\n\nimport _ref\n", 1)
start = text.index("        x = inputs[\"x\"].astype(np.float64)")
end = text.index("return e / e.sum(axis=1, keepdims=True)") + len("return e / e.sum(axis=1, keepdims=True)")
op.write_text(text[:start] + "        return _ref.reference(inputs[\"x\"])" + text[end:])
(folder / "_ref.py").write_text(
    "import numpy as np\n\n\ndef reference(x):\n    from _helpers.scale import SCALE\n"
    "    x = x.astype(np.float64)\n    e = np.exp(x - x.max(axis=1, keepdims=True))\n"
    "    return SCALE * e / e.sum(axis=1, keepdims=True)\n")
(folder / "_helpers").mkdir(exist_ok=True)
(folder / "_helpers" / "__init__.py").write_text("")
(folder / "_helpers" / "scale.py").write_text("SCALE = 1.0\n")
PY
    flags=(--size 8192x4096 --max-time 0.2)
    [ "$placement" = kept ] && flags+=(--keep-workers 60)
    check() {  # NAME PASSED: run softmax; every kernel row's check passed (or failed)?
        cudabench softmax --kernels-dir "$folder" "${flags[@]}" --json "$out/$1.json" \
            > "$out/$1.out" 2>&1
        local rc=$?
        python3 - "$out/$1.json" "$2" "$rc" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["benchmarks"]
passed = {r["variant"]: r["verification"]["passed"] for r in rows if r.get("verification")}
want = sys.argv[2] == "passed"
print(f"rc {sys.argv[3]}; checks passed: {passed}; expected {sys.argv[2]}")
sys.exit(0 if passed and all(v == want for v in passed.values()) else 1)
PY
    }
    export -f check; export folder out
    export FLAGS="${flags[*]}"
    step "$placement-first" 120 bash -c 'flags=($FLAGS); check '"$placement"'-first-run passed'
    echo "SCALE = 2.0" > "$folder/_helpers/scale.py"
    step "$placement-edited" 120 bash -c 'flags=($FLAGS); check '"$placement"'-edited-run failed'
done
cudabench workers --stop > "$out/workers-stop.log" 2>&1
for side in a b; do mkdir -p "$out/ab/$side" && cp -r "$out/plain/softmax/." "$out/ab/$side/"; done
echo "SCALE = 1.0" > "$out/ab/a/_helpers/scale.py"  # A right; B keeps the wrong 2.0
ab_check() {
    cudabench ab "$out/ab/a" "$out/ab/b" --size 4096x1024 --rounds 6 --samples 5 \
        --json "$out/ab.json" > "$out/ab.out" 2>&1
    local rc=$?
    python3 - "$out/ab.json" "$rc" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["benchmarks"]
passed = {r["variant"]: r["verification"]["passed"] for r in rows if r.get("verification")}
print(f"rc {sys.argv[2]}; checks passed: {passed}; expected @A passed, @B failed")
ok = passed and all(v == name.endswith("@A") for name, v in passed.items())
sys.exit(0 if ok and sys.argv[2] == "1" and len(passed) == 4 else 1)
PY
}
export -f ab_check
step ab-helpers 240 bash -c ab_check
# The reference hands its work to a spawned process (a multiprocessing pool): the helper's
# function is found there by its module's name, and the GPU worker may start the pool.
folder="$out/pool/softmax"
mkdir -p "$folder" && cp -r "$out/ab/a/." "$folder/"
python3 - "$folder/softmax.py" <<'PY'
import pathlib, sys
op = pathlib.Path(sys.argv[1])
op.write_text(op.read_text().replace(
    '        return _ref.reference(inputs["x"])',
    '        import multiprocessing\n'
    '        with multiprocessing.get_context("spawn").Pool(1) as pool:\n'
    '            return pool.apply_async(_ref.reference, (inputs["x"],)).get(120)'))
PY
export folder FLAGS="--size 4096x1024 --max-time 0.2"
step spawn-pool 240 bash -c 'flags=($FLAGS); check pool-run passed'
# The same from a forkserver (Python 3.14's default start method) in a kept worker: the
# server starts in the first command, and a second command's copy of the op, loaded after
# it, must be found in the server's processes too (ops/folder_imports.py's register).
for side in first second; do
    mkdir -p "$out/fork/$side/softmax" && cp -r "$out/pool/softmax/." "$out/fork/$side/softmax/"
    sed -i 's/get_context("spawn")/get_context("forkserver")/' "$out/fork/$side/softmax/softmax.py"
done
export FLAGS="--size 4096x1024 --max-time 0.2 --keep-workers 60"
for side in first second; do
    export folder="$out/fork/$side/softmax"
    step "forkserver-$side" 240 bash -c 'flags=($FLAGS); check fork-'"$side"' passed'
done
cudabench workers --stop >> "$out/workers-stop.log" 2>&1
exit $failed
