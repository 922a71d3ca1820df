"""Ops of the user's own: a .py file beside the kernels, found in every process, and every
way such a file can be broken reported as one line naming it."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudabench.cli import cli
from cudabench.engines.fake_kernels import Fault
from cudabench.errors import OpFileError
from cudabench.ops import registry
from cudabench.results import Status, load_results
from cudabench.results.schema import validate

EXAMPLE = Path(__file__).parents[1] / "examples" / "softmax"
QUICK = ["--warmup", "0", "--min-samples", "5", "--max-time", "0.05"]


def invoke(*args: str):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("size", ["1x1", "17x33", "64x1025"])
def test_the_example_op_runs_and_verifies_in_every_type(use_fake, tmp_path, dtype, size):
    json_path = tmp_path / "r.json"
    done = invoke("softmax", "--kernels-dir", EXAMPLE, "--size", size, "--dtype", dtype,
                  "--json", json_path, *QUICK)
    assert done.exit_code == 0, done.output
    validate(json.loads(json_path.read_text()))
    statuses = {b.variant: b.status for b in load_results(json_path).benchmarks}
    assert statuses == {"naive": Status.PASS, "block_per_row": Status.PASS}


def test_a_type_outside_the_ops_matrix_is_a_usage_error(use_fake):
    done = invoke("softmax", "--kernels-dir", EXAMPLE, "--dtype", "int32")
    assert done.exit_code == 2
    assert "--dtype int32: softmax supports float16, float32, float64" in done.stderr


def test_the_ops_kernels_run_in_a_fresh_process_after_a_fault(use_fake, tmp_path):
    # The worker process finds the op again from its file: nothing is pickled by class.
    use_fake(faults={"block_per_row": Fault.FAULT})
    json_path = tmp_path / "r.json"
    done = invoke("softmax", "--kernels-dir", EXAMPLE, "--size", "8x100", "--json", json_path,
                  *QUICK)
    assert done.exit_code == 3, done.output
    statuses = {b.variant: b.status for b in load_results(json_path).benchmarks}
    assert statuses == {"block_per_row": Status.FAIL, "naive": Status.PASS}


def test_list_and_suites_know_the_users_op(use_fake, tmp_path):
    listed = invoke("list", "--kernels-dir", EXAMPLE)
    assert listed.exit_code == 0 and "softmax" in listed.stdout
    assert "float16 (float32 accumulation)" in listed.stdout
    suite = tmp_path / "cudabench.toml"
    suite.write_text(f'kernels_dirs = ["{EXAMPLE}"]\n\n[[benchmark]]\nop = "softmax"\n'
                     'size = "16x64"\n\n[timing]\nmax_time = 0.05\nwarmup = 0\n')
    done = invoke("run", suite)
    assert done.exit_code == 0, done.output
    assert "softmax 16x64" in done.stdout


def write_op(folder: Path, text: str, name: str = "myop.py") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


GOOD_OP = """
    import numpy as np
    from cudabench.ops import Op
    from cudabench.ops.checks import exact_check

    class Copy(Op):
        name = "mycopy"
        summary = "y = x"
        dims = ("N",)
        size_forms = {1: "1000"}
        default_size = "1000"
        signature = "(const DTYPE* x, DTYPE* y, int N)"
        result_buffer = "y"

        def inputs(self, shape, types, rng):
            return {"x": rng.uniform(-1, 1, shape).astype(types.input.numpy)}

        def outputs(self, shape, types, blocks):
            return {"y": shape}

        def args(self, shape, blocks):
            return ["x", "y", *shape]

        def reference(self, inputs):
            REFERENCE_BODY

        def verify(self, inputs, expected, result, launches, types):
            return exact_check(result, expected)

        def bytes_moved(self, shape, types):
            return 2 * shape[0] * types.input.itemsize

        def emulate(self, args, types):
            from cudabench.ops.base import typed
            x, y, n = args
            result = typed(y, types.output, (n,))
            result[...] = typed(x, types.input, (n,))
            return result

    OP = Copy()
"""
KERNEL = """// cudabench: mycopy
// launch copy: grid cdiv(N, 128); block 128
extern "C" __global__ void copy(const DTYPE* x, DTYPE* y, int N) {
    int i = blockIdx.x * 128 + threadIdx.x;
    if (i < N) y[i] = x[i];
}
"""


def user_folder(tmp_path: Path, op_text: str) -> Path:
    folder = tmp_path / "mine"
    write_op(folder, op_text)
    (folder / "mycopy").mkdir(parents=True, exist_ok=True)
    (folder / "mycopy" / "plain.cu").write_text(KERNEL)
    return folder


def an_edit_reaches_the_next_command(tmp_path: Path, *placement: object,
                                     in_helper: bool = False) -> None:
    """Run the user's op twice with placement's flags (workers kept between commands),
    editing its reference between the runs (now wrong): the second run must use the edit,
    so FAIL, exit 3. in_helper: the reference lives in a helper module the op file imports
    (`_ref.py`), whose function imports another from a `_helpers/` package when it runs."""
    from cudabench.ops.registry import forget_file_ops

    edited = folder = user_folder(tmp_path, GOOD_OP.replace(
        "REFERENCE_BODY", "return inputs['x']").replace(
        "import numpy as np", "import numpy as np\n    import _ref" if in_helper else
        "import numpy as np"))
    if in_helper:
        (folder / "myop.py").write_text((folder / "myop.py").read_text().replace(
            "return inputs['x']", "return _ref.reference(inputs)"))
        (folder / "_ref.py").write_text("def reference(inputs):\n"
                                        "    from _helpers.body import shifted\n"
                                        "    return shifted(inputs['x'])\n")
        (folder / "_helpers").mkdir()
        (folder / "_helpers" / "__init__.py").write_text("")
        (folder / "_helpers" / "body.py").write_text("def shifted(x):\n    return x\n")
        edited = folder / "_helpers"
    args = ("mycopy", "--kernels-dir", folder, "--size", "300", *placement)
    forget_file_ops()  # another test's helpers of the same names
    try:
        _edit_between(edited / ("body.py" if in_helper else "myop.py"), args)
    finally:
        forget_file_ops()


def _edit_between(target: Path, args: tuple[object, ...]) -> None:
    """Run args, make target's reference wrong, run args again: FAIL, exit 3."""
    from cudabench.ops.registry import forget_file_ops

    first = invoke(*args)
    assert first.exit_code == 0, first.stderr
    target.write_text(target.read_text().replace("return x", "return x + 1").replace(
        "return inputs['x']", "return inputs['x'] + 1"))
    forget_file_ops()  # this process plans as a new command's would: from the file
    second = invoke(*args)
    assert second.exit_code == 3, second.stdout + second.stderr
    assert "FAIL" in second.stdout


def test_an_edited_helper_module_reaches_the_next_command(use_fake, tmp_path):
    an_edit_reaches_the_next_command(tmp_path, *QUICK, in_helper=True)


def two_copies_of_an_op_folder(tmp_path: Path, wrong: str) -> tuple[Path, Path]:
    """Two op folders whose op file imports a `_ref.py` beside it and, inside a function, a
    `_helpers/` package; in the folder named wrong, the helper's reference is wrong."""
    folders = []
    for name in ("one", "two"):
        folder = tmp_path / name
        write_op(folder, GOOD_OP.replace(
            "REFERENCE_BODY", "return _ref.reference(inputs)").replace(
            "import numpy as np", "import numpy as np\n    import _ref").replace(
            '"mycopy"', f'"copy_{name}"'), name=f"{name}.py")
        (folder / "_ref.py").write_text("def reference(inputs):\n"
                                        "    from _helpers.body import shifted\n"
                                        "    return shifted(inputs['x'])\n")
        (folder / "_helpers").mkdir()
        (folder / "_helpers" / "__init__.py").write_text("")
        (folder / "_helpers" / "body.py").write_text(
            f"def shifted(x):\n    return x{' + 1' if name == wrong else ''}\n")
        (folder / f"copy_{name}").mkdir()
        (folder / f"copy_{name}" / "plain.cu").write_text(
            KERNEL.replace("cudabench: mycopy", f"cudabench: copy_{name}"))
        folders.append(folder)
    return folders[0], folders[1]


def test_two_op_folders_helpers_of_one_name_are_each_folder_s_own(use_fake, tmp_path):
    # Python keeps one module a name: the second op checked against the first's reference,
    # then was refused; each op folder's `_ref` and `_helpers` are its own
    from cudabench.ops.registry import forget_file_ops

    forget_file_ops()
    one, two = two_copies_of_an_op_folder(tmp_path, wrong="two")
    try:
        for op, status in (("copy_one", 0), ("copy_two", 3)):
            done = invoke(op, "--kernels-dir", one, "--kernels-dir", two, "--size", "300",
                          *QUICK)
            assert done.exit_code == status, done.output
        assert "_ref" not in __import__("sys").modules  # nothing under the plain name
    finally:
        forget_file_ops()


