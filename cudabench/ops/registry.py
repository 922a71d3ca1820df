"""The op registry: built-in ops, ops from installed packages, ops from the user's files.

Every op is declared the same way: a Python module that defines `OPS = [SomeOp(), ...]` (or
`OP = SomeOp()`) with subclasses of cudabench.ops.Op. The built-in ones are the modules of
this package; an installed package names its module in the entry-point group
`cudabench.ops`; a user drops a `.py` file into a folder given with `--kernels-dir` (beside
or above the op's `.cu` files). Each op remembers where it came from (`origin`: a module
name or a file path), and is found again from there in any process (a worker, a Ray task):
it pickles as (origin, name), never as a class that only the parent imported.
"""

from __future__ import annotations

import ast
import contextlib
import contextvars
import functools
import importlib
import importlib.util
import re
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import ModuleType

from cudabench.common.infiles import refuse_found_unreadable, refuse_unreachable
from cudabench.errors import OpFileError
from cudabench.ops.base import (
    BUILTIN_NAMES,
    REFERENCE_NAMES,
    TYPE_MACROS,
    Op,
    register_finder,
)
from cudabench.ops.folder_imports import (
    USER_OPS_PACKAGE,
    error_text,
    folder_builtins,
    forget_folders,
    loaded_op_file,
    plain_names,
)
from cudabench.ops.types import DTYPES
from cudabench.common.relocation import local_path

BUILTIN_MODULES = ("cudabench.ops.matmul", "cudabench.ops.transpose", "cudabench.ops.dot")
ENTRY_POINT_GROUP = "cudabench.ops"
# The methods an op must define: everything else has a default.
REQUIRED_METHODS = ("inputs", "outputs", "args", "reference", "verify", "bytes_moved")


def find_op(origin: str, name: str) -> Op:
    """Return the op called name declared at origin (a module name or a .py file path)."""
    for op in _ops_at(origin):
        if op.name == name:
            return op
    raise OpFileError(f"{origin}: declares no op {name!r} any more")


register_finder(find_op)


def builtin_ops() -> dict[str, Op]:
    """Return the built-in ops and those of installed packages, by name."""
    ops: dict[str, Op] = {}
    for origin in (*BUILTIN_MODULES, *_entry_point_modules()):
        _add(ops, _ops_at(origin))
    return ops


# Within loaded_once(): each set of folders' ops, loaded once (None: outside it). A context
# variable, not a global: two threads planning at once (the API) each keep their own, and
# one ending never leaves the other's cache on for the rest of the process.
_HELD: contextvars.ContextVar[dict[tuple[Path, ...], dict[str, Op]] | None] = (
    contextvars.ContextVar("cudabench_ops_held", default=None))


@contextlib.contextmanager
def loaded_once() -> Iterator[None]:
    """Within the block, load each set of folders' ops once. A search plans every
    configuration before it runs, each asking for its op: globbing and resolving the
    folders' files again took 1.5 ms a configuration, minutes for a large search."""
    token = _HELD.set(_HELD.get() if _HELD.get() is not None else {})
    try:
        yield
    finally:
        _HELD.reset(token)


def load_ops(kernels_dirs: Iterable[Path] = ()) -> dict[str, Op]:
    """Return every op: built-in, installed, then those in the folders' .py files (less
    an installed op's own module, reached as a file by `--kernels-dir` its package)."""
    folders = tuple(Path(folder) for folder in kernels_dirs)
    held = _HELD.get()
    if held is None:
        return _load_ops(folders)
    if folders not in held:
        held[folders] = _load_ops(folders)
    return dict(held[folders])  # a caller's changes stay its own


def _load_ops(kernels_dirs: tuple[Path, ...]) -> dict[str, Op]:
    """Load every op, as load_ops returns them."""
    ops = builtin_ops()
    imported = {_module_file(op.origin) for op in ops.values()}
    for path in op_files(kernels_dirs):
        if path.resolve() not in imported:  # one op, not a duplicate of itself
            _add(ops, _ops_at(str(path)))
    return ops


def package_kernel_folders(ops: Iterable[Op]) -> list[Path]:
    """Return the kernel folders of the installed ops: PACKAGE/OPNAME/ beside the op's
    module (my_pkg/vadd/*.cu for my_pkg/vadd_op.py), where there is one."""
    folders = []
    for op in ops:
        module = _module_file(op.origin)
        if op.origin not in BUILTIN_MODULES and module is not None \
                and (module.parent / op.name).is_dir():
            folders.append(module.parent / op.name)
    return folders


