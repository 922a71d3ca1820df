#!/usr/bin/env python3
"""Build the tensor-core rungs for their targets and count what their SASS holds.

    python3 scripts/tensorcore/sass.py [--out DIR] [--param RUNG:NAME=VALUE ...]

Each rung (kernels/matmul/mma_sync, mma_async, wgmma_async, wgmma_tma, wgmma_ws) is built
as the engine builds it: the source cudabench compiles (type headers, a #line directive), -I the kernel's
folder, the -D defines of its default params in float16, for exactly one target
(-gencode=arch=compute_XX,code=sm_XX: sm_80 and sm_90 for the mma rungs, sm_90a for the
wgmma rungs), with `-Xptxas=-v`. Per build: registers, stack and spill bytes from ptxas,
then from `cuobjdump -sass` the count of each instruction that says which path the kernel
is on: HMMA (mma.sync), HGMMA (wgmma), LDSM (ldmatrix), LDGSTS (cp.async), UTMALDG (TMA
loads), SYNCS (mbarrier), USETMAXREG (setmaxnreg), LDL/STL (local memory: spills or a
register array indexed at run time), BAR (barriers). A rung missing an instruction it
claims, or using local memory, is a failure: exit 1. Without cuobjdump only ptxas's report
is checked. Writes each SASS listing and ptxas report under --out. No GPU needed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

from cudabench.catalog import parse_header
from cudabench.catalog.variants import parse_arch
from cudabench.ops import OPS
from cudabench.planning.plan import compile_defines

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "kernels" / "matmul"
# rung -> (targets, instructions it must hold)
RUNGS = {
    "mma_sync": (("sm_80", "sm_90"), ("HMMA", "LDSM")),
    "mma_async": (("sm_80", "sm_90"), ("HMMA", "LDSM", "LDGSTS")),
    "wgmma_async": (("sm_90a",), ("HGMMA", "LDGSTS")),
    "wgmma_tma": (("sm_90a",), ("HGMMA", "UTMALDG", "SYNCS")),
    "wgmma_ws": (("sm_90a",), ("HGMMA", "UTMALDG", "SYNCS", "USETMAXREG")),
}
SHOWN = ("HMMA", "HGMMA", "LDSM", "LDGSTS", "UTMALDG", "SYNCS", "USETMAXREG", "BAR", "LDG",
         "STG", "LDS", "STS", "LDL", "STL")
OPCODE = re.compile(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)")


def find_tool(name: str) -> str | None:
    """A CUDA tool on PATH, in $CUDA_ROOT/bin, /usr/local/cuda/bin or a pip nvidia wheel."""
    found = shutil.which(name)
    if found:
        return found
    for root in (os.environ.get("CUDA_ROOT", ""), "/usr/local/cuda"):
        if root and os.access(Path(root) / "bin" / name, os.X_OK):
            return str(Path(root) / "bin" / name)
    for entry in sys.path:
        for candidate in Path(entry).glob(f"nvidia/*/bin/{name}"):
            if os.access(candidate, os.X_OK):
                return str(candidate)
    return None


def build(nvcc: str, rung: str, arch: str, params: dict[str, int], out: Path
          ) -> tuple[int, str, Path]:
    """Build one rung for arch; return nvcc's exit code, its output and the cubin's path."""
    variant = parse_header(KERNELS / f"{rung}.cu")
    types = OPS["matmul"].type_set("float16")
    values = {spec.name: spec.default for spec in variant.params} | params
    target = parse_arch(arch)
    assert target is not None, arch
    label = "_".join([rung, arch, *(f"{k}{v}" for k, v in params.items())])
    source = out / f"{label}.cu"
    source.write_text(variant.compile_source(types.headers), encoding="utf-8")
    cubin = out / f"{label}.cubin"
    command = [nvcc, "-cubin", target.gencode, "-lineinfo", "-Xptxas=-v", f"-I{KERNELS}",
               *(f"-D{k}={v}" for k, v in sorted(compile_defines(values, types).items())),
               str(source), "-o", str(cubin)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    report = " ".join(command) + "\n" + done.stdout + done.stderr
    (out / f"{label}.ptxas.txt").write_text(report, encoding="utf-8")
    return done.returncode, report, cubin


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/tensorcore-sass"))
    parser.add_argument("--param", action="append", default=[],
                        help="RUNG:NAME=VALUE, a non-default parameter of one rung")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    nvcc, cuobjdump = find_tool("nvcc"), find_tool("cuobjdump")
    if nvcc is None:
        print("nvcc not found: install the CUDA toolkit")
        return 1
    if cuobjdump is None:
        print("cuobjdump not found: only ptxas's report is checked")
    overrides: dict[str, dict[str, int]] = {}
    for item in args.param:
        rung, _, assignment = item.partition(":")
        name, _, value = assignment.partition("=")
        overrides.setdefault(rung, {})[name] = int(value)

    failed = 0
    print(f"{'build':<34} {'regs':>4} {'stack':>5} {'spill':>5}  "
          + " ".join(f"{name:>7}" for name in SHOWN))
    for rung, (archs, claims) in RUNGS.items():
        for arch in archs:
            params = overrides.get(rung, {})
            code, report, cubin = build(nvcc, rung, arch, params, args.out)
            label = f"{rung} {arch} " + " ".join(f"{k}={v}" for k, v in params.items())
            if code != 0:
                print(f"{label:<34} BUILD FAILED\n{report[-2000:]}")
                failed += 1
                continue
            regs = re.search(r"Used (\d+) registers", report)
            stack = re.search(r"(\d+) bytes stack frame", report)
            spill = re.search(r"(\d+) bytes spill stores", report)
            problems = []
            if spill is None or int(spill[1]) or "Performance Loss" in report \
                    or "C7508" in report:
                problems.append("spills or serialised wgmma or setmaxnreg ignored (see report)")
            counts: Counter[str] = Counter()
            if cuobjdump is not None:
                listing = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True,
                                         text=True, timeout=600).stdout
                cubin.with_suffix(".sass").write_text(listing, encoding="utf-8")
                counts = Counter(OPCODE.findall(listing))
                problems += [f"no {name}" for name in claims if not counts[name]]
                problems += [f"{counts[name]} {name}" for name in ("LDL", "STL") if counts[name]]
            print(f"{label:<34} {regs[1] if regs else '?':>4} {stack[1] if stack else '?':>5} "
                  f"{spill[1] if spill else '?':>5}  "
                  + " ".join(f"{counts[name]:>7}" for name in SHOWN)
                  + (f"  FAIL: {'; '.join(problems)}" if problems else ""))
            failed += bool(problems)
    print(f"{failed} build(s) failed their checks; listings and ptxas reports in {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
