"""Nothing destroyed: outputs are checked up front, written whole at the end, and never
written over a file the command reads, by whatever path reaches it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import full_disk_at_the_end, invoke, second_ctrl_c_in, stop_in_the_final_write

DATA = Path(__file__).parent / "data" / "compare"
QUICK = ("--warmup", "0", "--min-samples", "3", "--max-time", "0.01", "--no-vendor",
         "--no-batch")


RESULTS = Path(__file__).parent / "data" / "compare" / "baseline.json"


def existing(tmp_path: Path, *names: str) -> dict[Path, bytes]:
    """Write each file with content of its own (a .json one a results file: a run refuses
    to write over any other file); return what each held."""
    kept = {}
    for name in names:
        path = tmp_path / name
        path.write_text(old_results(name) if name.endswith(".json") else f"precious {name}\n",
                        encoding="utf-8")
        kept[path] = path.read_bytes()
    return kept


def old_results(name: str) -> str:
    """Return the text of a results file of an earlier run, marked with name."""
    document = json.loads(RESULTS.read_text(encoding="utf-8"))
    document["precious"] = name
    return json.dumps(document)


def unchanged(kept: dict[Path, bytes]) -> None:
    for path, content in kept.items():
        assert path.read_bytes() == content, path


def one_line_error(result, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_a_run_that_fails_before_measuring_keeps_every_output(use_fake, tmp_path):
    use_fake(lost_devices=(0,))  # the GPU cannot be opened: nothing is measured
    kept = existing(tmp_path, "x.json", "x.md", "x.csv")
    result = invoke("matmul", "--size", "64", *QUICK, "--json", tmp_path / "x.json",
                    "--markdown", tmp_path / "x.md", "--csv", tmp_path / "x.csv")
    assert result.exit_code == 2
    unchanged(kept)


def test_a_run_that_fails_to_plan_keeps_every_output(use_fake, tmp_path):
    kept = existing(tmp_path, "x.json", "best.toml")
    result = invoke("matmul", "--size", "64", "--tile", "7", *QUICK, "--json",
                    tmp_path / "x.json", "--best", "--best-out", tmp_path / "best.toml")
    assert result.exit_code == 2
    unchanged(kept)


@pytest.mark.parametrize("via", ["same", "relative", "symlink", "hard link"])
def test_compare_never_writes_over_its_inputs(tmp_path, monkeypatch, via):
    base, current = tmp_path / "a.json", tmp_path / "b.json"
    base.write_bytes((DATA / "baseline.json").read_bytes())
    current.write_bytes((DATA / "slower20.json").read_bytes())
    kept = {base: base.read_bytes(), current: current.read_bytes()}
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    target = {"same": base, "relative": Path("sub/../a.json"), "symlink": tmp_path / "link",
              "hard link": tmp_path / "hard"}[via]
    if via == "symlink":
        os.symlink(base, target)
    if via == "hard link":  # another name of the same file: written over, it changes too
        os.link(base, target)
    for flag in ("--markdown", "--html", "--csv"):
        one_line_error(invoke("compare", base, current, flag, target), flag,
                       "one of the files this command reads")
    unchanged(kept)


def test_run_never_writes_over_its_suite_or_a_kernel(use_fake, tmp_path, monkeypatch):
    suite = tmp_path / "cudabench.toml"
    suite.write_text('[[benchmark]]\nop = "matmul"\nsize = "64"\n', encoding="utf-8")
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    from helpers import MATMUL_HEADER, write_kernel
    kernel = write_kernel(kernels, "mine", MATMUL_HEADER)
    header = kernel.parent / "common.cuh"  # beside a kernel: one it may include
    header.write_text("#define COMMON 1\n", encoding="utf-8")
    kept = {suite: suite.read_bytes(), kernel: kernel.read_bytes(),
            header: header.read_bytes()}
    monkeypatch.chdir(tmp_path)
    one_line_error(invoke("run", "--json", "cudabench.toml"), "--json")
    one_line_error(invoke("run", "--kernels-dir", kernels, "--markdown", kernel), "--markdown")
    one_line_error(invoke("matmul", "--size", "64", *QUICK, "--kernels-dir", kernels,
                          "--variant", "mine", "--json", header), "--json")
    # A kernel or op file of the folder that this run does not choose: the catalog reads
    # every one's header, so an output written over one would break every later run.
    op_file = kernels / "softmax.py"
    op_file.write_bytes((Path(__file__).parents[1] / "examples" / "softmax" / "softmax.py")
                        .read_bytes())
    kept[op_file] = op_file.read_bytes()
    for target in (kernel, op_file):
        one_line_error(invoke("matmul", "--size", "64", *QUICK, "--kernels-dir", kernels,
                              "--variant", "naive", "--json", target), "--json",
                       "one of the files this command reads")
    unchanged(kept)


def test_a_run_that_measures_nothing_keeps_an_existing_results_file(use_fake, tmp_path,
                                                                    monkeypatch):
    use_fake(compute_capability="8.0")  # wgmma needs sm_90: every row a SKIP
    kept = existing(tmp_path, "keep.json")
    done = invoke("matmul", "--size", "64", "--dtype", "float16", "--variant", "wgmma_ws",
                  *QUICK, "--json", tmp_path / "keep.json")
    assert done.exit_code == 2, done.output  # nothing ran
    assert "nothing was measured (no kernel's row has samples)" in done.stderr
    unchanged(kept)
    assert not (tmp_path / "keep.json.partial").exists()
    # --record: the kept file is an earlier run's; nothing of this one is recorded
    db = tmp_path / "h.db"
    done = invoke("matmul", "--size", "64", "--dtype", "float16", "--variant", "wgmma_ws",
                  *QUICK, "--json", tmp_path / "keep.json", "--record", "--db", db)
    assert "nothing recorded" in done.stderr and not db.exists(), done.output
    unchanged(kept)
    # and the reports: a table of SKIP rows replaced the last run's markdown and CSV
    reports = existing(tmp_path, "keep.md") | existing(tmp_path, "keep.csv")
    done = invoke("matmul", "--size", "64", "--dtype", "float16", "--variant", "wgmma_ws",
                  *QUICK, "--markdown", tmp_path / "keep.md", "--csv", tmp_path / "keep.csv")
    assert done.exit_code == 2, done.output
    said = " ".join(done.stderr.split())
    assert f"--markdown {tmp_path / 'keep.md'} is as it was" in said
    assert f"--csv {tmp_path / 'keep.csv'} is as it was" in said
    unchanged(reports)
    # the copy and cuBLAS rows measured beside the SKIPped kernels are no run of them: the
    # files of the last run were replaced by them (and recorded)
    beside = tuple(word for word in QUICK if word != "--no-vendor")
    done = invoke("dot", "--size", "4096", "--variant", "bulk", *beside, "--json",
                  tmp_path / "keep.json", "--markdown", tmp_path / "keep.md", "--csv",
                  tmp_path / "keep.csv", "--record", "--db", db)
    assert done.exit_code == 2, done.output
    assert "nothing recorded" in done.stderr and not db.exists(), done.output
    unchanged(kept | reports)
    # a new file (or --record's own): written, but no run of the kernels to record
    monkeypatch.chdir(tmp_path)  # --record's own file: in .cudabench/runs here
    done = invoke("dot", "--size", "4096", "--variant", "bulk", *beside, "--record", "--db",
                  db)
    assert done.exit_code == 2 and "is not recorded" in done.stderr, done.output
    assert not db.exists(), done.output
    fresh = tmp_path / "fresh.md"  # no file before: the SKIP rows are what the run has
    invoke("matmul", "--size", "64", "--dtype", "float16", "--variant", "wgmma_ws", *QUICK,
           "--markdown", fresh)
    assert "wgmma_ws" in fresh.read_text(encoding="utf-8")
    fresh = tmp_path / "fresh.json"  # no file before it: the SKIP rows are written
    invoke("matmul", "--size", "64", "--dtype", "float16", "--variant", "wgmma_ws", *QUICK,
           "--json", fresh)
    assert fresh.is_file()


@pytest.mark.parametrize("flag", ["--json", "--markdown", "--csv"])
def test_an_output_that_is_a_folder_or_empty_is_a_usage_error(use_fake, tmp_path, flag):
    one_line_error(invoke("matmul", "--size", "64", *QUICK, flag, tmp_path), flag)
    one_line_error(invoke("matmul", "--size", "64", *QUICK, flag, ""), flag)
    # the dry run stops where the run would (it shows what a real run would stop on)
    one_line_error(invoke("matmul", "--size", "64", *QUICK, flag, tmp_path, "--dry-run"), flag)


def test_two_outputs_on_one_path_are_refused(use_fake, tmp_path):
    out = tmp_path / "x.out"
    one_line_error(invoke("matmul", "--size", "64", *QUICK, "--markdown", out, "--csv", out),
                   "writes there too")
    assert not out.exists()


def test_a_results_file_is_replaced_whole_and_no_temporary_stays(use_fake, tmp_path):
    out = tmp_path / "x.json"
    out.write_text(old_results("x.json"), encoding="utf-8")
    result = invoke("matmul", "--size", "64", *QUICK, "--json", out)
    assert result.exit_code == 0, result.output
    assert "precious" not in out.read_text(encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.json"]


def stop_after_first_row(monkeypatch, error: type[BaseException]) -> None:
    """Make the run stop (Ctrl-C, or a bug) as its first row arrives."""
    import contextlib

    import cudabench.cli.commands as commands

    real = commands.terminal.progress

    @contextlib.contextmanager
    def progress(*args, **kwargs):
        with real(*args, **kwargs) as advance:
            def stop(result):
                advance(result)
                raise error()
            yield stop

    monkeypatch.setattr(commands.terminal, "progress", progress)


@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_a_run_that_stops_keeps_an_existing_results_file_and_says_where_its_rows_are(
        use_fake, tmp_path, monkeypatch, error):
    from cudabench.results import load_results

    kept = existing(tmp_path, "baseline.json", "x.md", "x.csv")
    stop_after_first_row(monkeypatch, error)
    result = invoke("matmul", "--size", "64", *QUICK, "--json", tmp_path / "baseline.json",
                    "--markdown", tmp_path / "x.md", "--csv", tmp_path / "x.csv")
    assert result.exit_code in (130, 4), result.output
    unchanged(kept)
    partial = tmp_path / "baseline.json.partial"
    assert f"the run stopped: 1 of its rows are in {partial}" in " ".join(result.stderr.split())
    saved = load_results(partial)
    assert saved.metadata["complete"] is False and len(saved.benchmarks) == 1


def test_a_new_results_file_streams_in_place(use_fake, tmp_path, monkeypatch):
    fresh = tmp_path / "fresh.json"
    stop_after_first_row(monkeypatch, KeyboardInterrupt)
    result = invoke("matmul", "--size", "64", *QUICK, "--json", fresh)
    assert result.exit_code == 130 and fresh.exists()  # nothing to keep: the rows are here
    # said, as a stopped run beside an existing file says it: the file is incomplete
    assert (f"the run stopped: 1 of its rows are in {fresh}, marked incomplete"
            in " ".join(result.stderr.split()))
    from cudabench.results import load_results

    assert load_results(fresh).metadata["complete"] is False


def test_a_stopped_run_s_file_in_place_is_not_written_over(use_fake, tmp_path, monkeypatch):
    # its rows, marked incomplete, were the run's only copy: the next run replaced them
    fresh = tmp_path / "fresh.json"
    stop_after_first_row(monkeypatch, KeyboardInterrupt)
    assert invoke("matmul", "--size", "64", *QUICK, "--json", fresh).exit_code == 130
    monkeypatch.undo()
    stopped = fresh.read_bytes()
    done = invoke("matmul", "--size", "64", *QUICK, "--json", fresh)
    assert done.exit_code == 2 and fresh.read_bytes() == stopped
    assert f"--json {fresh}: holds the rows of a run that stopped (marked incomplete)" in \
        " ".join(done.stderr.split())


@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_a_stopped_run_without_a_results_file_keeps_its_rows_in_its_reports(
        use_fake, tmp_path, monkeypatch, error):
    # --csv and --markdown were written only at the end: a stop kept nothing at all
    kept = existing(tmp_path, "old.csv")
    stop_after_first_row(monkeypatch, error)
    new_md, old_csv = tmp_path / "new.md", tmp_path / "old.csv"
    done = invoke("matmul", "--size", "64", *QUICK, "--markdown", new_md, "--csv", old_csv)
    assert done.exit_code in (130, 4), done.output
    unchanged(kept)
    text = " ".join(done.stderr.split())
    assert f"the run stopped: 1 of its rows are in {new_md} (--markdown)" in text, text
    assert f"the run stopped: 1 of its rows are in {old_csv}.partial (--csv); {old_csv} is " \
        "as it was" in text, text
    assert "matmul" in new_md.read_text() and "incomplete: the run stopped" in new_md.read_text()
    assert len((tmp_path / "old.csv.partial").read_text().splitlines()) == 2  # head, a row
    # and the next run is refused before it measures: stopped too, it kept its rows
    # nowhere ("holds another stopped run's rows ... not saved there")
    again = invoke("matmul", "--size", "64", *QUICK, "--csv", old_csv)
    assert again.exit_code == 2, again.output
    assert f"--csv {old_csv}: {old_csv}.partial holds the rows of a run that stopped; move " \
        "it away or delete it first" in " ".join(again.stderr.split())


def test_a_second_ctrl_c_while_a_stopped_run_saves_its_rows_stops_it_once_they_are_saved(
        use_fake, tmp_path, monkeypatch):
    # a second Ctrl-C a moment after the first landed in the save (NumPy's import, there):
    # every row measured was lost
    import cudabench.cli.stopped as stopped

    second_ctrl_c_in(monkeypatch, stopped, "write_text")
    stop_after_first_row(monkeypatch, KeyboardInterrupt)
    md, csv = tmp_path / "x.md", tmp_path / "x.csv"
    done = invoke("matmul", "--size", "64", *QUICK, "--markdown", md, "--csv", csv)
    assert done.exit_code == 130, done.output
    assert "matmul" in md.read_text() and len(csv.read_text().splitlines()) == 2
    assert f"the run stopped: 1 of its rows are in {csv} (--csv)" in \
        " ".join(done.stderr.split())


def test_a_run_stopped_while_its_tables_print_keeps_every_row_in_its_reports(
        use_fake, tmp_path, monkeypatch):
    # SIGTERM while the tables printed (a reader that stalled): the reports were written
    # after the tables, and nothing kept the rows measured
    from cudabench.cli import commands

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(commands.terminal, "render_run", stopped)
    md, csv = tmp_path / "x.md", tmp_path / "x.csv"
    done = invoke("matmul", "--size", "64,128", *QUICK, "--variant", "naive", "--markdown", md,
                  "--csv", csv)
    assert done.exit_code == 130, done.output
    assert len(csv.read_text().splitlines()) == 3 and "128x128x128" in md.read_text()
    assert f"the run stopped after measuring: its 2 rows are in {md} (--markdown), {csv} " \
        "(--csv)" in " ".join(done.stderr.split())


def test_a_run_stopped_before_its_reports_are_written_keeps_its_rows_in_them(
        use_fake, tmp_path, monkeypatch):
    # the stop lands after measuring, before the report is written: kept as a stopped
    # run's (the stop's own save renders them again)
    import cudabench.render.markdown as markdown

    real, calls = markdown.run_to_markdown, []

    def first_stopped(outcome, *terms):
        calls.append(outcome)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return real(outcome, *terms)

    monkeypatch.setattr(markdown, "run_to_markdown", first_stopped)
    md, csv = tmp_path / "x.md", tmp_path / "x.csv"
    done = invoke("matmul", "--size", "64,128", *QUICK, "--variant", "naive", "--markdown", md,
                  "--csv", csv)
    assert done.exit_code == 130, done.output
    text = " ".join(done.stderr.split())
    assert f"the run stopped: 2 of its rows are in {md} (--markdown)" in text, text
    assert f"the run stopped: 2 of its rows are in {csv} (--csv)" in text, text
    assert "incomplete: the run stopped" in md.read_text()
    assert len(csv.read_text().splitlines()) == 3


def test_a_stopped_run_s_partial_rows_are_never_written_over(use_fake, tmp_path):
    # The stopped run said its rows are in old.json.partial: the next run to old.json must
    # not stream over them (and then delete them) before anything is measured.
    old = tmp_path / "old.json"
    old.write_text(old_results("old.json"), encoding="utf-8")
    (tmp_path / "old.json.partial").write_text("a stopped run's rows\n", encoding="utf-8")
    done = invoke("matmul", "--size", "64", *QUICK, "--json", old)
    assert done.exit_code == 2
    assert "old.json.partial holds the rows of a run that stopped; move it away" in done.stderr
    assert old.read_text(encoding="utf-8") == old_results("old.json")
    assert (tmp_path / "old.json.partial").read_text(encoding="utf-8") == "a stopped run's rows\n"
    (tmp_path / "old.json.partial").unlink()
    assert invoke("matmul", "--size", "64", *QUICK, "--json", old).exit_code == 0
    assert "precious" not in old.read_text(encoding="utf-8")
    assert not (tmp_path / "old.json.partial").exists()


@pytest.mark.parametrize("flag", ["--json", "--csv", "--markdown"])
def test_an_output_that_is_a_device_or_a_pipe_is_refused(use_fake, tmp_path, flag):
    # renamed over, /dev/null became a regular file (as root), and a pipe's reader waited
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (Path(os.devnull), fifo):
        result = invoke("dot", "--size", "100", *QUICK, flag, path)
        one_line_error(result, f"{flag} {path}: is not a regular file")
    assert fifo.is_fifo() and Path(os.devnull).is_char_device()


@pytest.mark.parametrize("flag", ["--json", "--csv", "--markdown"])
def test_a_dash_for_stdout_is_refused_not_written_as_a_file_named_dash(use_fake, tmp_path,
                                                                       monkeypatch, flag):
    monkeypatch.chdir(tmp_path)
    result = invoke("dot", "--size", "100", *QUICK, flag, "-")
    one_line_error(result, f"{flag} -: names a file here, not stdout")
    assert not (tmp_path / "-").exists()


def test_an_output_name_too_long_for_its_temporary_files_is_refused(use_fake, tmp_path):
    result = invoke("dot", "--size", "100", *QUICK, "--json", tmp_path / ("x" * 250 + ".json"))
    one_line_error(result, "a file name of more than 235 bytes")


def test_two_runs_writing_one_results_file_at_once_are_refused(tmp_path):
    # the second would replace the first's rows, or delete the .partial that kept them;
    # one process's writers, one after another, are not refused
    import subprocess
    import sys

    from cudabench.errors import UsageError
    from cudabench.results.writer import ResultsWriter

    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\n"
         "from cudabench.results.writer import ResultsWriter\n"
         f"w = ResultsWriter({str(tmp_path / 'r.json')!r})\n"
         "print('holding', flush=True)\n"
         "sys.stdin.read()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
        with pytest.raises(UsageError, match="another cudabench run is writing it now"):
            ResultsWriter(tmp_path / "sub" / ".." / "r.json")
    finally:
        holder.communicate("", timeout=30)
    first = ResultsWriter(tmp_path / "r.json")
    first.close()
    ResultsWriter(tmp_path / "r.json")  # one after another in this process: not refused
    del first


def _refused_elsewhere(path: Path) -> bool:
    """Return whether another process is refused a writer of path now."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", "from cudabench.errors import UsageError\n"
         "from cudabench.results.writer import ResultsWriter\n"
         f"try:\n    ResultsWriter({str(path)!r})\nexcept UsageError:\n    print('refused')"],
        capture_output=True, text=True, timeout=60)
    return done.stdout == "refused\n"


