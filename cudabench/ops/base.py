"""What every op is: the Op base class, launch shapes, and a helper for the fake engine."""

from __future__ import annotations

import contextlib
import math
import numbers
import pickle
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use: see cudabench/common/lazy.py
    from cudabench.common.lazy import numpy as np

from cudabench.errors import CudabenchError, OpFileError, UsageError, WorkerStopped
from cudabench.ops.sizes import parse_dims
from cudabench.ops.types import INT32_MAX, DType, TypeSet
from cudabench.ops.vendor import VendorCall
from cudabench.results.model import Verification

Shape = tuple[int, ...]
INT32_MIN = -INT32_MAX - 1
CHECK_STREAM = 0xC4EC  # keeps a check's random draws apart from the inputs' of the same seed


@contextlib.contextmanager
def user_code(op: Op, what: str) -> Iterator[None]:
    """Turn an exception raised by an op's own code into an error naming its file (and
    give the code of op folders Python's builtins as they are now: folder_imports)."""
    from cudabench.ops.folder_imports import refresh_builtins

    refresh_builtins()
    try:
        yield
    except (CudabenchError, WorkerStopped):  # a signal ending the worker: not the op's
        raise
    except SystemExit as exc:  # not the user's Ctrl-C, but an op's exit: not a quiet rc 0
        origin = op.origin or type(op).__module__
        raise OpFileError(f"{origin}: {op.name}.{what} calls sys.exit({exc.code!r}); an op "
                          "reports a problem by raising an exception (a size check_shape "
                          "refuses: cudabench.errors.UsageError)") from None
    except Exception as exc:
        from cudabench.ops.folder_imports import error_text

        origin = op.origin or type(op).__module__
        raise OpFileError(f"{origin}: {op.name}.{what} raised {error_text(exc, origin)}"
                          ) from None


def int32_value(op: Op, value: object) -> int:
    """Return an op's scalar argument as a whole number within int32; OpFileError naming
    the op file for anything else (a float was truncated, 2**32 + 64 failed in the
    worker). NumPy's numbers are numbers.Real too: no NumPy import (planning needs none)."""
    where = f"{op.origin or type(op).__module__}: {op.name}.args gives {value!r}"
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):
        raise OpFileError(f"{where}: a scalar argument must be an int, not a "  # 300.0
                          f"{type(value).__name__} (the kernels take int32): int(...) it, "
                          "or use // rather than /")
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) \
            or not INT32_MIN <= int(value) <= INT32_MAX:  # numpy.bool_ is no Integral
        raise OpFileError(f"{where}: a scalar argument must be a whole number within int32 "
                          f"({INT32_MIN} to {INT32_MAX})")
    return int(value)


def int32_argument(op: Op, value: object) -> np.int32:
    """Return an op's scalar argument as the int32 kernels take (int32_value's checks)."""
    whole: np.int32 = np.int32(int32_value(op, value))
    return whole


def typed(buffer: np.ndarray, dtype: DType, shape: Shape) -> np.ndarray:
    """View the start of a byte buffer as an array of dtype and shape (fake engine helper)."""
    count = math.prod(shape)
    return buffer[: count * dtype.itemsize].view(dtype.numpy).reshape(shape)


def check_rng(seed: int) -> np.random.Generator:
    """Return the generator of a check's random draws for the inputs made from seed: a
    stream of its own, independent of the inputs' draws (and reproducible with them)."""
    return np.random.default_rng([CHECK_STREAM, seed])


@dataclass(frozen=True)
class LaunchShape:
    """The grid and block of one launch, for checks that depend on how a kernel splits work."""

    grid: tuple[int, ...]
    block: tuple[int, ...]

    @property
    def blocks(self) -> int:
        """Return the number of blocks."""
        return math.prod(self.grid)

    @property
    def threads_per_block(self) -> int:
        """Return the number of threads in a block."""
        return math.prod(self.block)


# The registry's find_op, set when the registry is imported: every op that is pickled came
# from it, and this module stays below the registry that imports it.
_FINDERS: list[Callable[[str, str], Op]] = []


def register_finder(finder: Callable[[str, str], Op]) -> None:
    """Set the function that finds an op again from its origin and name (the registry's)."""
    _FINDERS[:] = [finder]


# The names every kernel's header arithmetic has (catalog/headers.py) and the type macros
# it is compiled with: a dim or a parameter so named would be hidden by them.
BUILTIN_NAMES = ("ELEM_SIZE", "ACC_SIZE", "OUT_SIZE", "SM_COUNT")
TYPE_MACROS = ("DTYPE", "ACC_TYPE", "OUT_TYPE")

# The reference rows an op may ask for (measure/references.py runs each; a test holds the
# two lists equal): a device-to-device copy of half the op's bytes.
REFERENCE_NAMES = ("memcpy_dtod",)