def test_a_helper_module_s_mistakes_name_the_helper_not_the_op_file(use_fake, tmp_path,
                                                                   monkeypatch):
    # a syntax error in _ref.py was "myop.py:2: syntax error in the op file", its line
    # number the helper's; a helper named like a standard module blamed "another op's folder"
    from cudabench.ops.registry import forget_file_ops

    forget_file_ops()
    folder = tmp_path / "mine"
    write_op(folder, GOOD_OP.replace("REFERENCE_BODY", "return _ref.reference(inputs)").replace(
        "import numpy as np", "import numpy as np\n    import _ref"))
    (folder / "_ref.py").write_text("def reference(inputs)\n    return inputs['x']\n")
    try:
        done = invoke("list", "--kernels-dir", folder)
        assert done.exit_code == 2, done.output
        assert f"{folder / '_ref.py'}:1: syntax error in a module the op file imports" \
            in done.stderr, done.stderr
        forget_file_ops()
        # a helper named like a standard module (_random) is the folder's, as a script's is
        (folder / "myop.py").write_text((folder / "myop.py").read_text().replace(
            "_ref", "_random"))
        (folder / "_ref.py").write_text("def reference(inputs):\n    return inputs['x']\n")
        (folder / "_ref.py").rename(folder / "_random.py")
        (folder / "mycopy").mkdir()
        (folder / "mycopy" / "plain.cu").write_text(KERNEL)
        done = invoke("mycopy", "--kernels-dir", folder, "--size", "300", *QUICK)
        assert done.exit_code == 0, done.output
        import random  # noqa: F401 (its _random is still the standard library's)

        assert "site-packages" not in str(getattr(__import__("_random"), "__file__", ""))
        assert not str(getattr(__import__("_random"), "__file__", "")).startswith(
            str(folder))
    finally:
        forget_file_ops()


def test_a_helper_named_without_an_underscore_is_told_how_to_name_it(use_fake, tmp_path):
    folder = tmp_path / "mine"
    write_op(folder, GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']"))
    (folder / "ref.py").write_text("SCALE = 1\n")
    done = invoke("list", "--kernels-dir", folder)
    assert done.exit_code == 2 and "ref.py: declares no op" in done.stderr
    assert "a helper module of an op is named with a leading _ (_ref.py)" in done.stderr


def test_a_small_op_of_ones_own_runs(use_fake, tmp_path):
    folder = user_folder(tmp_path, GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']"))
    done = invoke("mycopy", "--kernels-dir", folder, "--size", "300", *QUICK)
    assert done.exit_code == 0, done.output
    assert "plain" in done.stdout and "PASS" in done.stdout


@pytest.mark.parametrize(("change", "message"), [
    (lambda t: t.replace("class Copy(Op):", "class Copy(Op)"), "myop.py:6: syntax error"),
    (lambda t: t.replace("OP = Copy()", ""), "declares no op"),
    (lambda t: t.replace('    dims = ("N",)\n', ""), "`dims` must name"),
    (lambda t: t.replace("def verify(", "def check("), "define verify"),
    (lambda t: t.replace('name = "mycopy"', 'name = "matmul"'), "also declared by"),
    (lambda t: t.replace("import numpy as np", "import no_such_module"),
     "ModuleNotFoundError"),
    (lambda t: t.replace('default_size = "1000"', 'default_size = "ten"'), "`default_size`"),
])
def test_a_broken_op_file_is_one_line_naming_the_file(use_fake, tmp_path, change, message):
    text = change(textwrap.dedent(GOOD_OP).replace("REFERENCE_BODY", "return inputs['x']"))
    folder = user_folder(tmp_path, text)
    for args in (["mycopy", "--kernels-dir", folder], ["list", "--kernels-dir", folder]):
        done = invoke(*args)
        assert done.exit_code == 2, done.output
        assert str(folder / "myop.py") in done.stderr and message in done.stderr
        assert "Traceback" not in done.output and len(done.stderr.splitlines()) == 1


def test_a_reference_that_raises_gives_error_rows_naming_the_file(use_fake, tmp_path):
    folder = user_folder(tmp_path, GOOD_OP.replace("REFERENCE_BODY", "raise KeyError('y')"))
    done = invoke("mycopy", "--kernels-dir", folder, "--size", "50", *QUICK)
    assert done.exit_code == 2, done.output
    assert "ERROR" in done.stdout
    assert f"{folder / 'myop.py'}: mycopy.reference raised KeyError" in done.stderr
    assert "Traceback" not in done.output


def test_an_expected_that_raises_is_named_not_the_reference(use_fake, tmp_path):
    # "mycopy.reference raised KeyError": the reference was fine
    folder = user_folder(tmp_path, GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']")
                         .replace("def verify(", "def expected(self, inputs, types, rng, full):\n"
                                  "            return inputs['q']\n\n        def verify("))
    done = invoke("mycopy", "--kernels-dir", folder, "--size", "50", *QUICK)
    assert done.exit_code == 2, done.output
    assert f"{folder / 'myop.py'}: mycopy.expected raised KeyError" in done.stderr


def run_edited(tmp_path: Path, old: str, new: str):
    """Run the good op with old replaced by new in its file; return its folder and run."""
    text = GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']").replace(old, new)
    folder = user_folder(tmp_path, text)
    return folder, invoke("mycopy", "--kernels-dir", folder, "--size", "50", *QUICK)


def test_an_op_without_emulate_on_the_fake_engine_says_so_naming_the_file(use_fake, tmp_path):
    # every row read "its worker process failed: NotImplementedError: " (a worker lost)
    folder, done = run_edited(tmp_path, "def emulate(", "def emulated(")
    assert done.exit_code == 2, done.output
    said = " ".join(done.stderr.split())
    assert f"{folder / 'myop.py'}: mycopy defines no emulate(args, types)" in said, said
    assert "worker process failed" not in said


def test_a_verification_of_the_wrong_kinds_is_an_error_naming_the_file(use_fake, tmp_path):
    # passed="yes" was written into a results file that report, compare and history
    # refused as corrupt; NumPy's scalars (np.bool_ of a comparison) are taken as Python's
    folder, done = run_edited(
        tmp_path, "return exact_check(result, expected)",
        "import dataclasses\n            return dataclasses.replace("
        "exact_check(result, expected), passed='yes', criterion=5)")
    assert done.exit_code == 2 and "PASS" not in done.stdout, done.output
    assert f"{folder / 'myop.py'}: mycopy.verify returned a Verification with " \
           "passed='yes', criterion=5" in " ".join(done.stderr.split()), done.stderr
    _, done = run_edited(
        tmp_path / "np", "return exact_check(result, expected)",
        "import dataclasses\n            checked = exact_check(result, expected)\n"
        "            return dataclasses.replace(checked, passed=np.bool_(checked.passed), "
        "bad_elements=np.int64(0))")
    assert done.exit_code == 0, done.output


def test_a_reference_of_another_shape_is_an_error_naming_the_file_not_a_pass(use_fake,
                                                                            tmp_path):
    # A reference of one element (or one row) would broadcast against the whole result:
    # compared element for element, a wrong op would PASS every kernel.
    folder = user_folder(tmp_path, GOOD_OP.replace("REFERENCE_BODY", "return inputs['x'][:1]"))
    done = invoke("mycopy", "--kernels-dir", folder, "--size", "50", *QUICK)
    assert done.exit_code == 2, done.output
    assert "PASS" not in done.stdout and "ERROR" in done.stdout
    assert f"{folder / 'myop.py'}: mycopy.verify raised ValueError: the expected array has " \
           "shape (1,) (the op's reference) and the result (50,)" in \
        " ".join(done.stderr.split())


def test_a_result_of_another_shape_names_outputs_as_well_as_the_reference(use_fake, tmp_path):
    # outputs sized the result buffer one short; the message blamed the reference alone
    text = GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']").replace(
        'return {"y": shape}', 'return {"y": (shape[0] - 1,)}').replace(
        "(y, types.output, (n,))", "(y, types.output, (n - 1,))").replace(
        "typed(x, types.input, (n,))", "typed(x, types.input, (n,))[:-1]")
    folder = user_folder(tmp_path, text)
    done = invoke("mycopy", "--kernels-dir", folder, "--size", "50", *QUICK)
    assert done.exit_code == 2, done.output
    assert "the expected array has shape (50,) (the op's reference) and the result (49,) " \
        "(the result buffer, as the op's outputs sizes it): fix whichever of reference and " \
        "outputs is wrong" in " ".join(done.output.split()), done.output


BAD_WORK = {
    "flops": ("        def bytes_moved(self, shape, types):",
              "        def flops(self, shape):\n            return 'x'\n\n"
              "        def bytes_moved(self, shape, types):",
              "mycopy.flops returned 'x' for (50,): expected a whole number"),
    "bytes_moved": ("return 2 * shape[0] * types.input.itemsize", "return None",
                    "mycopy.bytes_moved returned None for (50,): expected a whole number"),
    # an OverflowError in the tables (exit 4), and a file no command would read again
    "huge": ("return 2 * shape[0] * types.input.itemsize", "return 10**400",
             "mycopy.bytes_moved returned 1000000000000000000000000000000000000000 for "
             "(50,): expected a whole number, 0 or more and below 2**63"),
}


def test_an_op_may_count_its_work_in_numpy_integers(use_fake, tmp_path):
    # np.prod of a shape is an np.int64: a whole number, which the results file stores.
    text = GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']").replace(
        "return 2 * shape[0] * types.input.itemsize",
        "return np.prod(shape) * 2 * types.input.itemsize")
    folder = user_folder(tmp_path, text)
    out = tmp_path / "r.json"
    done = invoke("mycopy", "--kernels-dir", folder, "--size", "50", *QUICK, "--json", out)
    assert done.exit_code == 0, done.output
    assert json.loads(out.read_text())["benchmarks"][0]["throughput"]["bytes_moved"] == 400