def test_two_writers_of_one_results_file_in_one_process_at_once_are_refused(use_fake,
                                                                            tmp_path):
    # two threads' cb.run(json=same) each wrote its rows over the other's, with no warning;
    # and the second writer's lock handle, closed, dropped the first's lock: another
    # process could write the file too
    import cudabench as cb
    from cudabench.errors import UsageError
    from cudabench.results.writer import ResultsWriter

    path = tmp_path / "both.json"
    first = ResultsWriter(path)  # another thread's run, writing it
    with pytest.raises(UsageError, match="another cudabench run is writing it now"):
        cb.run("transpose", size=64, json=path, timing=cb.TimingPolicy(max_time_s=0.05))
    with pytest.raises(UsageError, match="another cudabench run is writing it now"):
        cb.run("transpose", size=64, timing=cb.TimingPolicy(max_time_s=0.05)).to_json(path)
    assert _refused_elsewhere(path)  # the first writer's lock still holds
    first.close()
    assert not _refused_elsewhere(path)
    done = cb.run("transpose", size=64, json=path, timing=cb.TimingPolicy(max_time_s=0.05))
    assert done.path == path and not _refused_elsewhere(path)  # done: released
    again = cb.run("transpose", size=64, json=path, timing=cb.TimingPolicy(max_time_s=0.05))
    assert json.loads(path.read_text())["complete"] and again.path == path


