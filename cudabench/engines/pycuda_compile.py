"""The PyCUDA engine's compile path: cubins from nvcc (built ahead, kept on disk), loaded
into the engine's context, each launch's function prepared for its arguments.

The engine's run path (pycuda_engine.py) hands this its PyCUDA driver module, so this
module imports no PyCUDA itself. A variant is built for its `arch` when its header names
one (exactly that target), else for this GPU (sm_90 on compute capability 9.0), by the
same request `--dry-run --arch sm_90` builds (compiler.py): a dry run warms the cache.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

from cudabench.catalog import KernelVariant
from cudabench.engines.compile_pool import CompilePool
from cudabench.engines.compiler import CubinRequest, request_for, source_request
from cudabench.engines.cuda_driver import CudaDriver
from cudabench.engines.protocol import Compiled, CompileRequest
from cudabench.engines.tensormaps import param_format
from cudabench.errors import CompileError


def gpu_arch(compute_capability: str) -> str:
    """Return the real architecture of a GPU of compute_capability ("9.0": sm_90)."""
    return "sm_" + compute_capability.replace(".", "")


class PycudaCompiler:
    """Compile variants for one GPU's context, ahead when asked, each once per process."""

    def __init__(self, cuda: ModuleType, compute_capability: str,
                 driver: Callable[[], CudaDriver]) -> None:
        self.cuda = cuda
        self.arch = gpu_arch(compute_capability)
        self.pool = CompilePool()
        self._driver = driver  # CUDA Python's bindings: parameter layouts for tensor maps
        self._modules: dict[tuple[Any, ...], Compiled] = {}

    def request(self, variant: KernelVariant, defines: Mapping[str, object],
                headers: Sequence[str] = ()) -> CubinRequest:
        """Return what nvcc is given for variant: its `arch`, else this GPU's."""
        return request_for(variant, defines, headers, variant.arch or self.arch)

    def ahead(self, requests: Sequence[CompileRequest]) -> None:
        """Start building requests in the background (compile() waits for its own)."""
        self.pool.ahead(self.request(r.variant, r.defines, r.headers) for r in requests)

    def ahead_source(self, source: str, name: str) -> None:
        """Start building a source of the engine's own (see load_source)."""
        self.pool.ahead([source_request(source, self.arch, name)])

    def load_source(self, source: str, name: str) -> Any:
        """Return a source of the engine's own (no defines) built for this GPU, loaded."""
        build = self.pool.result(source_request(source, self.arch, name))
        if build.returncode != 0:
            raise CompileError(f"cudabench's own {name} kernels: nvcc failed:\n"
                               f"{build.output.strip()}")
        return self.cuda.module_from_buffer(build.cubin)

    def compile(self, variant: KernelVariant, defines: Mapping[str, object],
                signature: str, headers: Sequence[str] = ()) -> Compiled:
        """Compile a variant with -D defines (see the Engine protocol). signature is
        PyCUDA's prepare() string, a T per tensor map after the op's arguments: those
        kernels are prepared with the parameter layout the driver reports."""
        key = (str(variant.path), variant.source, tuple(sorted(defines.items())), signature,
               tuple(headers))
        if key in self._modules:
            return self._modules[key]
        build = self.pool.result(self.request(variant, defines, headers))
        if build.returncode != 0:
            # the flags as the row has always named them: -lineinfo, the defines, a target
            options = ["-lineinfo", *(f"-D{name}={value}"
                                      for name, value in sorted(defines.items()))]
            target = variant.arch
            flags = " ".join([*options, *([target.gencode] if target else [])])
            raise CompileError(f"{variant.path}: nvcc failed with {flags}:\n"
                               f"{build.output.strip()}")
        try:
            module = self.cuda.module_from_buffer(build.cubin)
        except self.cuda.Error as exc:
            raise CompileError(f"{variant.path}: the driver cannot load the compiled kernel on "
                               f"this GPU ({exc})") from None
        compiled = Compiled(functions=[])
        for launch in variant.launches:
            try:
                function = module.get_function(launch.entry)
            except self.cuda.LogicError:
                raise CompileError(
                    f"{variant.path}:{launch.line}: no kernel named {launch.entry!r} in the "
                    f'compiled file; declare it `extern "C" __global__ void {launch.entry}(...)`'
                ) from None
            if "T" in signature:  # by value at the offsets the kernel reads them
                layout = self._driver().param_layout(build.cubin, launch.entry)
                function.prepare(param_format(signature, layout,
                                              f"{variant.path}:{launch.line}: {launch.entry}"))
            else:
                function.prepare(signature)
            compiled.functions.append(function)
            compiled.attributes.append({
                "registers": function.num_regs,
                "shared_bytes": function.shared_size_bytes,
                "local_bytes": function.local_size_bytes,
                "max_threads_per_block": function.max_threads_per_block,
            })
        self._modules[key] = compiled
        return compiled

    def forget(self) -> None:
        """Forget every variant loaded and built (see Engine.forget_compiled)."""
        self._modules.clear()
        self.pool.forget()

    def close(self) -> None:
        """Stop the compiles still running (a worker that ends early)."""
        self.pool.close()