def _module_file(origin: str) -> Path | None:
    """Return the file of an installed or built-in op's module (imported already), if any."""
    module = sys.modules.get(origin)
    file = getattr(module, "__file__", None)
    return Path(file).resolve() if isinstance(file, str) else None


def op_files(kernels_dirs: Iterable[Path]) -> list[Path]:
    """Return the op files of the folders: FOLDER/*.py and FOLDER/*/*.py, each once, less
    the files and subfolders that skipped_name skips."""
    found: dict[Path, Path] = {}  # each file once (a link beside its target is one file)
    for folder in kernels_dirs:
        folder = Path(folder)
        refuse_unreachable(folder, f"--kernels-dir {folder}")  # glob() raises for it
        for path in sorted([*folder.glob("*.py"), *folder.glob("*/*.py")]):
            if not skipped_name(path.name) and (
                    path.parent == folder or not skipped_name(path.parent.name)):
                refuse_found_unreadable(path, "an op file")
                # the link's own name, not its target's (that of a dangling one has no .py)
                found.setdefault(path.resolve(), path.parent.resolve() / path.name)
    return list(found.values())


def skipped_name(name: str) -> bool:
    """Return whether a file or subfolder of an op folder is neither an op file nor a
    variant: `_` marks an op's helper code (`_ref.py`, `_common.cu`), `.` what is hidden
    (an editor's lock `.#softmax.py`, a `.ipynb_checkpoints/` copy, `.git/`)."""
    return name.startswith(("_", "."))


# The commands of cudabench's own (cli/names.py reserves them): an op's command may not be
# one, as it could never run (`cudabench history` runs history)
_RESERVED: set[str] = set()


def reserve_commands(names: Iterable[str]) -> None:
    """Refuse, from now on, ops whose command is one of names."""
    _RESERVED.update(names)


def _add(ops: dict[str, Op], new: list[Op]) -> None:
    """Add ops to the registry; a name given twice, a command (with its flag) that another
    op runs by already, or one of cudabench's own, is an error naming the origins."""
    for op in new:
        if op.name in ops and ops[op.name].origin != op.origin:
            raise OpFileError(f"{op.origin}: op {op.name!r} is also declared by "
                              f"{ops[op.name].origin}; rename one of them")
        command = op.command or op.name
        if command in _RESERVED:  # refused by `list` alone: every other command went on
            raise OpFileError(f"{op.origin}: op {op.name!r} takes the name of cudabench's "
                              f"`{command}` command, so its own could never run; give it "
                              f"another `{'command' if op.command else 'name'}`")
        other = next((o for o in ops.values() if o.name != op.name and o.command_flag ==
                      op.command_flag and (o.command or o.name) == command), None)
        if other is not None:  # one of them ran, the other never: the last one's flag won
            said = f"`{command}{' --' + op.command_flag if op.command_flag else ''}`"
            fix = ("another `command_flag`" if op.command_flag else
                   "its own `command`, or a `command_flag` to share it")
            raise OpFileError(f"{op.origin}: op {op.name!r} is run by {said}, as op "
                              f"{other.name!r} of {other.origin} is already; give it {fix}")
        ops[op.name] = op


@functools.cache
def _entry_point_modules() -> list[str]:
    """Return the modules installed packages declare in the cudabench.ops group (read once:
    scanning every installed distribution costs ~15 ms, and a sweep plans every point).
    importlib.metadata is imported here: 18 ms of every command's start otherwise."""
    import importlib.metadata

    return [entry.value.split(":")[0]
            for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)]


_LOADING = threading.RLock()  # an op file is in sys.modules before it has run: one at a time