def test_a_results_file_a_running_cudabench_writes_is_said_so_not_a_stopped_run(use_fake,
                                                                               tmp_path):
    # a new file streams in place, marked incomplete: a second run to it was told it held
    # "a run that stopped ... delete it first", and its readers that its run stopped early
    import subprocess
    import sys

    streaming, base = tmp_path / "same.json", tmp_path / "base.json"
    for seed, path in enumerate((streaming, base)):
        use_fake(seed=seed)  # other noise: samples equal to the last bit read as a copied row
        assert invoke("transpose", "--size", "64", *QUICK, "--json", path).exit_code == 0
    document = json.loads(streaming.read_text())
    streaming.write_text(json.dumps({**document, "complete": False}))
    partial = tmp_path / "cur.json.partial"  # where a run streams beside an older cur.json
    partial.write_text(streaming.read_text())
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys\nfrom pathlib import Path\n"
         "from cudabench.common.outfiles import claim_output\n"
         f"a = claim_output(Path({str(streaming)!r}), '--json')\n"
         f"b = claim_output(Path({str(tmp_path / 'cur.json')!r}), '--json')\n"
         "print('writing', flush=True)\nsys.stdin.read()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "writing\n"
        writing = f"being written by a running cudabench (pid {holder.pid})"
        one_line_error(invoke("dot", "--size", "100", *QUICK, "--json", streaming),
                       f"--json {streaming}: another cudabench run is writing it now (pid "
                       f"{holder.pid})")
        for path in (streaming, partial):
            shown = invoke("report", path)
            assert f"{path} is incomplete: it is {writing}" in shown.stderr, shown.stderr
            assert "stopped" not in shown.stderr
        compared = invoke("compare", base, partial)
        assert compared.exit_code == 1
        assert (f"error: {partial} is incomplete: it is {writing}, so it fails the gate; "
                "compare it when that run ends") in compared.stderr, compared.stderr
    finally:
        holder.communicate("", timeout=30)
    assert "its run stopped early" in invoke("report", streaming).stderr  # now it has


