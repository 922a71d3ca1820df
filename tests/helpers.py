"""Helpers shared by several test files: running the CLI, writing kernel files with a
header."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from cudabench.cli import cli

# A small valid matmul variant: one launch, one parameter.
MATMUL_HEADER = (
    "// cudabench: matmul",
    "// description: a test variant",
    "// param TILE: default 16; allowed 8, 16, 32",
    "// launch k: grid cdiv(N, TILE), cdiv(M, TILE); block TILE, TILE",
)

# A body that compiles for every op: `k` takes the matmul arguments.
MATMUL_BODY = (
    'extern "C" __global__ void k(const DTYPE* A, const DTYPE* B, DTYPE* C,\n'
    "                             int M, int K, int N) {}\n"
)


def write_kernel(folder: Path, name: str, header: tuple[str, ...] | list[str],
                 body: str = MATMUL_BODY) -> Path:
    """Write folder/name.cu with the given header lines, a blank line, then body."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.cu"
    path.write_text("\n".join(header) + "\n\n" + body, encoding="utf-8")
    return path


def header_with(*lines: str, op: str = "matmul") -> list[str]:
    """Return a valid header for op (one launch `k: grid 1; block 1`) plus extra lines."""
    return [f"// cudabench: {op}", *lines, "// launch k: grid 1; block 1"]


def invoke(*args: str):
    """Run the CLI with stdout and stderr kept apart (click 8.1 and 8.2+)."""
    try:
        runner = CliRunner(mix_stderr=False)
    except TypeError:  # click >= 8.2 always separates them
        runner = CliRunner()
    return runner.invoke(cli, [str(a) for a in args])


def unreadable(text: str, width: int, every_line: bool = False) -> list[str]:
    """Return what makes printed tables unreadable at width (issue 30): a cell cut ("…"),
    a line wider than width (only table lines unless every_line), a header on two lines,
    or a data row wrapped (a continuation line: its first cell, the name, is blank)."""
    problems = [f"cut: {line}" for line in text.splitlines() if "…" in line]
    header = 0
    for line in text.splitlines():
        table_line = line[:1] in "┏┃┡│└"
        if (every_line or table_line) and len(line) > width:
            problems.append(f"wider than {width}: {line}")
        header = header + 1 if line.startswith("┃") else 0
        if header > 1:
            problems.append(f"header on two lines: {line}")
        if line.startswith("│") and not line.split("│")[1].strip():
            problems.append(f"wrapped row: {line}")
    return problems


def write_spinning_matmul(folder: Path) -> Path:
    """Write folder/matmul/aaa_spins.cu, a matmul variant that never ends (it spins on a
    value its output never holds): a hang, for the watchdog's tests on a GPU."""
    (folder / "matmul").mkdir(parents=True, exist_ok=True)
    path = folder / "matmul" / "aaa_spins.cu"
    path.write_text(
        "// cudabench: matmul\n"
        "// launch aaa_spins: grid 1; block 32\n"
        'extern "C" __global__ void aaa_spins(const DTYPE* A, const DTYPE* B, OUT_TYPE* C,\n'
        "                                     int M, int K, int N) {\n"
        "    volatile int* flag = (volatile int*)C;  // never 12345: the kernel never ends\n"
        "    while (flag[0] != 12345) {}\n"
        "}\n")
    return path


class UnopenableSpec:
    """An engine spec a dry run may ask how many GPUs there are (it counts one) but never
    open: --dry-run touches no GPU."""

    def count_devices(self) -> int:
        return 1

    def open(self):
        raise AssertionError("--dry-run opened an engine")


def refuse_engines(monkeypatch) -> None:
    """Make every engine the commands would open an UnopenableSpec's."""
    monkeypatch.setattr("cudabench.cli.commands.engine_spec", lambda device: UnopenableSpec())


def full_disk_at_the_end(monkeypatch, always: bool = False) -> None:
    """Make a results file's complete (final) write fail as a full disk does (every write,
    streaming too, with always)."""
    from cudabench.errors import UsageError
    from cudabench.results.writer import ResultsWriter

    real = ResultsWriter.write

    def write(self, complete=True):
        if complete or always:
            raise UsageError(f"{self.flag} {self.path}: cannot write: [Errno 28] No space left")
        return real(self, complete)

    monkeypatch.setattr(ResultsWriter, "write", write)


def first_write_fails(monkeypatch) -> list[bool]:
    """Make a results file's first write fail as a disk full for a moment does; return the
    list of the writes tried (complete or not), which grows as the run writes."""
    from cudabench.errors import UsageError
    from cudabench.results.writer import ResultsWriter

    real, calls = ResultsWriter.write, []

    def first_fails(self, complete=True):
        calls.append(complete)
        if len(calls) == 1:
            raise UsageError(f"--json {self.path}: cannot write: No space left on device")
        real(self, complete)

    monkeypatch.setattr(ResultsWriter, "write", first_fails)
    return calls


def stopped_after(real_run_plans, rows: int, stop):
    """Return a run_plans that runs real_run_plans and calls stop() once `rows` rows were
    heard: a Ctrl-C (KeyboardInterrupt) or a pytest session's end at a known point."""

    def run_plans(plans, spec, on_result, **options):
        heard = []

        def listen(row):
            on_result(row)
            heard.append(row)
            if len(heard) == rows:
                stop()

        return real_run_plans(plans, spec, listen, **options)

    return run_plans


def second_ctrl_c_in(monkeypatch, module, name: str) -> None:
    """Make module.name press Ctrl-C again (SIGINT) as it starts: a stopped run's save."""
    import signal

    real = getattr(module, name)

    def pressed(*args, **kwargs):
        signal.raise_signal(signal.SIGINT)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, pressed)


def stop_in_the_final_write(monkeypatch, path: Path, renamed: bool) -> None:
    """Make a Ctrl-C come in the write of the complete results file at path: before its
    rename over path, or right after it (renamed)."""
    from cudabench.common import outfiles
    from cudabench.results.writer import ResultsWriter

    real, real_write = outfiles.os.replace, ResultsWriter.write
    final: list[bool] = []

    def write(self, complete=True):
        final.append(complete)
        return real_write(self, complete)

    def replace(source, destination):
        if not final[-1] or Path(destination) != outfiles.target(path):  # streamed
            return real(source, destination)
        if renamed:
            real(source, destination)
        raise KeyboardInterrupt

    monkeypatch.setattr(ResultsWriter, "write", write)
    monkeypatch.setattr(outfiles.os, "replace", replace)