@functools.cache
def _ops_at(origin: str) -> list[Op]:
    """Import origin once and return the ops it declares, checked. Two threads loading one
    op file (the Python API, from a thread pool) wait for each other: the second found the
    first's module half run, without its OP."""
    with _LOADING:
        module = (_import_file(Path(origin)) if origin.endswith(".py")
                  else _import_module(origin))
    declared = _own(module, "OPS")
    if declared is None and _own(module, "OP") is not None:
        declared = [module.OP]
    elif declared is not None and not isinstance(declared, (list, tuple)):  # OPS = MyOp()
        raise OpFileError(f"{origin}: OPS must be a list of ops, e.g. OPS = [MyOp()] (or "
                          f"OP = MyOp() for one), not a {type(declared).__name__}")
    if not isinstance(declared, (list, tuple)) or not declared:
        raise OpFileError(f"{origin}: declares no op; define OP = YourOp() (a subclass of "
                          "cudabench.ops.Op) or OPS = [...] (see docs/writing-an-op.md); "
                          "a helper module of an op is named with a leading _ (_ref.py)")
    ops: list[Op] = []
    for op in declared:
        if not isinstance(op, Op):
            called = (f": write {op.__name__}(), an instance"
                      if isinstance(op, type) and issubclass(op, Op) else "")
            raise OpFileError(f"{origin}: {plain_names(repr(op))} is not an instance of a "
                              f"cudabench.ops.Op subclass{called}")
        if _declared_elsewhere(op, module):
            continue  # `OPS = [*transpose.OPS, Mine()]`: transpose stays the built-in's
        op.origin = origin
        check_op(op)
        first = next((other for other in ops if other.name == op.name), None)
        if first is not None:  # `list` described the last, the run measured the first
            raise OpFileError(f"{origin}: declares two ops named {op.name!r} "
                              f"({type(first).__name__} and {type(op).__name__}); give each "
                              "its own name")
        ops.append(op)
    return ops