@pytest.mark.parametrize("case", BAD_WORK)
def test_an_op_s_count_of_its_work_must_be_a_whole_number(use_fake, tmp_path, case):
    old, new, says = BAD_WORK[case]
    text = GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']").replace(old, new)
    folder = user_folder(tmp_path, text)
    done = invoke("mycopy", "--kernels-dir", folder, "--size", "50", *QUICK)
    assert done.exit_code == 2, done.output  # refused before anything runs, one line
    assert f"{folder / 'myop.py'}: {says}" in done.stderr
    assert "Traceback" not in done.output and "internal error" not in done.output


def test_args_naming_no_buffer_is_an_error_naming_the_op_file(use_fake, tmp_path):
    folder, done = run_edited(tmp_path, 'return ["x", "y", *shape]',
                              'return ["x", "q", *shape]')
    assert done.exit_code == 2, done.output
    assert f"{folder / 'myop.py'}: mycopy.args names 'q', which is no buffer" in done.stderr


def test_an_op_file_that_exits_at_import_is_an_error_not_a_silent_success(use_fake, tmp_path):
    folder = user_folder(tmp_path, "import sys\nsys.exit(0)\n")
    done = invoke("mycopy", "--kernels-dir", folder, "--size", "50", *QUICK)
    assert done.exit_code == 2, done.output
    assert f"{folder / 'myop.py'}: the op file calls sys.exit(0) when imported" in done.stderr


def test_an_installed_package_declares_ops_through_an_entry_point(monkeypatch, tmp_path):
    package = tmp_path / "site"
    write_op(package, GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']"),
             name="plugged_ops.py")
    monkeypatch.syspath_prepend(str(package))

    class EntryPoint:
        value = "plugged_ops"

    monkeypatch.setattr(registry.importlib.metadata, "entry_points",
                        lambda group: [EntryPoint()] if group == "cudabench.ops" else [])
    registry._entry_point_modules.cache_clear()  # read once per process: read it again
    try:
        ops = registry.builtin_ops()
    finally:
        registry._entry_point_modules.cache_clear()
    assert ops["mycopy"].origin == "plugged_ops" and "matmul" in ops


@pytest.mark.parametrize("value, says", [
    ("shape[0] + 0.9", "gives 50.9: a scalar argument must be an int, not a float"),
    # a whole float (shape[0] / 1) said "must be a whole number", which it is
    ("shape[0] / 1", "gives 50.0: a scalar argument must be an int, not a float"),
    ("shape[0] + 2**32", "gives 4294967346: a scalar argument must be a whole number within "
     "int32"),
    ("True", "gives True: a scalar argument must be a whole number within int32")])
def test_an_args_scalar_must_be_a_whole_int32(use_fake, tmp_path, value, says):
    # a float was truncated (and PASSed); 2**32 failed in the worker, naming no file
    text = GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']").replace(
        'return ["x", "y", *shape]', f'return ["x", "y", {value}]')
    folder = user_folder(tmp_path, text)
    for extra in ([], ["--dry-run"]):  # a dry run too: it said ok, exit 0
        done = invoke("mycopy", "--kernels-dir", folder, "--size", "50", *QUICK, *extra)
        assert done.exit_code == 2, done.output
        assert f"{folder / 'myop.py'}: mycopy.args {says}" in " ".join(done.stderr.split())


@pytest.mark.parametrize("option", ["seed", "help", "traceback", "wide"])
def test_a_shortcut_may_not_take_an_option_cudabench_has(use_fake, tmp_path, option):
    # shortcuts = {"seed": ...} made --seed set the parameter, the inputs' seed unchanged;
    # one called help replaced --help; the group took --traceback 64 wherever it stood, and
    # said "Got unexpected extra argument (64)"
    text = GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']").replace(
        '        result_buffer = "y"',
        f'        result_buffer = "y"\n        shortcuts = {{"{option}": "BLOCK"}}')
    folder = user_folder(tmp_path, text)
    done = invoke("mycopy", "--kernels-dir", folder, f"--{option}", "64")
    assert done.exit_code == 2, done.output
    assert f"{folder / 'myop.py'}: a shortcut or command flag takes --{option}" in done.stderr
    # `list` and the Python API build no command: they refused nothing
    listed = invoke("list", "--kernels-dir", folder)
    assert listed.exit_code == 2 and "a shortcut or command flag takes" in listed.stderr
    import cudabench

    with pytest.raises(OpFileError, match=f"a shortcut or command flag takes (--)?{option}"):
        cudabench.run("mycopy", kernels_dir=folder, size=50)


def test_two_shortcuts_of_one_parameter_are_refused(use_fake, tmp_path, fresh_ops):
    # the values were kept by parameter: --block 64 alone was dropped (the header's default
    # ran), --block 64 --threads 128 ran 128
    text = GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']").replace(
        '        result_buffer = "y"',
        '        result_buffer = "y"\n        shortcuts = {"block": "BLOCK", "threads": "BLOCK"}')
    folder = user_folder(tmp_path, text)
    says = f"{folder / 'myop.py'}: op 'mycopy': `shortcuts` gives BLOCK two options, " \
        "'block' and 'threads'; keep one"
    for args in (["mycopy", "--block", "64"], ["list"]):
        done = invoke(*args, "--kernels-dir", folder)
        assert done.exit_code == 2 and says in done.stderr, done.output


def test_ops_of_one_command_may_not_spell_a_parameter_two_ways(use_fake, tmp_path, fresh_ops):
    # op_command merged the ops' shortcuts: --block 64 --threads 128 ran BLOCK=128
    text = GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']").replace(
        '        result_buffer = "y"', '        result_buffer = "y"\n        SHORTCUTS')
    first = text.replace("SHORTCUTS", 'shortcuts = {"block": "BLOCK"}')
    second = text.replace("SHORTCUTS", 'shortcuts = {"threads": "BLOCK"}').replace(
        'name = "mycopy"', 'name = "mycopy2"\n        command = "mycopy"\n'
        '        command_flag = "other"')
    folder = user_folder(tmp_path, first)
    path = write_op(folder, second, name="other.py")
    for args in (["mycopy", "--block", "64", "--threads", "128"], ["list"]):
        done = invoke(*args, "--kernels-dir", folder)
        assert done.exit_code == 2, done.output
        assert f"{path}: op 'mycopy2'\'s shortcut 'threads' sets BLOCK, another op of the " \
            "`mycopy` command's 'block' sets BLOCK" in " ".join(done.stderr.split())


@pytest.mark.parametrize(("change", "field"), [
    (lambda t: t.replace('name = "mycopy"', 'name = "list"'), "name"),
    (lambda t: t.replace('name = "mycopy"', 'name = "mycopy"\n        command = "report"'),
     "command"),
])
@pytest.mark.parametrize("command", ["list", "report", "info"])
def test_an_op_named_like_a_command_of_cudabench_is_refused(use_fake, tmp_path, change,
                                                            field, command):
    # `cudabench list --kernels-dir F` listed, and the op's command could never run
    path = write_op(tmp_path / "mine", change(GOOD_OP.replace(
        "REFERENCE_BODY", "return inputs['x']")), name="mine.py")
    done = invoke(command, "--kernels-dir", tmp_path / "mine")
    assert done.exit_code == 2, done.output
    assert done.stderr.startswith(f"cudabench: error: {path}: op "), done.stderr
    assert "command, so its own could never run; give it another " \
        f"`{field}`" in done.stderr and "Traceback" not in done.output


def helper_op(tmp_path: Path, reference: str, **helpers: str) -> Path:
    """Write the user's op, its reference's body `reference`, and helper files beside it
    (name -> text; a name with / is a file in a subfolder)."""
    folder = user_folder(tmp_path, GOOD_OP.replace("REFERENCE_BODY", reference))
    for name, text in helpers.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return folder


@pytest.fixture
def fresh_ops():
    from cudabench.ops.registry import forget_file_ops

    forget_file_ops()
    yield
    forget_file_ops()


def test_a_helper_s_mistake_names_the_helper_and_its_line(use_fake, tmp_path, fresh_ops):
    # "myop.py: mycopy.reference raised ValueError: boom", the helper unnamed, and a missing
    # module named "cudabench.ops.user._folder_5eb3505e29ec._helpers.shape"
    folder = helper_op(tmp_path, "import _ref\n            return _ref.f(inputs['x'])",
                       **{"_ref.py": "def f(x):\n    raise ValueError('boom')\n"})
    done = invoke("mycopy", "--kernels-dir", folder, "--size", "50", *QUICK)
    text = " ".join(done.output.split())
    assert "mycopy.reference raised ValueError: boom (at " in text, text
    assert f"{folder / '_ref.py'}:2)" in text
    (folder / "_ref.py").write_text("import _helpers.shape\n")
    (folder / "_helpers").mkdir()
    (folder / "_helpers" / "__init__.py").write_text("")
    forget = __import__("cudabench.ops.registry", fromlist=["x"]).forget_file_ops
    forget()
    done = invoke("mycopy", "--kernels-dir", folder, "--size", "50", *QUICK)
    text = " ".join(done.output.split())
    assert "No module named '_helpers.shape'" in text, text
    assert "cudabench.ops.user" not in text and f"(at {folder / '_ref.py'}:1)" in text
    # and when the op file imports it as it loads
    op_file = folder / "myop.py"
    op_file.write_text(op_file.read_text().replace("import numpy as np\n",
                                                   "import numpy as np\nimport _ref\n", 1))
    forget()
    done = invoke("list", "--kernels-dir", folder)
    text = " ".join(done.stderr.split())
    assert done.exit_code == 2 and "the op file failed to load: ModuleNotFoundError: No " \
        "module named '_helpers.shape'" in text and f"(at {folder / '_ref.py'}:1)" in text


