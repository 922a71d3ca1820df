#!/usr/bin/env python3
"""Compile the CUDA-core ladder's variants to sm_90 cubins and count what their SASS holds.

    python3 scripts/ladder/sass.py [--kernels-dir DRAFTS] [--all-params]
                                   [--dtype float32 ...] [--arch sm_90] [--out DIR]

The variants are the ladder's rungs in kernels/ (rungs.py), and every variant of a
--kernels-dir folder (drafts of further rungs) if one is given.

Each variant is built as the engine builds it: the source cudabench compiles (type headers,
a #line directive), -I the kernel's folder and the same -D defines (params, DTYPE, ACC_TYPE,
OUT_TYPE, ELEM_SIZE...), here with `nvcc -cubin -arch=sm_90 -Xptxas -v`. Then `cuobjdump
-sass` of the cubin gives, per kernel: 128-bit global loads (LDG.E.128, also .CONSTANT),
128-bit global stores (STG.E.128), 128-bit shared loads and stores (LDS.128, STS.128),
asynchronous copies (LDGSTS, the cp.async of sm_80+), bulk copies (UBLKCP, sm_90's
cp.async.bulk), and ptxas's registers and spills.
--all-params builds every combination of allowed values (the variants claim all are
valid); the default builds each variant's defaults. Exit 1 if any build fails.
Needs nvcc, cuobjdump and nvdisasm (cuobjdump -sass runs it), no GPU: each is looked for on
PATH, in $CUDA_ROOT/bin, /usr/local/cuda*/bin and pip's nvidia wheels (`pip install
nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm` where the toolkit has neither, as nvcc 13.0's
here). A build whose cuobjdump shows no instructions fails: no silent zero counts.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from cudabench.catalog import KernelVariant, builtin_kernels_dir, discover
from cudabench.planning.plan import compile_defines
from cudabench.ops import get_op

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rungs import LADDER  # noqa: E402  (beside this script)

COUNTS = {
    # With a cache hint in between: STG.E.EF.128 is st.global.cs (evict first), .LU, .NA...
    "LDG.128": re.compile(r"\bLDG\.E(?:\.[A-Z]+)*\.128\b"),
    "STG.128": re.compile(r"\bSTG\.E(?:\.[A-Z]+)*\.128\b"),
    "LDS.128": re.compile(r"\bLDS\.128\b"),
    "STS.128": re.compile(r"\bSTS\.128\b"),
    "LDGSTS": re.compile(r"\bLDGSTS\b"),
    "LDGSTS.128": re.compile(r"\bLDGSTS\.E\.BYPASS\.128\b|\bLDGSTS\.E\.128\b"),
    "UBLKCP": re.compile(r"\bUBLKCP\b"),  # cp.async.bulk: the TMA unit's 1-D copies (sm_90)
}


def find_tool(name: str) -> str | None:
    """A CUDA tool on PATH, in $CUDA_ROOT/bin, /usr/local/cuda/bin, or a pip nvidia wheel."""
    found = shutil.which(name)
    if found:
        return found
    roots = [os.environ.get("CUDA_ROOT", ""), "/usr/local/cuda",
             *sorted(map(str, Path("/usr/local").glob("cuda-*")), reverse=True)]
    for root in roots:
        if root and os.access(Path(root) / "bin" / name, os.X_OK):
            return str(Path(root) / "bin" / name)
    for entry in sys.path:  # nvidia-cuda-cuobjdump and friends install under nvidia/*/bin
        for candidate in Path(entry).glob(f"nvidia/*/bin/{name}"):
            if os.access(candidate, os.X_OK):
                return str(candidate)
    return None


def build(variant: KernelVariant, params: dict[str, int], dtype: str, arch: str, nvcc: str,
          cuobjdump: str) -> tuple[dict[str, int] | None, str]:
    op = get_op(variant.op)
    types = op.type_set(dtype)
    defines = compile_defines(params, types)
    with tempfile.TemporaryDirectory() as work:
        source = Path(work) / f"{variant.name}.cu"
        source.write_text(variant.compile_source(types.headers), encoding="utf-8")
        cubin = Path(work) / f"{variant.name}.cubin"
        command = [nvcc, "-cubin", f"-arch={arch}", "-lineinfo", "-Xptxas", "-v",
                   f"-I{variant.path.parent}",
                   *(f"-D{k}={v}" for k, v in sorted(defines.items())), str(source), "-o",
                   str(cubin)]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            errors = [line for line in (done.stderr + done.stdout).splitlines()
                      if "error" in line]
            return None, (errors or [done.stderr.strip()[:300]])[0]
        log = done.stdout + done.stderr
        dumped = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True,
                                text=True)
        sass = dumped.stdout
        if dumped.returncode != 0 or not re.search(r"^\s*/\*[0-9a-f]{4}\*/", sass, re.M):
            # cuobjdump prints only a heading when it fails (without nvdisasm, say): counts
            # of 0 would read as "no 128-bit loads", so it is a failed build instead.
            return None, (f"cuobjdump -sass gave no instructions (exit {dumped.returncode}): "
                          f"{dumped.stderr.strip()[:300]}")
    counts = {name: len(pattern.findall(sass)) for name, pattern in COUNTS.items()}
    regs = [int(r) for r in re.findall(r"Used (\d+) registers", log)]
    spills = [int(a) + int(b) for a, b in
              re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)]
    counts["regs"] = max(regs, default=0)
    counts["spill_bytes"] = max(spills, default=0)
    return counts, sass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernels-dir", type=Path,
                        help="also build every variant of this folder (drafts)")
    parser.add_argument("--dtype", action="append",
                        help="float32, int32, float16, float64 (default: all four)")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--all-params", action="store_true")
    parser.add_argument("--out", type=Path, help="write each default build's SASS here")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    args = parser.parse_args()
    nvcc, cuobjdump = find_tool("nvcc"), find_tool("cuobjdump")
    if nvcc is None or cuobjdump is None:
        print(f"need nvcc ({nvcc}) and cuobjdump ({cuobjdump}); without a toolkit's: pip "
              "install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm", file=sys.stderr)
        return 2
    # cuobjdump -sass runs nvdisasm: from PATH, else NVDISASM_PATH (the folder holding it).
    nvdisasm = find_tool("nvdisasm")
    if nvdisasm is not None and shutil.which("nvdisasm") is None:
        os.environ.setdefault("NVDISASM_PATH", str(Path(nvdisasm).parent))
    dtypes = args.dtype or ["float32", "int32", "float16", "float64"]
    extra = () if args.kernels_dir is None else (args.kernels_dir,)
    catalog = discover(extra)
    builtin = builtin_kernels_dir().resolve()
    jobs: list[tuple[KernelVariant, dict[str, int], str]] = []
    for op_name, variants in catalog.items():
        for variant in variants.values():
            if builtin in variant.path.resolve().parents and \
                    variant.name not in LADDER.get(op_name, ()):
                continue  # a built-in kernel that is not a rung of the ladder
            if args.all_params:
                grids = [p.allowed or tuple(range(p.low or 0, (p.high or 0) + 1))
                         for p in variant.params]
                combos = [dict(zip([p.name for p in variant.params], values))
                          for values in itertools.product(*grids)]
                if len(combos) > 400:  # a LOW..HIGH range: its ends and the default
                    combos = [dict({q.name: q.default for q in variant.params}, **{p.name: v})
                              for p in variant.params
                              for v in sorted({p.default, *(p.allowed or (p.low, p.high))})]
            else:
                combos = [{p.name: p.default for p in variant.params}]
            for dtype in dtypes:
                if dtype in variant.dtypes:
                    jobs.extend((variant, combo, dtype) for combo in combos)
    failures = 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(build, v, p, d, args.arch, nvcc, cuobjdump) for v, p, d in jobs]
        for (variant, params, dtype), future in zip(jobs, futures):
            counts, detail = future.result()
            name = f"{variant.op}/{variant.name} {dtype} " + " ".join(
                f"{k}={v}" for k, v in params.items())
            if counts is None:
                failures += 1
                print(f"FAIL {name}: {detail}")
                continue
            print(f"ok   {name}: " + " ".join(f"{k} {v}" for k, v in counts.items()))
            if args.out is not None and not args.all_params:
                args.out.mkdir(parents=True, exist_ok=True)
                (args.out / f"{variant.op}.{variant.name}.{dtype}.sass").write_text(detail)
    print(f"{len(jobs) - failures} of {len(jobs)} builds ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