def test_a_lock_folder_planted_as_a_link_is_not_used(tmp_path, monkeypatch):
    # another user could plant /tmp/cudabench-locks-UID as a link to a folder of this
    # user's: its lock files would be created there; the write goes on unguarded instead
    import os

    from cudabench.common import outfiles

    monkeypatch.setattr(outfiles.tempfile, "gettempdir", lambda: str(tmp_path))
    victim = tmp_path / "victim"
    victim.mkdir()
    (tmp_path / f"cudabench-locks-{os.getuid()}").symlink_to(victim)
    assert outfiles.claim_output(tmp_path / "r.json", "--json") is None
    assert list(victim.iterdir()) == []
    os.unlink(tmp_path / f"cudabench-locks-{os.getuid()}")
    handle = outfiles.claim_output(tmp_path / "r.json", "--json")  # its own folder: locked
    assert handle is not None
    handle.close()


def test_a_results_file_that_cannot_be_streamed_costs_no_row_of_the_run(use_fake, tmp_path,
                                                                        monkeypatch):
    # a full disk while streaming: the run goes on, and its complete file has every row
    import cudabench.results.writer as writer_module
    from cudabench.errors import UsageError
    from cudabench.results import load_results

    real = writer_module.replacing
    calls = []

    def full_disk_once(path, flag, mode="w"):
        calls.append(path)
        if len(calls) == 1:
            raise UsageError(f"{flag} {path}: cannot write: [Errno 28] No space left")
        return real(path, flag, mode)

    monkeypatch.setattr(writer_module, "replacing", full_disk_once)
    out = tmp_path / "r.json"
    result = invoke("matmul", "--size", "64,96", "--variant", "tiled", *QUICK, "--json", out)
    assert result.exit_code == 0, result.output
    assert len(load_results(out).benchmarks) == 2


def test_ctrl_c_while_a_row_streams_keeps_the_row(use_fake, tmp_path, monkeypatch):
    # the note said "1 could not be written: None", and the row being written was lost
    import cudabench.results.writer as writer_module
    from cudabench.results import load_results

    real = writer_module.replacing
    calls = []

    def interrupted_once(path, flag, mode="w"):
        calls.append(path)
        if len(calls) == 2:  # the second row's stream
            raise KeyboardInterrupt
        return real(path, flag, mode)

    monkeypatch.setattr(writer_module, "replacing", interrupted_once)
    out = tmp_path / "r.json"
    out.write_text(old_results("r.json"), encoding="utf-8")  # the rows go beside it
    result = invoke("matmul", "--size", "64,96", "--variant", "tiled", *QUICK, "--json", out)
    assert result.exit_code == 130, result.output
    said = " ".join(result.stderr.split())
    assert "None" not in said and "could not be written" not in said, said
    assert "the run stopped: 2 of its rows are in" in said
    assert len(load_results(tmp_path / "r.json.partial").benchmarks) == 2
    assert out.read_text(encoding="utf-8") == old_results("r.json")


def test_a_file_that_is_no_results_file_is_not_written_over(use_fake, tmp_path):
    # --json notes.txt (or the history store) was replaced by the run's rows
    notes = tmp_path / "notes.txt"
    notes.write_text("important notes\n", encoding="utf-8")
    done = invoke("matmul", "--size", "64", *QUICK, "--json", notes)
    assert done.exit_code == 2
    assert f"--json {notes}: exists and is not a cudabench results file" in " ".join(
        done.stderr.split())
    assert notes.read_text(encoding="utf-8") == "important notes\n"
    empty = tmp_path / "empty.json"
    empty.touch()  # mktemp's: taken
    assert invoke("matmul", "--size", "64", *QUICK, "--json", empty).exit_code == 0
    newer = tmp_path / "newer.json"  # a newer cudabench's results: results all the same
    newer.write_text(old_results("newer.json").replace('"schema_version": 2',
                                                       '"schema_version": 99'),
                     encoding="utf-8")
    assert invoke("matmul", "--size", "64", *QUICK, "--json", newer).exit_code == 0


def test_an_output_named_as_the_results_stream_is_refused(use_fake, tmp_path):
    # the markdown at r.json.partial made the next run refuse r.json: "the rows of a run
    # that stopped"
    existing(tmp_path, "r.json")
    done = invoke("matmul", "--size", "64", *QUICK, "--json", tmp_path / "r.json",
                  "--markdown", tmp_path / "r.json.partial")
    assert done.exit_code == 2
    assert "--markdown" in done.stderr and "names ending in .partial are where a run's rows" \
        in " ".join(done.stderr.split())
    assert not (tmp_path / "r.json.partial").exists()


def test_a_results_file_that_cannot_be_written_at_the_end_still_shows_the_tables(
        use_fake, tmp_path, monkeypatch):
    # a full disk at the final write exited 2 before any table: the run's numbers went
    # unseen, though its rows were streamed
    full_disk_at_the_end(monkeypatch)
    out = tmp_path / "r.json"
    result = invoke("matmul", "--size", "64,96", "--variant", "tiled", "--no-vendor", *QUICK,
                    "--json", out, "--record", "--db", tmp_path / "h.sqlite")
    assert result.exit_code == 2, result.output
    assert "│ tiled" in result.stdout  # the tables first
    assert "No space left" in result.stderr and f"2 of the run's 2 rows are in {out}" in \
        " ".join(result.stderr.split())
    assert "Traceback" not in result.output
    import sqlite3

    with sqlite3.connect(tmp_path / "h.sqlite") as store:  # no file of this run to record
        tables = {name for (name,) in store.execute("SELECT name FROM sqlite_master")}
        assert "runs" not in tables or store.execute(
            "SELECT COUNT(*) FROM runs").fetchone() == (0,)


def test_a_second_failed_write_keeps_the_first_error_said(use_fake, tmp_path, monkeypatch):
    # --markdown failing after --json had: only the markdown's error was printed, and the
    # note saying where the rows are was lost
    import cudabench.cli.commands as commands_module
    from cudabench.errors import UsageError

    def no_markdown(path, text, flag):
        raise UsageError(f"{flag} {path}: cannot write: [Errno 28] No space left")

    full_disk_at_the_end(monkeypatch)
    monkeypatch.setattr(commands_module, "write_text", no_markdown)
    out = tmp_path / "r.json"
    result = invoke("dot", "--size", "1000", "--variant", "atomic", *QUICK, "--json", out,
                    "--markdown", tmp_path / "r.md")
    assert result.exit_code == 2, result.output
    said = " ".join(result.stderr.split())
    assert f"--json {out}: cannot write" in said and "--markdown" in said


def test_the_api_keeps_every_row_on_the_error_when_its_file_cannot_be_written(
        use_fake, tmp_path, monkeypatch):
    import cudabench as cb
    from cudabench.errors import ResultsNotWritten

    full_disk_at_the_end(monkeypatch)
    with pytest.raises(ResultsNotWritten, match="No space left") as raised:
        cb.run("dot", variants="atomic", size=1000, vendor=False, batch=False,
               json=tmp_path / "r.json", timing=cb.TimingPolicy(warmup_s=0, max_time_s=0.02))
    assert raised.value.results.row("atomic").median_s
    assert "--json" not in str(raised.value)  # in Python's terms: the argument `json`