def test_importlib_is_told_to_use_an_import_statement(use_fake, tmp_path, fresh_ops):
    folder = helper_op(tmp_path, "import importlib\n"
                       "            return importlib.import_module('_ref').f(inputs['x'])",
                       **{"_ref.py": "def f(x):\n    return x\n"})
    done = invoke("mycopy", "--kernels-dir", folder, "--size", "50", *QUICK)
    text = " ".join(done.output.split())
    assert "No module named '_ref' (_ref is beside the op file: an import statement finds " \
        "it, `import _ref`; importlib does not look beside op files)" in text, text


def test_ops_that_is_not_a_list_is_told_to_be_one(use_fake, tmp_path):
    # "declares no op; define OP = YourOp() ... or OPS = [...]", which it had
    folder = user_folder(tmp_path, GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']")
                         .replace("OP = Copy()", "OPS = Copy()"))
    done = invoke("list", "--kernels-dir", folder)
    assert done.exit_code == 2, done.output
    assert f"{folder / 'myop.py'}: OPS must be a list of ops, e.g. OPS = [MyOp()]" \
        in done.stderr


def test_a_class_given_as_op_is_told_to_be_called(use_fake, tmp_path):
    folder = user_folder(tmp_path, GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']")
                         .replace("OP = Copy()", "OP = Copy"))
    done = invoke("list", "--kernels-dir", folder)
    assert done.exit_code == 2
    assert "<class 'myop.Copy'> is not an instance of a cudabench.ops.Op subclass: write " \
        "Copy(), an instance" in done.stderr


def test_an_op_file_beside_does_not_hide_a_standard_module(use_fake, tmp_path, fresh_ops):
    # copy.py, another op file in the folder, was the op's `import copy` (no deepcopy)
    folder = helper_op(tmp_path, "import copy\n            return copy.deepcopy(inputs['x'])")
    write_op(folder, GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']").replace(
        '"mycopy"', '"othercopy"'), name="copy.py")
    done = invoke("mycopy", "--kernels-dir", folder, "--size", "50", *QUICK)
    assert done.exit_code == 0, done.output


@pytest.mark.parametrize("statement, call", [
    ("from . import _ref", "_ref.f"),
    ("from ._helpers.body import f", "f"),
    ("from ._helpers import body", "body.f"),
])
def test_an_op_file_imports_its_helpers_relatively(use_fake, tmp_path, fresh_ops, statement,
                                                   call):
    # "attempted relative import with no known parent package", or the top package's
    folder = helper_op(tmp_path, f"{statement}\n            return {call}(inputs['x'])",
                       **{"_ref.py": "from _helpers.body import f\n",
                          "_helpers/__init__.py": "",
                          "_helpers/body.py": "def f(x):\n    return x.copy()\n"})
    done = invoke("mycopy", "--kernels-dir", folder, "--size", "50", *QUICK)
    assert done.exit_code == 0, done.output
    from cudabench.ops.fingerprint import local_imports  # and it keys the caches

    assert (folder / "_helpers" / "body.py").resolve() in local_imports(folder / "myop.py")


def test_a_relative_import_beyond_the_op_folder_is_one_line(use_fake, tmp_path, fresh_ops):
    folder = helper_op(tmp_path, "from .. import _ref\n            return _ref.f(inputs['x'])",
                       **{"_ref.py": "def f(x):\n    return x\n"})
    done = invoke("mycopy", "--kernels-dir", folder, "--size", "50", *QUICK)
    assert done.exit_code != 0 and "Traceback" not in done.output, done.output
    assert "attempted relative import beyond the op's folder" in done.output, done.output
    # nor above a helper's folder, into cudabench's own package
    (folder / "_ref.py").write_text("from .. import registry\n\n\ndef f(x):\n    return x\n")
    op_file = folder / "myop.py"
    op_file.write_text(op_file.read_text().replace("from .. import _ref", "import _ref"))
    done = invoke("mycopy", "--kernels-dir", folder, "--size", "50", *QUICK)
    assert "attempted relative import beyond the op's folder" in done.output, done.output