def _own(module: ModuleType, name: str) -> object:
    """Return the module's OPS or OP (name), or None where only a star import of
    cudabench's or an installed package's module bound it: `from cudabench.ops.transpose
    import *` brought transpose's OPS, which was taken for the file's own, its OP left out.
    One of the op folder's own helper (`from _defs import *`) is the file's."""
    value = getattr(module, name, None)
    file = getattr(module, "__file__", None)
    if value is None or module.__name__ in BUILTIN_MODULES or not isinstance(file, str) \
            or not file.endswith(".py"):
        return value
    try:
        tree = ast.parse(Path(file).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return value
    starred = bound = False
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            starred |= any(alias.name == "*" for alias in node.names)
            bound |= any((alias.asname or alias.name.partition(".")[0]) == name
                         for alias in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound |= node.id == name
    return None if starred and not bound and _foreign(value) else value


def _foreign(value: object) -> bool:
    """Whether an OPS or OP is cudabench's (its registry of built-ins, or their ops) or an
    installed package's: not the op folder's own."""
    if isinstance(value, dict):  # cudabench.ops' OPS, the built-ins by name
        return True
    ops = list(value) if isinstance(value, (list, tuple)) else [value]
    elsewhere = (*BUILTIN_MODULES, *_entry_point_modules())

    def theirs(module: str) -> bool:  # the op folders' files live in USER_OPS_PACKAGE
        return module in elsewhere or (module.startswith("cudabench.")
                                       and not module.startswith(f"{USER_OPS_PACKAGE}."))

    return bool(ops) and all(theirs(type(op).__module__) for op in ops)


def _declared_elsewhere(op: Op, module: ModuleType) -> bool:
    """Whether op is one that another op module, built in or installed, declares: an op
    file holding it (imported from there) declares it no more than `import` does, and its
    origin stays that module's (`list` showed transpose as the op file's)."""
    holder = type(op).__module__
    if holder == module.__name__ or holder not in (*BUILTIN_MODULES, *_entry_point_modules()):
        return False
    return any(op is other for other in _ops_at(holder))


def forget_file_ops() -> None:
    """Forget the op files imported so far and what they declared (a worker kept across
    commands, before the next command: the files may have been edited since), and the
    modules they imported from their folders (a `_ref.py`). Installed op modules stay:
    they change with their package, not between two commands."""
    with _LOADING:
        _ops_at.cache_clear()
        forget_folders()


def _import_module(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except Exception as exc:  # an installed plugin that is broken
        raise OpFileError(f"{name}: cannot import the op module: {type(exc).__name__}: {exc}"
                          ) from None


def _import_file(path: Path) -> ModuleType:
    """Import a user's op file under a name derived from its path (stable across processes)."""
    # a name of one part: `my.op.py` was a package `my` that a spawned process looked for
    name = f"{USER_OPS_PACKAGE}.{re.sub(r'[^0-9A-Za-z_]', '_', path.stem)}_{_path_digest(path)}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, local_path(path))
    if spec is None or spec.loader is None:
        raise OpFileError(f"{path}: cannot load the op file (not a Python file?)")
    module = importlib.util.module_from_spec(spec)
    # `import _ref` finds the _ref.py beside the file (on a Ray node, beside its copy)
    module.__dict__["__builtins__"] = folder_builtins(local_path(path).resolve().parent)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        del sys.modules[name]
        # the file at fault: the op file, or a helper module it imports (_ref.py)
        where = exc.filename if exc.filename and Path(exc.filename).resolve() != \
            local_path(path).resolve() else path
        raise OpFileError(f"{where}:{exc.lineno}: syntax error in "
                          f"{'the op file' if where == path else 'a module the op file imports'}"
                          f": {exc.msg}") from None
    except Exception as exc:
        del sys.modules[name]
        # a helper's own mistake (_ref.py imports a module that is not there) names it
        raise OpFileError(f"{path}: the op file failed to load: "
                          f"{error_text(exc, str(local_path(path).resolve()))}") from None
    except SystemExit as exc:  # sys.exit() at import would end cudabench, silently
        del sys.modules[name]
        raise OpFileError(f"{path}: the op file calls sys.exit({exc.code!r}) when imported; "
                          "an op file only defines its op") from None
    loaded_op_file(name, local_path(path).resolve())
    return module


def _path_digest(path: Path) -> str:
    """Return 12 hex digits of path's place: its module's name, stable across processes."""
    import hashlib  # here: only a user's op file needs it

    return hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]


def check_op(op: Op) -> None:
    """Raise OpFileError naming the origin and field if an op is not fully declared."""
    where = f"{op.origin}: op {op.name or type(op).__name__!r}"
    if not isinstance(op.name, str) or not op.name.isidentifier():
        raise OpFileError(f"{where}: `name` must be an identifier such as \"softmax\"")
    # the help and list print it, on one line: "a\nb" was listed over two
    # (a trailing line break too: "y = x\n" printed the types on the next line)
    if not isinstance(op.summary, str) or op.summary.splitlines() not in ([], [op.summary]):
        raise OpFileError(f"{where}: `summary` must be a line of text, e.g. \"y = softmax(x) "
                          f"by rows\"; got {op.summary!r}")
    if not isinstance(op.dims, (tuple, list)) or not op.dims or not all(
            isinstance(d, str) and d.isidentifier() for d in op.dims):
        raise OpFileError(f"{where}: `dims` must name the shape's extents, e.g. (\"ROWS\", "
                          "\"COLS\")")
    if len(set(op.dims)) != len(op.dims):  # each a kernel argument and header variable
        raise OpFileError(f"{where}: `dims` {tuple(op.dims)!r} names an extent twice")
    hidden = sorted(set(op.dims) & {*BUILTIN_NAMES, *TYPE_MACROS})
    if hidden:  # launch arithmetic read SM_COUNT's value, not the extent's
        raise OpFileError(f"{where}: `dims` name {hidden[0]} would be hidden by the built-in "
                          f"name {hidden[0]} (reserved: "
                          f"{', '.join(sorted({*BUILTIN_NAMES, *TYPE_MACROS}))}); rename it")
    forms = op.size_forms
    if not isinstance(forms, Mapping) or not forms or any(
            not isinstance(n, int) or n < 1 or not isinstance(example, str)
            for n, example in forms.items()):  # a list or a number example: "internal error"
        raise OpFileError(f"{where}: `size_forms` must map a number of extents to an "
                          "example, e.g. {1: \"1024\", 2: \"1024x512\"}; got "
                          f"{forms!r:.60}")
    extra = sorted(set(forms) - {1, len(op.dims)})
    if extra and type(op).parse_size is Op.parse_size:  # its own parse_size may take them
        # Op.parse_size fills every extent from one, and takes the others as they come: a
        # form of 2 extents for dims ("N",) gave a shape of 2, wrong for every method
        allowed = "1" if len(op.dims) == 1 else f"1 (every extent alike) or {len(op.dims)}"
        raise OpFileError(f"{where}: `size_forms` {forms!r:.60} names {extra[0]} extents, but "
                          f"`dims` has {len(op.dims)}: a form's number of extents is {allowed}")
    try:
        op.parse_size(op.default_size)
    except Exception:
        raise OpFileError(f"{where}: `default_size` {op.default_size!r} is not a size of "
                          "its size_forms") from None
    if not isinstance(op.types, Mapping):  # None or a set: "internal error" at .items()
        raise OpFileError(f"{where}: `types` maps an input type to (input, accumulator, "
                          "output) types, e.g. {\"float32\": (\"float32\", \"float32\", "
                          f"\"float32\")}}; got {op.types!r:.60}")
    for dtype, names in op.types.items():
        if dtype not in DTYPES or not isinstance(names, (tuple, list)) or len(names) != 3 \
                or any(not isinstance(n, str) or n not in DTYPES for n in names):
            raise OpFileError(f"{where}: `types` maps an input type to (input, accumulator, "
                              f"output) types among {', '.join(DTYPES)}; got {dtype!r}: "
                              f"{names!r}")
        if names[0] != dtype:  # --dtype float16 made float32 inputs; the kernels were blamed
            raise OpFileError(f"{where}: `types` {dtype!r}: {tuple(names)!r} gives another "
                              f"input type: the key is the input type, {names[0]!r}")
    if not op.types:
        raise OpFileError(f"{where}: `types` is empty: declare at least one type")
    if not op.result_buffer or not op.signature:
        raise OpFileError(f"{where}: `result_buffer` and `signature` must be given")
    if not isinstance(op.result_buffer, str) or not isinstance(op.signature, str):
        raise OpFileError(f"{where}: `result_buffer` is a buffer's name and `signature` the "
                          "kernels' parameters, each a string, e.g. \"y\" and \"(const "
                          "DTYPE* x, DTYPE* y, int N)\"")
    references = op.references
    if not isinstance(references, (tuple, list)) or any(
            name not in REFERENCE_NAMES for name in references):
        # a string was a row per character, an unknown name a worker lost (KeyError)
        raise OpFileError(f"{where}: `references` must be a tuple of reference rows among "
                          f"{', '.join(REFERENCE_NAMES)}, e.g. (\"memcpy_dtod\",); got "
                          f"{references!r:.60}")
    if not isinstance(op.command, str) or op.command and not op.command.isidentifier():
        raise OpFileError(f"{where}: `command` is the command that runs the op, an "
                          f"identifier such as \"transpose\" (\"\": its name); got "
                          f"{op.command!r:.60}")
    if not isinstance(op.command_flag, str) or op.command_flag and not re.fullmatch(
            r"[a-z][a-z0-9_]*", op.command_flag):  # `--my-flag` made no option: internal error
        raise OpFileError(f"{where}: `command_flag` is the flag that selects the op within "
                          "its `command` (lowercase letters, digits and _), e.g. \"inplace\" "
                          f"for `transpose --inplace`; got {op.command_flag!r:.60}")
    shortcuts = op.shortcuts
    if not isinstance(shortcuts, dict) or not all(
            isinstance(option, str) and re.fullmatch(r"[a-z][a-z0-9_-]*", option)
            and isinstance(param, str) and param.isidentifier()
            for option, param in shortcuts.items()):
        # {"": "BLOCK"} made an option named `--`
        raise OpFileError(f"{where}: `shortcuts` maps an option's name (lowercase letters, "
                          "digits, _ and -) to a parameter, e.g. {\"tile\": \"TILE\"}; got "
                          f"{shortcuts!r:.60}")
    first_of: dict[str, str] = {}
    for option, param in shortcuts.items():
        # values were kept by parameter: --block 64 --threads 128 set 128, --block 64 alone
        # was dropped; one option a parameter, as -p has one spelling
        if param in first_of:
            raise OpFileError(f"{where}: `shortcuts` gives {param} two options, "
                              f"{first_of[param]!r} and {option!r}; keep one")
        first_of[param] = option
    if op.vendor_library and getattr(type(op), "vendor") is getattr(Op, "vendor"):
        raise OpFileError(f"{where}: `vendor_library` {op.vendor_library!r} needs a "
                          "vendor(types) method that returns its VendorCall, or why there is "
                          "none (see docs/writing-an-op.md)")
    missing = [m for m in REQUIRED_METHODS if getattr(type(op), m) is getattr(Op, m)]
    if missing:
        raise OpFileError(f"{where}: define {', '.join(missing)} (see docs/writing-an-op.md)")