def _history_store(tmp_path) -> Path:
    store = tmp_path / "h.db"
    done = invoke("history", "import", RESULTS, "--db", store)
    assert done.exit_code == 0, done.output
    return store


@pytest.mark.parametrize("flag", ["--markdown", "--csv"])
def test_a_table_output_never_replaces_measured_data(use_fake, tmp_path, flag):
    # --markdown over an earlier results file, --csv over a history store: both gone, exit 0
    import gzip

    old = tmp_path / "old.json"
    old.write_text(old_results("old.json"), encoding="utf-8")
    packed = tmp_path / "old.json.gz"
    packed.write_bytes(gzip.compress(old.read_bytes()))
    compact = tmp_path / "compact.json"  # a results file written by another tool
    compact.write_text(json.dumps(json.loads(old.read_text()), separators=(",", ":")))
    # keys sorted (`jq -S`): "kind" is no longer first, and the guard took it for a table
    sorted_keys = tmp_path / "sorted.json"
    sorted_keys.write_text(json.dumps(json.loads(old.read_text()), sort_keys=True, indent=1))
    store = _history_store(tmp_path)
    kept = {path: path.read_bytes() for path in (old, packed, compact, sorted_keys, store)}
    for path, what in ((old, "is a cudabench results file"),
                       (packed, "is a cudabench results file"),
                       (compact, "is a cudabench results file"),
                       (sorted_keys, "is a cudabench results file"),
                       (store, "is an SQLite database")):
        done = invoke("matmul", "--size", "64", *QUICK, flag, path)
        one_line_error(done, flag, what, "name another file")
        report = invoke("report", RESULTS, flag, path)
        one_line_error(report, flag, what)
        compare = invoke("compare", RESULTS, DATA / "slower20.json", flag, path)
        one_line_error(compare, flag, what)
    unchanged(kept)
    notes = tmp_path / "notes.md"  # a table's own old file: replaced, as before
    notes.write_text("old table\n", encoding="utf-8")
    assert invoke("report", RESULTS, flag, notes).exit_code == 0
    assert notes.read_text(encoding="utf-8") != "old table\n"


def test_a_figure_or_a_page_never_replaces_measured_data(tmp_path):
    pytest.importorskip("matplotlib")
    old = tmp_path / "old.json"
    old.write_text(old_results("old.json"), encoding="utf-8")
    store = _history_store(tmp_path)
    kept = {path: path.read_bytes() for path in (old, store)}
    renamed = tmp_path / "figure.png"  # the store, copied to a figure's name
    renamed.write_bytes(store.read_bytes())
    one_line_error(invoke("plot", RESULTS, "-o", renamed), "-o", "is an SQLite database")
    one_line_error(invoke("report", RESULTS, "--html", old), "--html",
                   "is a cudabench results file")
    one_line_error(invoke("history", "plot", renamed, "--db", store), "OUTPUT",
                   "is an SQLite database")
    unchanged(kept)


@pytest.mark.parametrize("flag", ["--json", "--markdown", "--html"])
def test_an_output_named_as_a_results_stream_is_refused(use_fake, tmp_path, flag):
    # another run streaming t.json's rows at t.json.partial deleted this one's file when it
    # ended; a page there made the next run to t.json refuse, for a stopped run's rows
    stream = tmp_path / "t.json.partial"
    if flag == "--html":
        done = invoke("report", RESULTS, flag, stream)
    else:
        done = invoke("matmul", "--size", "64", *QUICK, flag, stream)
    one_line_error(done, flag, "names ending in .partial are where a run's rows stream")
    assert not stream.exists()


def test_a_replaced_output_keeps_its_mode(use_fake, tmp_path):
    # a private results file became world-readable when replaced
    out, table = tmp_path / "r.json", tmp_path / "r.csv"
    assert invoke("matmul", "--size", "64", *QUICK, "--json", out).exit_code == 0
    table.write_text("old\n", encoding="utf-8")
    os.chmod(out, 0o600)
    os.chmod(table, 0o640)
    done = invoke("matmul", "--size", "64", *QUICK, "--json", out, "--csv", table,
                  "--seed", "1")
    assert done.exit_code == 0, done.output
    assert (os.stat(out).st_mode & 0o777, os.stat(table).st_mode & 0o777) == (0o600, 0o640)
    fresh = tmp_path / "fresh.csv"
    assert invoke("report", RESULTS, "--csv", fresh).exit_code == 0
    assert os.stat(fresh).st_mode & 0o777 == 0o666 & ~_umask()


def test_a_partial_beside_a_private_file_is_private_too(tmp_path):
    # r.json 0600, its run stopped: r.json.partial, the same rows, was world-readable
    from cudabench.common.outfiles import write_text

    out = tmp_path / "r.json"
    out.write_text("{}", encoding="utf-8")
    os.chmod(out, 0o600)
    write_text(tmp_path / "r.json.partial", "rows", "--json")
    assert os.stat(tmp_path / "r.json.partial").st_mode & 0o777 == 0o600
    write_text(tmp_path / "alone.json.partial", "rows", "--json")  # none beside: the umask's
    assert os.stat(tmp_path / "alone.json.partial").st_mode & 0o777 == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_run_that_cannot_be_recorded_says_where_its_results_are(use_fake, tmp_path,
                                                                  monkeypatch):
    # a locked store (30 s) or Ctrl-C while waiting for it: only "try again" was said
    import cudabench.cli.history as history
    from cudabench.errors import UsageError

    def locked(files, db, branch=None, say=True):
        raise UsageError(f"{db}: the store is locked")

    monkeypatch.setattr(history, "record_files", locked)
    monkeypatch.chdir(tmp_path)
    done = invoke("matmul", "--size", "64", *QUICK, "--record", "--db", tmp_path / "h.db")
    assert done.exit_code == 2, done.output
    kept = list((tmp_path / ".cudabench" / "runs").glob("*.json"))
    assert len(kept) == 1
    said = " ".join(done.stderr.split())
    assert (f"the run's results are in {Path('.cudabench/runs') / kept[0].name}, not recorded:"
            f" record them with `cudabench history import") in said


def _full_disk_for(monkeypatch, suffix: str) -> None:
    """Make every output whose name ends with suffix fail as on a full disk."""
    import contextlib

    from cudabench.common import outfiles
    from cudabench.errors import UsageError

    real = outfiles.replacing

    @contextlib.contextmanager
    def replacing(path, flag, mode="w"):
        if str(path).endswith(suffix):
            raise UsageError(f"{flag} {path}: cannot write: [Errno 28] No space left")
        with real(path, flag, mode) as stream:
            yield stream

    monkeypatch.setattr(outfiles, "replacing", replacing)


def test_a_report_that_cannot_be_written_costs_no_other_output(use_fake, tmp_path,
                                                               monkeypatch):
    # --markdown on a full disk: --csv on a healthy one was never written, nor --record
    _full_disk_for(monkeypatch, ".md")
    table, store = tmp_path / "r.csv", tmp_path / "h.db"
    done = invoke("matmul", "--size", "64", *QUICK, "--json", tmp_path / "r.json",
                  "--markdown", tmp_path / "r.md", "--csv", table, "--record", "--db", store)
    assert done.exit_code == 2, done.output
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("cudabench: error: --markdown") and "No space left" in last
    assert table.read_text(encoding="utf-8").startswith("op,")
    assert "recorded as run 1" in done.stdout and store.exists()
    compare = invoke("compare", RESULTS, DATA / "slower20.json", "--markdown",
                     tmp_path / "c.md", "--csv", tmp_path / "c.csv")
    assert compare.exit_code == 2 and "--markdown" in compare.stderr
    assert "cudabench compare" in compare.stdout and (tmp_path / "c.csv").exists()
    report = invoke("report", RESULTS, "--markdown", tmp_path / "p.md", "--csv",
                    tmp_path / "p.csv")
    assert report.exit_code == 2 and (tmp_path / "p.csv").exists()