def test_threads_loading_one_op_file_each_get_its_ops(tmp_path, fresh_ops):
    # the second thread found the first's module in sys.modules, not yet run: "declares no op"
    import concurrent.futures

    from cudabench.ops.registry import load_ops

    folder = user_folder(tmp_path, GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']"))
    op_file = folder / "myop.py"
    op_file.write_text("import time\ntime.sleep(0.3)\n" + op_file.read_text())
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        loaded = list(pool.map(lambda _: load_ops([folder])["mycopy"], range(4)))
    assert all(op is loaded[0] for op in loaded)


@pytest.mark.parametrize("function", ["_ref.f", "twice"])
def test_a_process_the_reference_spawns_finds_the_op_s_functions(use_fake, tmp_path,
                                                                 fresh_ops, function):
    # pickled by name (a helper's, the op file's own), the spawned process could import
    # neither: "No module named 'cudabench_user_ops'"; nor could the worker start one
    # ("daemonic processes are not allowed to have children")
    folder = helper_op(
        tmp_path, "import multiprocessing\n            import _ref\n"
        "            with multiprocessing.get_context('spawn').Pool(1) as pool:\n"
        f"                return pool.apply_async({function}, (inputs['x'],)).get(60) / 2",
        **{"_ref.py": "def f(x):\n    return 2 * x\n"})
    op_file = folder / "myop.py"
    op_file.write_text(op_file.read_text().replace(
        "OP = Copy()", "def twice(x):\n    return 2 * x\n\n\nOP = Copy()"))
    done = invoke("mycopy", "--kernels-dir", folder, "--size", "50", *QUICK)
    assert done.exit_code == 0, done.output


def test_a_forkserver_started_before_an_op_file_loaded_finds_its_functions(tmp_path):
    # forkserver (Python 3.14's default on Linux) forks each process from a server whose
    # environment was taken when it started: an op file loaded after that (ab's second
    # copy, a kept worker's next command) was unknown there, and its Pool hung
    import os
    import subprocess
    import sys

    folders = []
    for name in ("old", "new"):
        folder = helper_op(tmp_path / name, "return inputs['x']",
                           **{"_ref.py": "def f(x):\n    return 3 * x\n"})
        op_file = folder / "myop.py"
        op_file.write_text(op_file.read_text().replace(
            "OP = Copy()", "def twice(x):\n    return 2 * x\n\n\nOP = Copy()"))
        folders.append(str(folder))
    script = tmp_path / "pools.py"
    script.write_text(textwrap.dedent("""
        import multiprocessing, sys
        from pathlib import Path
        from cudabench.ops.registry import load_ops

        if __name__ == "__main__":
            context = multiprocessing.get_context("forkserver")
            with context.Pool(1) as pool:  # the server starts before any op file loads
                pool.apply(abs, (-1,))
            for folder in sys.argv[1:]:
                module = sys.modules[type(load_ops([Path(folder)])["mycopy"]).__module__]
                with context.Pool(1) as pool:
                    print(pool.apply_async(module.twice, (1,)).get(30),
                          pool.apply_async(module._ref_f, (1,)).get(30), flush=True)
    """))
    for text in (folders[0], folders[1]):
        op_file = Path(text) / "myop.py"
        op_file.write_text(op_file.read_text().replace(
            "OP = Copy()", "import _ref\n_ref_f = _ref.f\n\n\nOP = Copy()"))
    env = {**os.environ, "CUDABENCH_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("CUDABENCH_OP_FILES", None)
    done = subprocess.run([sys.executable, str(script), *folders], capture_output=True,
                          text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["2", "3", "2", "3"], done.stdout


def test_a_reference_that_never_ends_is_a_timeout_naming_it_not_the_compile(
        use_fake, tmp_path, fresh_ops):
    # it was bounded by --compile-timeout, and its row said "its compile did not finish"
    import time

    folder = helper_op(tmp_path, "import time\n            time.sleep(3600)")
    started = time.monotonic()
    done = invoke("mycopy", "--kernels-dir", folder, "--size", "50", *QUICK,
                  "--compile-timeout", "1.5")
    assert time.monotonic() - started < 30
    assert done.exit_code == 3 and "TIMEOUT" in done.output, done.output
    assert "its inputs and CPU reference (the op's inputs() and reference()) did not " \
           "finish within 1.5 s" in " ".join(done.stderr.split()), done.stderr
    assert "its compile did not finish" not in done.stderr


def test_a_helper_in_bytecode_alone_is_found(use_fake, tmp_path, fresh_ops):
    import py_compile

    folder = helper_op(tmp_path, "import _old\n            return _old.f(inputs['x'])",
                       **{"_old.py": "def f(x):\n    return x\n"})
    py_compile.compile(str(folder / "_old.py"), cfile=str(folder / "_old.pyc"))
    (folder / "_old.py").unlink()
    done = invoke("mycopy", "--kernels-dir", folder, "--size", "50", *QUICK)
    assert done.exit_code == 0, done.output


def test_a_helper_package_s_relative_imports_key_the_caches(tmp_path):
    # `from .body import shifted` in _helpers/__init__.py: body.py was not hashed, and an
    # edit of it was answered from the reference cache
    from cudabench.ops.fingerprint import local_imports

    folder = helper_op(tmp_path, "import _helpers\n            return _helpers.shifted("
                       "inputs['x'])", **{"_helpers/__init__.py": "from .body import shifted\n",
                                          "_helpers/body.py": "def shifted(x):\n    return x\n",
                                          "_helpers/_far.py": "import _ref\n",
                                          "_ref.py": "X = 1\n"})
    (folder / "_helpers" / "body.py").write_text("from . import _far\n\n\ndef shifted(x):\n"
                                                 "    return x\n")
    found = local_imports(folder / "myop.py")
    assert {p.relative_to(folder).as_posix() for p in found} == {
        "_helpers/__init__.py", "_helpers/body.py", "_helpers/_far.py", "_ref.py"}


@pytest.mark.parametrize("returned", ['{"y": shape[0]}', '[shape]', '{"y": (shape[0], -1)}'])
def test_outputs_that_are_no_shapes_are_one_line_naming_the_file(use_fake, tmp_path,
                                                                  returned):
    # `{"y": shape[0]}` was an internal error, exit 4, in the memory check
    folder = user_folder(tmp_path, GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']")
                         .replace('return {"y": shape}', f"return {returned}"))
    for extra in ([], ["--dry-run"]):
        done = invoke("mycopy", "--kernels-dir", folder, "--size", "50", *QUICK, *extra)
        assert done.exit_code == 2, done.output
        assert f"{folder / 'myop.py'}: mycopy.outputs returned" in done.stderr
        assert "expected a" in done.stderr and len(done.stderr.splitlines()) == 1


def test_a_verify_that_returns_a_bool_names_the_file(use_fake, tmp_path):
    # "its worker process failed: AttributeError: 'bool' object has no attribute 'passed'"
    folder = user_folder(tmp_path, GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']")
                         .replace("return exact_check(result, expected)",
                                  "return bool((result == expected).all())"))
    done = invoke("mycopy", "--kernels-dir", folder, "--size", "50", *QUICK)
    text = " ".join(done.output.split())
    assert done.exit_code == 2, text
    assert f"{folder / 'myop.py'}: mycopy.verify returned bool True: expected a " \
        "Verification" in text and "worker" not in text, text


def test_a_mistyped_folder_of_an_op_of_one_s_own_is_named(use_fake, tmp_path):
    # "No such command 'layernorm'. An op of your own needs its folder: ..." named no
    # folder, and the API said "unknown op 'layernorm'"
    from cudabench.errors import UsageError
    from cudabench.ops import get_op

    folder = user_folder(tmp_path, GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']"))
    for given, says in ((tmp_path / "mien", "no such directory"),
                        (folder / "myop.py", "is a file, not a folder")):
        done = invoke("mycopy", "--kernels-dir", given)
        assert done.exit_code == 2 and f"--kernels-dir {given}: {says}" in done.stderr
        with pytest.raises(UsageError, match=f"--kernels-dir {given}: {says}"):
            get_op("mycopy", [given])


def test_inputs_that_are_no_dict_of_arrays_name_the_file(use_fake, tmp_path):
    # a list was blamed on the reference: "reference raised TypeError: list indices..."
    folder = user_folder(tmp_path, GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']")
                         .replace('return {"x": rng.uniform(-1, 1, shape)',
                                  'return [rng.uniform(-1, 1, shape)'))
    (folder / "myop.py").write_text((folder / "myop.py").read_text().replace(
        ".astype(types.input.numpy)}", ".astype(types.input.numpy)]"))
    done = invoke("mycopy", "--kernels-dir", folder, "--size", "50", *QUICK)
    text = " ".join(done.output.split())
    assert done.exit_code == 2 and f"{folder / 'myop.py'}: mycopy.inputs returned list" \
        in text and "expected a dict of buffer name -> NumPy array" in text, text


@pytest.mark.parametrize("field, value, says", [
    ("summary", "None", "`summary` must be a line of text"),  # exit 4: None + str
    # `list` printed it over two lines
    ("summary", r'"y = x\\nof N"', "`summary` must be a line of text, e.g. \"y = softmax(x) "
     "by rows\"; got 'y = x\\nof N'"),
    ("summary", r'"y = x\\n"', "`summary` must be a line of text"),  # types on the next line
    ("signature", "5", "`result_buffer` is a buffer's name and `signature` the kernels'"),
    ("dims", '("N", "N")', "`dims` ('N', 'N') names an extent twice"),
    # launch arithmetic read the GPU's SM count (or the element size) for the extent
    ("dims", '("SM_COUNT",)', "`dims` name SM_COUNT would be hidden by the built-in name "
     "SM_COUNT"),
    ("dims", '("ELEM_SIZE",)', "`dims` name ELEM_SIZE would be hidden by the built-in"),
    # exit 4, "internal error": AttributeError (.values, .items) or TypeError
    ("size_forms", "[1]", "`size_forms` must map a number of extents to an example"),
    ("size_forms", "{1}", "`size_forms` must map a number of extents to an example"),
    ("size_forms", "{1: 1000}", "`size_forms` must map a number of extents to an example"),
    # a dry run showed a shape of two extents for one dim, the run an ERROR in the op's code
    ("size_forms", '{1: "1000", 2: "40x10"}', "`size_forms` {1: '1000', 2: '40x10'} names "
     "2 extents, but `dims` has 1: a form's number of extents is 1"),
    ("dims", '("N",)\n    types = None', "`types` maps an input type to (input, accumulator"),
    ("dims", '("N",)\n    types = {"float32"}', "`types` maps an input type to (input, acc"),
    ("dims", '("N",)\n    types = {"float32": (["float32"], "float32", "float32")}',
     "`types` maps an input type to (input, accumulator, output) types among"),
    # accepted: --dtype float16 ran on float32 inputs, and the kernels were blamed
    ("dims", '("N",)\n    types = {"float16": ("float32", "float32", "float16")}',
     "`types` 'float16': ('float32', 'float32', 'float16') gives another input type: the "
     "key is the input type, 'float32'"),
])
def test_an_op_field_of_the_wrong_kind_names_the_file(use_fake, tmp_path, field, value,
                                                       says):
    import re

    text = textwrap.dedent(GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']"))
    text = re.sub(rf"^    {field} = .*$", f"    {field} = {value}", text, count=1,
                  flags=re.MULTILINE)
    folder = user_folder(tmp_path, text)
    done = invoke("list", "--kernels-dir", folder)
    assert done.exit_code == 2 and says in " ".join(done.stderr.split()), done.output


@pytest.mark.parametrize("old, new, says", [
    # an int64 array in a float32 buffer: "its worker process failed: ValueError: could
    # not broadcast"; on a GPU, a copy past the buffer's end
    (".astype(types.input.numpy)}", ".astype(np.int64)}",
     "mycopy.inputs returned 'x' as int64 (8 bytes an element), but input buffers hold "
     "float32 (4 bytes): make it with .astype(types.input.numpy)"),
    # "its worker process failed: KeyError: 'q'"
    ('result_buffer = "y"', 'result_buffer = "q"',
     "mycopy.result_buffer 'q' is no buffer: its inputs and outputs are 'x', 'y'"),
])
def test_inputs_of_another_type_or_no_result_buffer_name_the_file(use_fake, tmp_path, old,
                                                                   new, says):
    folder = user_folder(tmp_path, GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']")
                         .replace(old, new))
    done = invoke("mycopy", "--kernels-dir", folder, "--size", "50", *QUICK)
    text = " ".join(done.output.split())
    assert done.exit_code == 2 and f"{folder / 'myop.py'}: {says}" in text, text


def test_an_op_of_one_s_own_help_lists_variants_with_its_folder(use_fake):
    # "Variants: `cudabench list`", which lists none of them without --kernels-dir
    done = invoke("softmax", "--kernels-dir", EXAMPLE, "--help")
    assert "cudabench list --kernels-dir FOLDER" in " ".join(done.stdout.split())
    assert "Variants: `cudabench list`." in " ".join(invoke("dot", "--help").stdout.split())


def test_op_code_sees_builtins_added_after_it_loaded(tmp_path, fresh_ops, monkeypatch):
    # each op folder's builtins were a copy taken when it loaded: gettext.install()'s `_`,
    # or a test's patched builtin, was a NameError in op code
    import builtins

    import numpy as np

    from cudabench.ops.base import user_code

    folder = helper_op(tmp_path, "return late_builtin(inputs['x'])")
    op = registry.load_ops([folder])["mycopy"]  # loaded first
    monkeypatch.setattr(builtins, "late_builtin", lambda x: x, raising=False)
    with user_code(op, "reference"):
        assert op.reference({"x": np.ones(3)}).tolist() == [1.0, 1.0, 1.0]
    monkeypatch.undo()  # and gone again once the patch is undone
    with pytest.raises(OpFileError, match="name 'late_builtin' is not defined"), \
            user_code(op, "reference"):
        op.reference({"x": np.ones(3)})


def test_a_bytecode_only_helper_imports_the_other_helpers(use_fake, tmp_path, fresh_ops):
    # only .py helpers got the folder's import: `_old.pyc`'s `import _other` failed, and was
    # told to use an import statement, which it did
    import py_compile

    folder = helper_op(tmp_path, "import _old\n            return _old.f(inputs['x'])",
                       **{"_old.py": "import _other\n\n\ndef f(x):\n    return _other.g(x)\n",
                          "_other.py": "def g(x):\n    return x\n"})
    py_compile.compile(str(folder / "_old.py"), cfile=str(folder / "_old.pyc"))
    (folder / "_old.py").unlink()
    done = invoke("mycopy", "--kernels-dir", folder, "--size", "50", *QUICK)
    assert done.exit_code == 0, done.output


def test_a_relative_import_above_the_file_system_s_root_keys_nothing(tmp_path):
    # `from ....... import x` deeper than the path: IndexError in the cache key
    from cudabench.ops.fingerprint import local_imports

    (tmp_path / "op.py").write_text("from " + "." * 80 + " import x\nfrom . import _ref\n")
    (tmp_path / "_ref.py").write_text("")
    assert local_imports(tmp_path / "op.py") == {(tmp_path / "_ref.py").resolve()}


def test_an_op_file_with_a_dot_in_its_name_is_a_module_of_one_part(tmp_path, fresh_ops):
    # `my.op.py` became cudabench.ops.user.my.op_<hash>: a spawned process looked for a
    # package `my` and never found the op's functions
    from cudabench.ops.folder_imports import USER_OPS_PACKAGE
    from cudabench.ops.registry import load_ops

    folder = user_folder(tmp_path, GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']"))
    (folder / "myop.py").rename(folder / "my.op.py")
    module = type(load_ops([folder])["mycopy"]).__module__
    assert module.startswith(f"{USER_OPS_PACKAGE}.my_op_") and module.count(".") == 3, module


@pytest.mark.parametrize(("edit", "says"), [
    # a string was a row per character (softmax/_, softmax/d...), an unknown name a lost
    # worker (KeyError): refused when the op loads, `list` and --dry-run included
    ('references = "memcpy_dtod"', "`references` must be a tuple of reference rows among "
                                   "memcpy_dtod"),
    ('references = ("memcpy",)', "`references` must be a tuple"),
    ('vendor_library = "cuBLAS"', "`vendor_library` 'cuBLAS' needs a vendor(types) method"),
])
def test_an_op_s_reference_rows_and_vendor_are_checked_when_it_loads(use_fake, tmp_path,
                                                                      fresh_ops, edit, says):
    text = GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']").replace(
        'result_buffer = "y"', f'result_buffer = "y"\n        {edit}')
    folder = user_folder(tmp_path, text)
    for args in (["list"], ["mycopy", "--size", "50", *QUICK]):
        done = invoke(*args, "--kernels-dir", folder)
        assert done.exit_code == 2 and says in done.stderr, done.output


def test_a_vendor_call_of_the_wrong_kind_is_an_error_row_naming_the_file(use_fake, tmp_path,
                                                                         fresh_ops):
    # None (or a VendorCall of an unknown unit) lost the worker: "'NoneType' object has no
    # attribute 'library'", the op file unnamed
    text = GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']").replace(
        'result_buffer = "y"', 'result_buffer = "y"\n        vendor_library = "cuBLAS"\n\n'
        '        def vendor(self, types):\n            return None\n')
    folder = user_folder(tmp_path, text)
    done = invoke("mycopy", "--kernels-dir", folder, "--size", "50", *QUICK)
    assert done.exit_code == 2, done.output
    said = " ".join(done.stderr.split())
    assert f"{folder / 'myop.py'}: mycopy.vendor returned None for float32: expected a " \
           "VendorCall" in said, said
    assert "worker process failed" not in said and "PASS" in done.stdout


def test_an_output_named_as_an_input_is_an_error_naming_the_file(use_fake, tmp_path):
    # it was FAIL, exit 3, blaming each kernel: "changed 50 element(s) of its input x"
    folder, done = run_edited(tmp_path, 'return {"y": shape}', 'return {"y": shape, "x": shape}')
    assert done.exit_code == 2, done.output
    assert f"{folder / 'myop.py'}: mycopy.outputs names 'x', which inputs gives too" in \
        " ".join(done.stderr.split()), done.stderr


@pytest.mark.parametrize("shortcuts", ['{"": "BLOCK"}', '{"Tile Size": "TILE"}',
                                       '{"tile": 16}', '["tile"]'])
def test_an_op_s_shortcuts_must_name_options(use_fake, tmp_path, fresh_ops, shortcuts):
    # {"": "BLOCK"} made an option named `--`
    text = GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']").replace(
        'result_buffer = "y"', f'result_buffer = "y"\n        shortcuts = {shortcuts}')
    done = invoke("list", "--kernels-dir", user_folder(tmp_path, text))
    assert done.exit_code == 2 and "`shortcuts` maps an option's name" in done.stderr, \
        done.output


@pytest.mark.parametrize("method, old, new", [
    ("bytes_moved", "return 2 * shape[0]",
     "import sys; sys.exit(0)\n            return 2 * shape[0]"),
    ("reference", "return inputs['x']", "import sys; sys.exit('no reference')"),
])
def test_an_op_method_calling_sys_exit_is_an_error_naming_the_file(use_fake, tmp_path,
                                                                  fresh_ops, method, old, new):
    # bytes_moved's sys.exit(0) ended the whole run, measuring nothing, with exit 0 (a
    # suite's other benchmarks too); the reference's killed its worker ("died, exit code 3")
    folder, done = run_edited(tmp_path, old, new)
    said = " ".join(done.output.split())
    assert done.exit_code == 2, done.output
    assert f"{folder / 'myop.py'}: mycopy.{method} calls sys.exit(" in said, said


def test_an_op_whose_every_variant_runs_on_request_is_refused(use_fake, tmp_path, fresh_ops):
    # an empty table, 0 benchmarks in --json, exit 0: a gate passed on nothing measured
    folder = user_folder(tmp_path, GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']"))
    kernel = folder / "mycopy" / "plain.cu"
    kernel.write_text(kernel.read_text().replace("// launch", "// run: on request\n// launch"))
    done = invoke("mycopy", "--kernels-dir", folder, "--size", "50", *QUICK)
    assert done.exit_code == 2, done.output
    assert "every mycopy variant runs on request (plain): --variant NAME or --variant all " \
           "runs them" in " ".join(done.output.split()), done.output
    asked = invoke("mycopy", "--kernels-dir", folder, "--size", "50", "--variant", "plain",
                   *QUICK)
    assert asked.exit_code == 0 and "PASS" in asked.stdout, asked.output


def test_an_output_left_out_of_args_is_an_error_naming_the_file(use_fake, tmp_path, fresh_ops):
    # "its worker process failed: ValueError: not enough values to unpack" (from emulate)
    # on the fake; on a GPU, a kernel launched one argument short
    folder, done = run_edited(tmp_path, 'return ["x", "y", *shape]', 'return ["x", *shape]')
    assert done.exit_code == 2, done.output
    assert f"{folder / 'myop.py'}: mycopy.args leaves out the output 'y': the kernel must be " \
           "passed every buffer it writes" in " ".join(done.output.split()), done.output


def test_a_mistake_in_emulate_names_the_op_file(use_fake, tmp_path, fresh_ops):
    folder, done = run_edited(tmp_path, "x, y, n = args", "x, y, n = args\n            {}['oops']")
    said = " ".join(done.output.split())
    assert done.exit_code == 2, done.output
    assert f"{folder / 'myop.py'}: mycopy.emulate raised KeyError: 'oops'" in said, said
    assert "worker process failed" not in said


def test_a_signal_ending_the_worker_in_op_code_is_not_blamed_on_the_op():
    # the worker's SIGTERM handler raises SystemExit(143): "reference calls sys.exit(143)"
    from cudabench.errors import WorkerStopped
    from cudabench.ops.base import user_code
    from cudabench.ops import get_op

    with pytest.raises(WorkerStopped), user_code(get_op("dot"), "reference"):
        raise WorkerStopped(143)


def test_an_op_whose_loaded_module_changed_on_disk_is_refused(tmp_path, monkeypatch):
    # a kept worker kept an entry-point op's (or a base class's) old code after an edit:
    # its verdicts were the old code's, and the reference cache kept them under the new
    # bytes' key, wrong for every later run
    import importlib
    import sys

    from cudabench.errors import OpFileError
    from cudabench.ops.fingerprint import op_fingerprint

    source = (Path(__file__).parents[1] / "examples" / "softmax" / "softmax.py").read_text(
        encoding="utf-8").replace('name = "softmax"', 'name = "softmax_kept"')
    (tmp_path / "kept_softmax_op.py").write_text(source, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("kept_softmax_op")
    try:
        op_class = next(value for value in vars(module).values()
                        if isinstance(value, type) and getattr(value, "name", "")
                        == "softmax_kept")
        op = op_class()
        op_fingerprint(op)
        op_fingerprint(op)  # unchanged: the same
        (tmp_path / "kept_softmax_op.py").write_text(source + "\n# edited\n", encoding="utf-8")
        with pytest.raises(OpFileError, match="changed since this process loaded it"):
            op_fingerprint(op)
    finally:
        sys.modules.pop("kept_softmax_op", None)


@pytest.mark.parametrize("args", [["--help"], []])
@pytest.mark.parametrize("module, says", [
    ("no_such_plugged_ops", "no_such_plugged_ops: cannot import the op module"),
    ("plugged_ops_no_verify", "plugged_ops_no_verify: op 'mycopy': define verify")])
def test_the_help_shows_beside_a_broken_installed_op(monkeypatch, tmp_path, args, module,
                                                      says):
    # a traceback and exit 1: the help listed the ops outside the error boundary
    package = tmp_path / "site"
    write_op(package, GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']")
             .replace("def verify(", "def not_verify("), name="plugged_ops_no_verify.py")
    monkeypatch.syspath_prepend(str(package))

    class EntryPoint:
        value = module

    monkeypatch.setattr(registry.importlib.metadata, "entry_points",
                        lambda group: [EntryPoint()] if group == "cudabench.ops" else [])
    registry._entry_point_modules.cache_clear()
    try:
        done = invoke(*args)
    finally:
        registry._entry_point_modules.cache_clear()
    text = " ".join(done.output.split())
    assert done.exit_code == 0 and done.exception is None, text
    assert f"Op commands not listed: {says}" in text and "compare" in text, text


def test_two_ops_of_one_name_in_one_file_are_refused(use_fake, tmp_path):
    # `list` described the second (last wins), the run measured the first
    text = GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']").replace(
        "OP = Copy()",
        "class Other(Copy):\n        summary = 'y = -x'\n\n    OPS = [Copy(), Other()]")
    folder = user_folder(tmp_path, text)
    for args in (["list"], ["mycopy", "--size", "50", *QUICK]):
        done = invoke(*args, "--kernels-dir", folder)
        assert done.exit_code == 2, done.output
        assert f"{folder / 'myop.py'}: declares two ops named 'mycopy' (Copy and Other)" \
            in " ".join(done.stderr.split())


def test_hidden_files_and_folders_are_neither_op_files_nor_variants(use_fake, tmp_path):
    # a Jupyter checkpoint or .git copy was "also declared by", an Emacs lock (a dangling
    # link) a ModuleNotFoundError naming its target, `.plain.cu` a variant `.plain`
    from cudabench.catalog.discovery import discover, kernel_files

    folder = user_folder(tmp_path, GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']"))
    for hidden in (".ipynb_checkpoints/myop-checkpoint.py", ".git/x.py", ".myop.py",
                   "mycopy/.plain.cu", "mycopy/.ipynb_checkpoints/plain-checkpoint.cu"):
        original = folder / ("mycopy/plain.cu" if hidden.endswith(".cu") else "myop.py")
        (folder / hidden).parent.mkdir(parents=True, exist_ok=True)
        (folder / hidden).write_text(original.read_text())
    for lock in (".#myop.py", "mycopy/.#plain.cu"):
        (folder / lock).symlink_to("user@host.1234:1700000000")
    assert registry.op_files([folder]) == [folder.resolve() / "myop.py"]
    assert list(discover([folder])["mycopy"]) == ["plain"]
    assert kernel_files(folder / "mycopy") == [folder / "mycopy" / "plain.cu"]
    # a link to an op file, beside it or in another folder given, is that one file
    (folder / "myop_alias.py").symlink_to("myop.py")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "linked.py").symlink_to(folder / "myop.py")
    assert registry.op_files([folder, tmp_path / "other"]) == [folder.resolve() / "myop.py"]


def test_an_installed_op_finds_its_kernels_in_its_package(use_fake, monkeypatch, tmp_path):
    # "no mycopy kernels found"; and `--kernels-dir` the package said the op file declared
    # mycopy as well as the entry point: the same file
    package = tmp_path / "site" / "plugged_pkg"
    write_op(package, "", name="__init__.py")
    write_op(package, GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']"),
             name="mycopy_op.py")
    (package / "mycopy").mkdir()
    (package / "mycopy" / "plain.cu").write_text(KERNEL)
    monkeypatch.syspath_prepend(str(package.parent))

    class EntryPoint:
        value = "plugged_pkg.mycopy_op"

    monkeypatch.setattr(registry.importlib.metadata, "entry_points",
                        lambda group: [EntryPoint()] if group == "cudabench.ops" else [])
    registry._entry_point_modules.cache_clear()
    try:
        for args in ([], ["--kernels-dir", package], ["--kernels-dir", package / "mycopy"]):
            done = invoke("mycopy", "--size", "50", "--json", tmp_path / "r.json", *QUICK,
                          *args)
            assert done.exit_code == 0, done.output
            assert [b.variant for b in load_results(tmp_path / "r.json").benchmarks] == \
                ["plain"]
    finally:
        registry._entry_point_modules.cache_clear()


def test_an_edited_bytecode_only_helper_misses_the_reference_cache(use_fake, tmp_path,
                                                                   fresh_ops):
    # a .pyc beside the op file was not hashed: after it was rebuilt to return other
    # values, the run still PASSed from the cached reference
    import py_compile

    folder = helper_op(tmp_path, "import _old\n            return _old.f(inputs['x'])")

    def build(body: str) -> None:
        (folder / "_old.py").write_text(f"import time\n\n\ndef f(x):\n    time.sleep(0.1)\n"
                                        f"    return {body}\n")
        py_compile.compile(str(folder / "_old.py"), cfile=str(folder / "_old.pyc"))
        (folder / "_old.py").unlink()

    build("x")
    args = ("mycopy", "--kernels-dir", folder, "--size", "50", *QUICK)
    assert invoke(*args).exit_code == 0
    build("x + 1")
    registry.forget_file_ops()
    done = invoke(*args)
    assert done.exit_code == 3 and "FAIL" in done.stdout, done.output


def test_a_compiled_helper_s_bytes_key_the_caches(tmp_path, fresh_ops, monkeypatch):
    # an extension module beside the op file (`import _fast`) is the helper's code: its
    # bytes, not only .py files, decide the op's fingerprint
    import importlib.machinery

    from cudabench.ops import fingerprint
    from cudabench.ops.fingerprint import op_fingerprint

    folder = helper_op(tmp_path, "import _fast\n            return _fast.f(inputs['x'])")
    extension = folder / f"_fast{importlib.machinery.EXTENSION_SUFFIXES[0]}"
    extension.write_bytes(b"\x7fELF one build")
    (op,) = registry._ops_at(str(folder / "myop.py"))
    before = op_fingerprint(op)
    extension.write_bytes(b"\x7fELF another build")
    # this process would still run the first build (Python loads one once): refused
    with pytest.raises(OpFileError, match="_fast.* rebuilt since this process first saw it"):
        op_fingerprint(op)
    monkeypatch.setattr(fingerprint, "_EXTENSIONS", {})  # a new process
    assert op_fingerprint(op) != before


def test_a_bytecode_only_helper_s_imports_key_the_caches(tmp_path):
    import py_compile

    from cudabench.ops.fingerprint import local_imports

    folder = helper_op(tmp_path, "import _old\n            return _old.f(inputs['x'])",
                       **{"_old.py": "def f(x):\n    from ._helpers import body\n"
                          "    return body.shifted(x)\n",
                          "_helpers/__init__.py": "", "_helpers/body.py": "X = 1\n"})
    py_compile.compile(str(folder / "_old.py"), cfile=str(folder / "_old.pyc"))
    (folder / "_old.py").unlink()
    found = {p.relative_to(folder).as_posix()
             for p in local_imports(folder / "myop.py", compiled=True)}
    assert found == {"_old.pyc", "_helpers/__init__.py", "_helpers/body.py"}
    # the sources alone (what a Ray node is sent): no bytecode read as text
    assert {p.suffix for p in local_imports(folder / "myop.py")} == {".py"}


def installed_package(tmp_path: Path, monkeypatch, where: str = "site-packages") -> Path:
    """Install (as pip would, in a site-packages folder, or `pip install -e` of a src
    folder) a package whose entry point's op takes its reference from another module of
    the package; return that module's file."""
    package = tmp_path / where / "plugged_ref_pkg"
    write_op(package, "", name="__init__.py")
    write_op(package, GOOD_OP.replace(
        "REFERENCE_BODY", "return helpers.reference(inputs['x'])").replace(
        "import numpy as np", "import numpy as np\n    from plugged_ref_pkg import helpers"),
        name="mycopy_op.py")
    helper = write_op(package, "import time\n\n\ndef reference(x):\n    time.sleep(0.1)\n"
                      "    return x\n", name="helpers.py")
    (package / "mycopy").mkdir()
    (package / "mycopy" / "plain.cu").write_text(KERNEL)
    monkeypatch.syspath_prepend(str(package.parent))

    class EntryPoint:
        value = "plugged_ref_pkg.mycopy_op"

    monkeypatch.setattr(registry.importlib.metadata, "entry_points",
                        lambda group: [EntryPoint()] if group == "cudabench.ops" else [])
    return helper


def forget_package() -> None:
    """Forget the installed package, as a new process would not have it loaded."""
    import sys

    for name in [name for name in sys.modules if name.startswith("plugged_ref_pkg")]:
        del sys.modules[name]
    registry._entry_point_modules.cache_clear()
    registry._ops_at.cache_clear()


@pytest.mark.parametrize("where", ["site-packages", "src"])
def test_an_installed_op_s_helper_module_keys_the_reference_cache(use_fake, tmp_path,
                                                                  monkeypatch, where):
    # `from my_package import reference`: only cudabench's version was in the key, so the
    # edited helper (pip install -e keeps the version) PASSed from the cached reference
    helper = installed_package(tmp_path, monkeypatch, where)
    args = ("mycopy", "--size", "50", *QUICK)
    try:
        forget_package()
        assert invoke(*args).exit_code == 0
        helper.write_text(helper.read_text().replace("return x", "return x + 1"))
        forget_package()
        done = invoke(*args)
        assert done.exit_code == 3 and "FAIL" in done.stdout, done.output
    finally:
        forget_package()


def test_an_installed_op_s_helper_changed_since_it_loaded_is_refused(tmp_path, monkeypatch):
    # a kept worker holds the old helper: its verdicts would be kept under the new bytes' key
    from cudabench.ops.fingerprint import op_fingerprint

    helper = installed_package(tmp_path, monkeypatch)
    try:
        forget_package()
        op = registry.builtin_ops()["mycopy"]
        op_fingerprint(op)
        helper.write_text(helper.read_text() + "\n# edited\n")
        with pytest.raises(OpFileError, match="helpers.py: changed since this process loaded"):
            op_fingerprint(op)
    finally:
        forget_package()


@pytest.mark.parametrize(("fields", "args", "says"), [
    # `transpose --inplace` ran the user's op (the flags' dict kept the last)
    ('command = "transpose"\n        command_flag = "inplace"',
     ["transpose", "--inplace", "--size", "64"],
     "op 'mycopy' is run by `transpose --inplace`, as op 'transpose_inplace' of "
     "cudabench.ops.transpose is already; give it another `command_flag`"),
    # the op was hidden behind matmul, its --block shown in matmul --help
    ('command = "matmul"\n        shortcuts = {"block": "BLOCK"}', ["matmul", "--help"],
     "op 'mycopy' is run by `matmul`, as op 'matmul' of cudabench.ops.matmul is already; "
     "give it its own `command`, or a `command_flag` to share it"),
    ('command = "matmul"', ["mycopy"], "op 'mycopy' is run by `matmul`"),
    ('command = "trans pose"', ["mycopy"], "op 'mycopy': `command` is the command that runs"),
    ('command = "transpose"\n        command_flag = "in-place"', ["transpose", "--help"],
     "op 'mycopy': `command_flag` is the flag that selects the op within its `command`"),
])
def test_an_op_may_not_take_another_s_command_or_flag(use_fake, tmp_path, fresh_ops, fields,
                                                      args, says):
    folder = user_folder(tmp_path, GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']")
                         .replace('        result_buffer = "y"',
                                  f'        result_buffer = "y"\n        {fields}'))
    for command in (args, ["list"]):
        done = invoke(*command, "--kernels-dir", folder)
        assert done.exit_code == 2, done.output
        assert f"cudabench: error: {folder / 'myop.py'}: {says}" in " ".join(
            done.stderr.split()), done.output


@pytest.mark.parametrize("change", [
    # OPS was in cudabench.ops.__all__: the built-in ops' dict became the file's OPS,
    # "OPS must be a list of ops ... not a dict" for every command
    lambda t: t.replace("from cudabench.ops import Op", "from cudabench.ops import *"),
    # transpose's OPS became the file's (its OP left out), and `list` showed transpose as
    # declared by the op file: the built-ins' origin was overwritten
    lambda t: t.replace("from cudabench.ops import Op",
                        "from cudabench.ops import Op\n    from cudabench.ops.transpose import *"),
    lambda t: t.replace("OP = Copy()", "from cudabench.ops import transpose\n\n"
                        "    OPS = [*transpose.OPS, Copy()]"),
])
def test_an_op_file_declares_only_its_own_ops(use_fake, tmp_path, fresh_ops, change):
    folder = user_folder(tmp_path, change(GOOD_OP.replace("REFERENCE_BODY",
                                                          "return inputs['x']")))
    try:
        assert [op.name for op in registry._ops_at(str(folder / "myop.py"))] == ["mycopy"]
        listed = invoke("list", "--kernels-dir", folder)
        assert listed.exit_code == 0 and "mycopy" in listed.stdout, listed.output
        ops = registry.load_ops([folder])
        assert ops["transpose"].origin == ops["transpose_inplace"].origin == \
            "cudabench.ops.transpose"
        done = invoke("mycopy", "--kernels-dir", folder, "--size", "50", *QUICK)
        assert done.exit_code == 0, done.output
    finally:
        for op in registry._ops_at("cudabench.ops.transpose"):
            op.origin = "cudabench.ops.transpose"  # as it was, for the tests after


@pytest.mark.parametrize("args, code", [
    (["matmul", "--size", "64", *QUICK], 2), (["history", "--help"], 0), (["list"], 2),
    (["--help"], 0), (["run", "--dry-run"], 2)])
def test_an_installed_op_named_like_a_command_is_refused_wherever_ops_load(
        use_fake, monkeypatch, tmp_path, args, code):
    # only `list` refused it: every op command and the help went on, the op never listed
    package = tmp_path / "site"
    write_op(package, GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']").replace(
        'name = "mycopy"', 'name = "history"'), name="plugged_history_op.py")
    monkeypatch.syspath_prepend(str(package))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cudabench.toml").write_text('[[benchmark]]\nop = "dot"\nsize = "64"\n')

    class EntryPoint:
        value = "plugged_history_op"

    monkeypatch.setattr(registry.importlib.metadata, "entry_points",
                        lambda group: [EntryPoint()] if group == "cudabench.ops" else [])
    registry._entry_point_modules.cache_clear()
    try:
        done = invoke(*args)
    finally:
        registry._entry_point_modules.cache_clear()
    says = ("plugged_history_op: op 'history' takes the name of cudabench's `history` "
            "command, so its own could never run; give it another `name`")
    text = " ".join(done.output.split())
    assert done.exit_code == code, text
    if args == ["--help"]:
        assert f"Op commands not listed: {says}" in text
    elif code == 2:
        assert f"cudabench: error: {says}" in text and "Traceback" not in text


@pytest.mark.parametrize("returned, said", [
    ("None", "returned None"), ("result.copy()", "returned an array in none of its buffers")])
def test_emulate_must_return_the_result_buffer_s_view(use_fake, tmp_path, fresh_ops,
                                                      returned, said):
    # None: "its worker process failed: AttributeError: 'NoneType' object has no attribute
    # 'size'"
    folder, done = run_edited(tmp_path, "            return result\n",
                              f"            return {returned}\n")
    text = " ".join(done.output.split())
    assert done.exit_code == 2, text
    assert f"{folder / 'myop.py'}: mycopy.emulate {said}: it must return the view of the " \
        "result buffer it wrote" in text, text
    assert "worker process failed" not in text


@pytest.mark.parametrize("before, command", [
    (["--kernels-dir", "FOLDER"], "mycopy"), (["--kernels-dir=FOLDER"], "list"),
    (["--size", "64"], "matmul")])
def test_a_command_s_option_before_the_command_is_told_to_go_after_it(tmp_path, before,
                                                                     command):
    # "No such option '--kernels-dir'", and nothing more
    folder = user_folder(tmp_path, GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']"))
    done = invoke(*(word.replace("FOLDER", str(folder)) for word in before), command)
    option = before[0].split("=")[0]
    assert done.exit_code == 2, done.output
    assert f"cudabench: error: {option} is an option of `{command}`, not of cudabench: put " \
        f"it after the command (`cudabench {command} {option} ...`)" in done.stderr, done.stderr


def test_an_unknown_option_before_the_command_is_click_s_error(tmp_path):
    done = invoke("--tracebak", "list")
    assert done.exit_code == 2 and "Did you mean '--traceback'?" in done.stderr, done.output


def test_an_op_file_may_take_its_ops_from_its_own_helper_by_a_star_import(
        use_fake, tmp_path, fresh_ops):
    # "declares no op": any OPS a star import bound was ignored, its own helper's too
    folder = user_folder(tmp_path, GOOD_OP.replace("REFERENCE_BODY", "return inputs['x']")
                         .replace("OP = Copy()", "OPS = [Copy()]"))
    (folder / "_defs.py").write_text((folder / "myop.py").read_text())
    (folder / "myop.py").write_text("from _defs import *  # noqa: F403\n")
    assert [op.name for op in registry._ops_at(str(folder / "myop.py"))] == ["mycopy"]
    listed = invoke("list", "--kernels-dir", folder)
    assert listed.exit_code == 0 and "mycopy" in listed.stdout, listed.output