class Op:
    """A kernel family: its shape, types, inputs, kernel arguments, reference and accounting.

    Every kernel of an op takes the arguments listed by `args`, in that order; buffers
    are named, scalars are passed as int32. Input buffers hold the TypeSet's input type,
    output and scratch buffers its output type.
    """

    name: str = ""
    summary: str = ""
    dims: tuple[str, ...] = ()  # names of the shape's extents, usable in header arithmetic
    size_forms: Mapping[int, str] = {}  # accepted --size forms: number of extents -> example
    default_size: str = ""
    # Input type -> (input, accumulator, output) type names: the op's type matrix.
    types: Mapping[str, tuple[str, str, str]] = {
        "float32": ("float32", "float32", "float32"),
        "int32": ("int32", "int32", "int32"),
    }
    signature: str = ""  # the C signature every kernel of the op has
    result_buffer: str = ""  # the buffer downloaded and verified after the checked launch
    # True when verify is checks.same_bits_check(result, expected) with expected an array
    # of the result's type and shape: a passing result may then be told on the GPU, against
    # a device copy of expected, without downloading it (measure/device_checks.py).
    exact_result: bool = False
    # Reference rows measured beside the variants (REFERENCE_NAMES; measure/references.py).
    references: tuple[str, ...] = ()
    # The command line: the command that runs the op (default: its name), and, for an op
    # that shares another's command, the flag that selects it (transpose --inplace).
    command: str = ""
    command_flag: str = ""
    shortcuts: Mapping[str, str] = {}  # option name -> parameter: {"tile": "TILE"}
    origin: str = ""  # where the registry found the op: a module name or a file path
    # The library whose routine does the op's work (a "vs cuBLAS" column), if any.
    vendor_library: str = ""

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as where to find the op again, not as its class: the registry's finder
        (ops/registry.py registers it; pickle stores it by name, so the process that
        unpickles imports the registry)."""
        if _FINDERS:
            return _FINDERS[0], (self.origin, self.name)
        raise pickle.PicklingError(f"op {self.name!r}: only ops the registry loaded pickle "
                                   "(cudabench.ops.load_ops)")

    @property
    def dtypes(self) -> tuple[str, ...]:
        """Return the input types the op accepts (its --dtype values)."""
        return tuple(self.types)

    @property
    def default_dtype(self) -> str:
        """Return the type a run measures where none is named (--dtype's default, a suite
        entry's, the API's): default_dtype of its types."""
        return default_dtype(self.dtypes)

    def type_set(self, dtype: str) -> TypeSet:
        """Return the input, accumulator and output types for an input type."""
        if dtype not in self.types:
            raise UsageError(f"--dtype {dtype}: {self.name} supports {', '.join(self.dtypes)}")
        return TypeSet.of(*self.types[dtype])

    def parse_size(self, text: str) -> tuple[int, ...]:
        """Return the shape for a --size value (one extent means a square/cube)."""
        dims = parse_dims(text, self.size_forms)
        return dims * len(self.dims) if len(dims) == 1 else dims

    def check_shape(self, shape: Shape, types: TypeSet) -> None:
        """Raise UsageError if the shape cannot be run exactly (int32 or float16 overflow)."""

    def variables(self, shape: Shape) -> dict[str, int]:
        """Return the shape as header-arithmetic variables."""
        return dict(zip(self.dims, shape))

    def inputs(self, shape: Shape, types: TypeSet, rng: np.random.Generator
               ) -> dict[str, np.ndarray]:
        """Return random host inputs by buffer name (never zeros or ones)."""
        raise NotImplementedError

    def outputs(self, shape: Shape, types: TypeSet, blocks: int) -> dict[str, tuple[int, ...]]:
        """Return output and scratch buffers (poisoned before the checked launch) by name."""
        raise NotImplementedError

    def args(self, shape: Shape, blocks: int) -> list[str | int]:
        """Return kernel arguments: buffer names and int32 scalars, in signature order."""
        raise NotImplementedError

    def reference(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Return the expected result, computed on the CPU in float64 (int64 for ints)."""
        raise NotImplementedError

    def expected(self, inputs: dict[str, np.ndarray], types: TypeSet,
                 rng: np.random.Generator, full: bool = False) -> Any:
        """Return what verify compares a result with: by default the reference.

        An op whose reference is costly may return a smaller witness of it that its verify
        knows (matmul's randomized check), unless full asks for the whole reference
        (--full-check). rng (check_rng) is for such a witness's random draws.
        """
        return self.reference(inputs)

    def verify(
        self, inputs: dict[str, np.ndarray], expected: Any, result: np.ndarray,
        launches: Sequence[LaunchShape], types: TypeSet,
    ) -> Verification:
        """Compare a kernel's result with what `expected` returned (the reference, unless
        the op returns a witness of its own); launches: the kernel's geometry."""
        raise NotImplementedError

    def flops(self, shape: Shape) -> int:
        """Return the arithmetic operations of one run (0 for data movement)."""
        return 0

    def bytes_moved(self, shape: Shape, types: TypeSet) -> int:
        """Return the fewest bytes one run must move: inputs read once, outputs written once."""
        raise NotImplementedError

    def emulate(self, args: Sequence[Any], types: TypeSet) -> np.ndarray:
        """Do on the host what a correct kernel does to its arguments (for the fake engine).

        args are the kernel's arguments in `args` order, buffers as 1-D byte arrays; return
        a view of the result buffer as written, so that a fake can spoil one element.
        """
        # an empty NotImplementedError read "its worker process failed: NotImplementedError: "
        raise OpFileError(f"{self.origin or type(self).__module__}: {self.name} defines no "
                          "emulate(args, types): the fake engine runs it in place of the "
                          "kernel (docs/writing-an-op.md)")

    def vendor(self, types: TypeSet) -> VendorCall | str:
        """Return the vendor library's routine for these types, or why there is none."""
        return f"no vendor routine for {self.name}"

    def edge_shapes(self) -> tuple[Shape, ...]:
        """Return shapes that catch edge bugs: all ones, odd primes, a tile plus one."""
        count = len(self.dims)
        primes = (17, 33, 5)
        return ((1,) * count, tuple(primes[i % 3] for i in range(count)), (33,) * count)

    def large_shapes(self) -> tuple[Shape, ...]:
        """Return shapes that fill a GPU with blocks, for tests on one (not on a CPU)."""
        return ((1024,) * len(self.dims), (1000,) * len(self.dims))


def default_dtype(types: Sequence[str]) -> str:
    """Return the type measured of types where none is named: float32, else the first (an
    op of float16 alone)."""
    return "float32" if "float32" in types else types[0]