def later_kernel(folder: Path) -> None:
    """Write folder/later.cu, matmul's naive built for a GPU no host has (sm_999): every
    row of it is SKIP, nothing measured."""
    source = Path(__file__).parents[1] / "kernels" / "matmul" / "naive.cu"
    text = source.read_text(encoding="utf-8").replace("matmul_naive", "matmul_later")
    (folder / "later.cu").write_text(text.replace("// cudabench: matmul\n",
                                                  "// cudabench: matmul\n// arch: sm_999\n"),
                                     encoding="utf-8")


def test_a_skipped_variant_says_why_and_a_run_of_skips_says_so(use_fake, tmp_path):
    # the reason was in the results file only, and a run of SKIP rows exited 2 silently
    later_kernel(tmp_path)
    done = invoke("matmul", "--size", "32", *QUICK, "--kernels-dir", tmp_path,
                  "--variant", "later")
    assert done.exit_code == 2, done.output
    said = " ".join(done.stderr.split())
    assert "SKIP: matmul/later: built for sm_999" in said
    assert "error: nothing was measured: every kernel was skipped" in said


def test_a_run_whose_every_kernel_skipped_exits_2_beside_a_measured_cublas_row(use_fake,
                                                                               tmp_path):
    # the cuBLAS row, measured, made it exit 0: a run that measured no kernel of its own
    later_kernel(tmp_path)
    quick = [arg for arg in QUICK if arg != "--no-vendor"]
    done = invoke("matmul", "--size", "32", *quick, "--kernels-dir", tmp_path,
                  "--variant", "later")
    assert "cuBLAS" in done.stdout
    assert done.exit_code == 2, done.output
    assert "error: nothing was measured: every kernel was skipped" in " ".join(
        done.stderr.split())


def test_an_output_through_a_dangling_link_makes_no_folder_where_it_leads(use_fake, tmp_path):
    # the run made /nonexistent/ to write the link's target there
    link = tmp_path / "r.json"
    link.symlink_to(tmp_path / "nowhere" / "deeper" / "r.json")
    one_line_error(invoke("matmul", "--size", "64", *QUICK, "--json", link),
                   "--json", "whose folder does not exist")
    assert not (tmp_path / "nowhere").exists()
    inside = tmp_path / "in.csv"  # a link to a new file in a folder that exists: written
    inside.symlink_to(tmp_path / "target.csv")
    assert invoke("report", RESULTS, "--csv", inside).exit_code == 0
    assert (tmp_path / "target.csv").read_text(encoding="utf-8").startswith("op,")


def test_best_keeps_a_markdown_report_when_nothing_was_measured(use_fake, tmp_path):
    # the run said "--markdown r.md is as it was", then --best wrote its SKIP rows and an
    # empty winners' section there
    later_kernel(tmp_path)
    report = tmp_path / "r.md"
    report.write_text("last week's report\n", encoding="utf-8")
    done = invoke("matmul", "--size", "32", *QUICK, "--kernels-dir", tmp_path,
                  "--variant", "later", "-p", "TILE=8,16", "--best", "--markdown", report)
    assert done.exit_code == 2, done.output
    assert report.read_text(encoding="utf-8") == "last week's report\n"


def test_a_best_out_that_cannot_be_written_costs_not_the_record(use_fake, tmp_path,
                                                                monkeypatch):
    # a full disk under --best-out ended the command before --record: the run was not
    # recorded, and nothing said so
    from cudabench.cli import best
    from cudabench.errors import UsageError

    def full(path, text, flag):
        raise UsageError(f"{flag} {path}: cannot write: [Errno 28] No space left")

    monkeypatch.setattr("cudabench.common.outfiles.write_text", full)
    monkeypatch.setattr(best, "suite_text", lambda *args, **kwargs: "suite")
    db = tmp_path / "h.db"
    done = invoke("matmul", "--size", "32", *QUICK, "--variant", "naive", "-p", "TILE=8,16",
                  "--best", "--best-out", tmp_path / "best.toml", "--record", "--db", db,
                  "--json", tmp_path / "r.json")
    assert done.exit_code == 2, done.output
    assert done.stderr.strip().splitlines()[-1].startswith("cudabench: error: --best-out")
    from cudabench.history.store import Store

    with Store.open(db) as store:
        assert store.benchmarks()  # recorded


def test_ctrl_c_in_best_s_head_to_head_says_where_the_unrecorded_run_is(use_fake, tmp_path,
                                                                        monkeypatch):
    from cudabench.cli import best

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(best, "choose", stopped)
    monkeypatch.chdir(tmp_path)
    done = invoke("matmul", "--size", "32", *QUICK, "--variant", "naive", "-p", "TILE=8,16",
                  "--best", "--record", "--db", tmp_path / "h.db")
    assert done.exit_code == 130, done.output
    said = " ".join(done.stderr.split())
    assert "not recorded: record them with `cudabench history import" in said, said


def test_ctrl_c_in_a_search_s_head_to_head_says_where_its_configurations_are(
        use_fake, tmp_path, monkeypatch):
    # "the rows are as the tables showed them": a search shows no run tables
    from cudabench.cli import best

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(best, "choose", stopped)
    monkeypatch.setenv("CUDABENCH_CACHE_DIR", str(tmp_path / "cache"))
    done = invoke("matmul", "--size", "32", *QUICK, "--variant", "naive", "-p", "TILE=8,16",
                  "--best", "--budget", "2")
    assert done.exit_code == 130, done.output
    assert "stopped during --best's head-to-head re-measure: the configurations measured are " \
        "in the tuning cache" in " ".join(done.stderr.split()), done.stderr


@pytest.mark.parametrize("flag", ["--json", "--csv", "--markdown"])
def test_an_output_naming_an_open_stream_is_refused(use_fake, tmp_path, flag):
    # `--markdown /dev/stderr 2>>ci.log`: /dev/stderr links to ci.log, which the output,
    # renamed over it, replaced: the CI log so far was lost
    log = tmp_path / "ci.log"
    log.write_text("the log so far\n", encoding="utf-8")
    link = tmp_path / "err"
    with log.open("a", encoding="utf-8") as handle:
        os.symlink(f"/proc/self/fd/{handle.fileno()}", link)
        for path in (f"/dev/fd/{handle.fileno()}", f"/proc/self/fd/{handle.fileno()}", link):
            result = invoke("dot", "--size", "100", *QUICK, flag, path)
            one_line_error(result, f"{flag} {path}: names an open stream")
    assert log.read_text(encoding="utf-8") == "the log so far\n"


def test_a_header_a_kernel_includes_from_outside_its_folder_is_not_written_over(use_fake,
                                                                               tmp_path):
    # only the kernel folders' files were protected: `#include "../../shared.cuh"` was not
    kernels = Path(__file__).parents[1] / "kernels" / "dot"
    shared = tmp_path / "shared.cuh"
    shared.write_text((kernels / "tree_reduce.cuh").read_text(encoding="utf-8"),
                      encoding="utf-8")
    folder = tmp_path / "kd" / "dot"
    folder.mkdir(parents=True)
    source = (kernels / "atomic.cu").read_text(encoding="utf-8")
    assert '"tree_reduce.cuh"' in source
    (folder / "mine.cu").write_text(source.replace('"tree_reduce.cuh"', '"../../shared.cuh"'),
                                    encoding="utf-8")
    before = shared.read_text(encoding="utf-8")
    for flag in ("--markdown", "--csv", "--json"):
        one_line_error(invoke("dot", "--size", "100", *QUICK, "--kernels-dir",
                              tmp_path / "kd", "--variant", "mine", flag, shared),
                       f"{flag} {shared}: that is one of the files this command reads")
    assert shared.read_text(encoding="utf-8") == before


def test_an_output_name_that_is_not_utf8_is_written(use_fake, tmp_path):
    # a file name's bytes need not be UTF-8: its lock's name failed to encode (exit 4)
    name = os.fsdecode(b"\xff\xfe.json")
    result = invoke("dot", "--size", "100", *QUICK, "--json", tmp_path / name)
    assert result.exit_code == 0, result.output
    assert (tmp_path / name).is_file()


def test_a_json_output_named_gz_is_gzip_compressed(use_fake, tmp_path):
    # `--json out.json.gz` wrote plain JSON under a gzip name (zcat refused it)
    import gzip

    from cudabench.results import load_results

    path = tmp_path / "out.json.gz"
    for _ in range(2):  # written, then replaced
        result = invoke("dot", "--size", "100", *QUICK, "--json", path)
        assert result.exit_code == 0, result.output
        document = json.loads(gzip.decompress(path.read_bytes()))
        assert document["kind"] == "cudabench-results" and document["complete"] is True
    assert load_results(path).benchmarks


@pytest.mark.parametrize(("command", "output"), [
    (("transpose", "--size", "64", *QUICK, "--json"), "kernels/matmul/naive.cu"),
    (("dot", "--size", "100", *QUICK, "--markdown"), "cudabench/ops/matmul.py"),
    (("report", str(RESULTS), "--html"), "kernels/dot/new.html"),
])
def test_no_output_lands_among_cudabench_s_own_code_and_kernels(use_fake, command, output):
    # only the files a run's plans read were protected: a transpose run's --json over
    # matmul's kernel, or a report into the kernels folder, broke every later run
    path = Path(__file__).parents[1] / output
    before = path.read_bytes() if path.exists() else None
    try:
        one_line_error(invoke(*command, path),
                       f"{path}: lies among cudabench's own code and kernels")
    finally:
        after = path.read_bytes() if path.exists() else None
        if after != before:  # put the checkout back as it was, then fail
            if before is None:
                path.unlink()
            else:
                path.write_bytes(before)
        assert after == before


def test_no_history_store_lands_among_cudabench_s_own_kernels(tmp_path):
    # `history import --db kernels/matmul/y.cu` (and Results.record) wrote a store there:
    # every later run failed to read it as a kernel
    path = Path(__file__).parents[1] / "kernels" / "matmul" / "store.cu"
    try:
        done = invoke("history", "import", RESULTS, "--db", path)
        assert done.exit_code == 2, done.output
        assert "lies among cudabench's own code and kernels" in done.stderr
    finally:
        for leftover in path.parent.glob("store.cu*"):
            leftover.unlink()
    assert not path.exists()


def test_a_failed_write_of_the_streamed_file_is_said_as_it_happens(use_fake, tmp_path,
                                                                   monkeypatch):
    # said only at the end, if at all; and streaming stopped for the rest of the run
    from helpers import first_write_fails

    calls = first_write_fails(monkeypatch)
    out = tmp_path / "r.json"
    done = invoke("matmul", "--size", "64", *QUICK, "--json", out)
    assert done.exit_code == 0, done.output
    assert f"note: --json {out}: cannot write: No space left on device; the run goes on, " \
        "and writes the file again with the next rows" in " ".join(done.stderr.split())
    assert calls.count(False) >= 2  # the next row's write was tried


@pytest.mark.parametrize("flag, name", [("--best-out", "pyproject.toml"),
                                        ("--best-out", "cudabench.toml"),
                                        ("--csv", "suite.toml"), ("--markdown", "op.py"),
                                        # scripts, build files and configs: replaced
                                        ("--markdown", "build.sh"), ("--csv", "tsconfig.json"),
                                        ("--best-out", "Makefile"), ("--csv", ".gitignore"),
                                        ("--markdown", "LICENSE"),
                                        ("--best-out", "CMakeLists.txt")])
def test_no_output_replaces_a_user_s_code_or_configuration(use_fake, tmp_path, flag, name):
    # --best-out's head says "paste into" a suite: pointed at one, it replaced it
    target = tmp_path / name
    target.write_text('[project]\nname = "mine"\n', encoding="utf-8")
    args = ("--best",) if flag == "--best-out" else ()
    done = invoke("matmul", "--size", "64", *QUICK, "--tile", "8,16", *args, flag, target)
    assert done.exit_code == 2, done.output
    said = " ".join(done.stderr.split())
    kind = target.suffix or target.name
    if flag == "--best-out" and kind == ".toml":  # its suite's name: not one of the user's
        assert f"{flag} {target}: is a source or configuration file ({kind}) that cudabench " \
            "did not write" in said
    else:
        assert f"{flag} {target}: {kind} is a name of code or configuration, not of an " \
            "output" in said
    assert target.read_text(encoding="utf-8") == '[project]\nname = "mine"\n'


@pytest.mark.parametrize("flag, name, hint", [("--markdown", "x.py", "name it e.g. x.md"),
                                              ("--csv", "out.toml", "name it e.g. out.csv"),
                                              ("--html", "run.sh", "name it e.g. run.html"),
                                              ("--best-out", "best.py",
                                               "name it e.g. best.toml")])
def test_no_output_takes_a_name_of_code_or_configuration(use_fake, tmp_path, flag, name,
                                                         hint):
    # `--markdown x.py` was written, then the same command was refused: "a source file
    # that cudabench did not write", though cudabench wrote it
    target = tmp_path / name
    args = ("--best",) if flag == "--best-out" else ()
    command = (("report", RESULTS) if flag == "--html"
               else ("matmul", "--size", "64", *QUICK, "--tile", "8,16", *args))
    for _ in range(2):
        done = invoke(*command, flag, target)
        assert done.exit_code == 2, done.output
        assert f"{flag} {target}: {target.suffix} is a name of code or configuration, " \
            f"not of an output" in " ".join(done.stderr.split())
        assert hint in done.stderr and "did not write" not in done.stderr
        assert not target.exists()


@pytest.mark.parametrize("flag, link, name", [("--markdown", "summary.md", "cudabench.toml"),
                                              ("--csv", "out.csv", "Makefile"),
                                              ("--best-out", "best.txt", "mine.toml")])
def test_no_output_replaces_code_or_configuration_through_a_link(use_fake, tmp_path, flag,
                                                                  link, name):
    # judged by the link's own name: `summary.md -> cudabench.toml` replaced the suite
    target = tmp_path / name
    target.write_text('[project]\nname = "mine"\n', encoding="utf-8")
    (tmp_path / link).symlink_to(name)
    args = ("--best",) if flag == "--best-out" else ()
    done = invoke("matmul", "--size", "64", *QUICK, "--tile", "8,16", *args, flag,
                  tmp_path / link)
    assert done.exit_code == 2, done.output
    said = " ".join(done.stderr.split())
    kind = target.suffix or target.name
    if flag == "--best-out":
        assert f"{flag} {tmp_path / link}: is a source or configuration file ({kind}, " \
            f"through a link to {target}) that cudabench did not write" in said
    else:
        assert f"{flag} {tmp_path / link}: links to {target}; {kind} is a name of code or " \
            "configuration" in said
    assert target.read_text(encoding="utf-8") == '[project]\nname = "mine"\n'


def test_best_out_replaces_what_it_wrote_before(use_fake, tmp_path):
    best = tmp_path / "best.toml"
    for _ in range(2):
        done = invoke("matmul", "--size", "64", *QUICK, "--tile", "8,16", "--best",
                      "--best-out", best)
        assert done.exit_code == 0, done.output
    assert best.read_text(encoding="utf-8").startswith("# Written by cudabench --best")


def test_a_results_file_with_a_byte_order_mark_is_measured_data(use_fake, tmp_path):
    # loaded as results since the loader takes a BOM, yet --markdown replaced it
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + RESULTS.read_bytes())
    done = invoke("matmul", "--size", "64", *QUICK, "--markdown", bom)
    assert done.exit_code == 2 and "is a cudabench results file" in done.stderr, done.output
    assert bom.read_bytes().startswith(b"\xef\xbb\xbf{")


def test_a_lock_folder_of_another_user_names_no_writer(tmp_path, monkeypatch):
    # claim_output takes no lock in a lock folder another user owns; writer_of believed its
    # lock files: a planted one blocked this user's run and made history import skip a file
    import os
    import subprocess
    import sys

    from cudabench.common import outfiles

    monkeypatch.setattr(outfiles.tempfile, "gettempdir", lambda: str(tmp_path))
    other = os.getuid() + 1  # the folder's name is this uid's; its owner is not
    monkeypatch.setattr(outfiles.os, "getuid", lambda: other)
    folder, lock = outfiles._lock_of(outfiles.target(tmp_path / "victim.json"))
    folder.mkdir()
    lock.write_text("31337\n")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys\n"
         f"h = open({str(lock)!r}, 'a')\nfcntl.lockf(h, fcntl.LOCK_EX)\n"
         "print('held', flush=True)\nsys.stdin.read()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert outfiles.writer_of(tmp_path / "victim.json") is None
    finally:
        holder.communicate("", timeout=30)


@pytest.mark.parametrize("owner", ["another user", "me", "my folder"])
def test_another_user_s_file_in_a_sticky_folder_is_refused_before_the_run(
        use_fake, tmp_path, monkeypatch, owner):
    # /tmp (1777) with a file mode 666 another user owns: os.access said yes, the whole run
    # happened, and the rename at its end failed (EPERM), its rows left in a .partial
    import os

    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    kept = existing(sticky, "r.json")
    (sticky / "r.json").chmod(0o666)
    me = os.stat(sticky).st_uid + 1  # neither the file's owner nor the folder's
    if owner != "another user":
        if os.geteuid() != 0:
            pytest.skip("giving a file to another user takes root")
        os.chown(sticky / "r.json" if owner == "me" else sticky, me, -1)
    monkeypatch.setattr("os.geteuid", lambda: me)
    result = invoke("matmul", "--size", "64", *QUICK, "--json", sticky / "r.json")
    if owner != "another user":  # the owner of the file or of its folder may replace it
        assert result.exit_code == 0, result.output
        return
    one_line_error(result, f"--json {sticky / 'r.json'}: cannot replace it",
                   "another user's", "sticky folder")
    unchanged(kept)
    assert sorted(path.name for path in sticky.iterdir()) == ["r.json"]


@pytest.mark.parametrize("old", [True, False])
@pytest.mark.parametrize("renamed", [False, True])
def test_a_stop_in_the_final_write_of_the_results_file_says_where_its_rows_are(
        use_fake, tmp_path, monkeypatch, old, renamed):
    # the end's write ran outside the stop's handling: an existing file's rows were left in
    # its .partial, a new file incomplete, without a word
    from cudabench.results import load_results

    path = tmp_path / "r.json"
    kept = existing(tmp_path, "r.json") if old else {}
    stop_in_the_final_write(monkeypatch, path, renamed)
    result = invoke("matmul", "--size", "64,128", "--variant", "naive", *QUICK, "--json", path)
    assert result.exit_code == 130, result.output
    said = " ".join(result.stderr.split())
    partial = tmp_path / "r.json.partial"
    if renamed:  # every row is in the file: nothing is left beside it
        assert f"the run stopped once its results file was written: its 2 rows are in " \
               f"{path}" in said, said
        assert load_results(path).metadata["complete"] is True and not partial.exists()
    elif old:
        assert f"the run stopped: 2 of its rows are in {partial}" in said, said
        assert f"{path} is as it was" in said
        unchanged(kept)
    else:
        assert f"the run stopped: 2 of its rows are in {path}, marked incomplete" in said
        assert load_results(path).metadata["complete"] is False
    assert said.endswith("cudabench: interrupted"), said


def test_a_hard_link_to_a_file_being_written_is_said_so_not_a_stopped_run(use_fake,
                                                                           tmp_path):
    # the lock was keyed on the path alone: `ln r.json hard.json` while a run wrote r.json,
    # then `--json hard.json`, was told it "holds the rows of a run that stopped"
    import subprocess
    import sys

    streaming, hard = tmp_path / "r.json", tmp_path / "hard.json"
    writer = subprocess.Popen(
        [sys.executable, "-c", "import sys\nfrom pathlib import Path\n"
         "from cudabench.results.writer import ResultsWriter\n"
         f"w = ResultsWriter(Path({str(streaming)!r}))\n"
         "for line in sys.stdin:\n    w.write(complete=False)\n"
         "    print('written', flush=True)\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert writer.stdin is not None and writer.stdout is not None
    try:
        writer.stdin.write("\n")
        writer.stdin.flush()
        assert writer.stdout.readline() == "written\n"
        os.link(streaming, hard)
        for _ in range(2):  # the next write replaces r.json: hard.json keeps its rows so far
            one_line_error(invoke("dot", "--size", "100", *QUICK, "--json", hard),
                           f"--json {hard}: another cudabench run is writing it now (pid "
                           f"{writer.pid})")
            writer.stdin.write("\n")
            writer.stdin.flush()
            assert writer.stdout.readline() == "written\n"
    finally:
        writer.communicate("", timeout=30)
    one_line_error(invoke("dot", "--size", "100", *QUICK, "--json", hard),
                   "holds the rows of a run that stopped")


def test_a_writer_locks_each_file_it_wrote_while_a_name_holds_it(tmp_path, monkeypatch):
    from cudabench.common import outfiles
    from cudabench.results.writer import ResultsWriter

    monkeypatch.setattr(outfiles.tempfile, "gettempdir", lambda: str(tmp_path / "locks"))
    (tmp_path / "locks").mkdir()
    path, hard = tmp_path / "r.json", tmp_path / "hard.json"
    writer = ResultsWriter(path)
    files = lambda: sorted(outfiles._lock_folder().glob("file-*.lock"))  # noqa: E731
    for _ in range(3):
        writer.write(complete=False)
        assert len(files()) == 1  # the file written last: the others have no name
    os.link(path, hard)
    assert outfiles.writer_of(hard) == "this process"
    writer.write(complete=False)
    assert len(files()) == 2 and outfiles.writer_of(hard) == "this process"
    writer.close()
    assert files() == [] and outfiles.writer_of(hard) is None


@pytest.mark.parametrize("name, hint", [(".md", "out.md"), (".bashrc", "bashrc.md")])
def test_a_dotfile_named_as_an_output_is_told_a_name_of_its_kind(use_fake, tmp_path, name,
                                                                 hint):
    # `--markdown .md` was told to name it e.g. .md.md: a dotfile again
    done = invoke("matmul", "--size", "64", *QUICK, "--markdown", tmp_path / name)
    one_line_error(done, f"{name} is a name of code or configuration", f"name it e.g. {hint}")
