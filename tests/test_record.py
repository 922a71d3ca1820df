"""--record and --check, compare --threshold auto / --power / --html / --csv, calibrate."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudabench.cli import cli
from cudabench.history.store import Store

QUICK = ["--warmup", "0", "--min-samples", "8", "--max-time", "0.05", "--no-vendor",
         "--no-batch"]


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_record_keeps_the_run_and_adds_it_to_the_store(use_fake, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    done = invoke("dot", "--size", "1000", *QUICK, "--record")
    assert done.exit_code == 0, done.output
    kept = list((tmp_path / ".cudabench" / "runs").glob("*.json"))
    assert len(kept) == 1 and "recorded as run 1" in done.stdout
    with Store.open(tmp_path / ".cudabench" / "history.db") as store:
        assert store.counts()["runs"] == 1
    # the next run joins it: the store it made was refused as "an SQLite database ...
    # which this output would replace", and --record worked once per folder
    for given in ([], ["--db", ".cudabench/history.db"]):
        use_fake(seed=len(given) + 1)
        again = invoke("dot", "--size", "1000", *QUICK, "--record", *given)
        assert again.exit_code == 0, again.output
    with Store.open(tmp_path / ".cudabench" / "history.db") as store:
        assert store.counts()["runs"] == 3


def test_cudabench_history_db_is_every_command_s_store(use_fake, tmp_path, monkeypatch):
    # only the `history` commands read it: --record wrote .cudabench/history.db, and
    # `history check` of the variable's store passed every run as "too little history"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CUDABENCH_HISTORY_DB", str(tmp_path / "shared.db"))
    done = invoke("dot", "--size", "1000", *QUICK, "--record", "--json", "r.json")
    assert done.exit_code == 0, done.output
    assert not (tmp_path / ".cudabench" / "history.db").exists()
    with Store.open(tmp_path / "shared.db") as store:
        assert store.counts()["runs"] == 1
    use_fake(seed=2)
    again = invoke("dot", "--size", "1000", *QUICK, "--record", "--json", "r2.json")
    assert again.exit_code == 0, again.output  # the variable's store, recorded into again
    with Store.open(tmp_path / "shared.db") as store:
        assert store.counts()["runs"] == 2
    use_fake()
    shown = invoke("history", "show")
    assert shown.exit_code == 0 and "dot" in shown.stdout, shown.output
    use_fake(seed=1)
    assert invoke("dot", "--size", "1000", *QUICK, "--json", "s.json").exit_code == 0
    compared = invoke("compare", "r.json", "s.json", "--threshold", "auto")
    assert compared.exit_code == 0, compared.output
    assert "only 2 runs in history" in compared.output, compared.output  # the shared store
    assert "CUDABENCH_HISTORY_DB" in invoke("dot", "--help").stdout


def test_record_s_own_file_is_checked_before_the_run(use_fake, tmp_path, monkeypatch):
    # a file where .cudabench/runs goes was an internal error (exit 4); a read-only folder
    # there lost the whole measured run at its end
    monkeypatch.chdir(tmp_path)
    heard = []
    monkeypatch.setattr("cudabench.cli.commands.run_plans",
                        lambda *args, **kwargs: heard.append(args))
    (tmp_path / ".cudabench").write_text("not a folder\n", encoding="utf-8")
    done = invoke("dot", "--size", "1000", *QUICK, "--record", "--db", "h.db")
    assert done.exit_code == 2 and "--record .cudabench/runs/" in done.output, done.output
    assert "is a file, not a folder" in done.output and not heard
    assert (tmp_path / ".cudabench").read_text(encoding="utf-8") == "not a folder\n"


def record_runs(use_fake, tmp_path, db, count: int) -> None:
    """Record count runs of `cudabench dot` (other seeds: other samples) in db."""
    for seed in range(count):
        use_fake(seed=seed)
        done = invoke("dot", "--size", "1000", *QUICK, "--record", "--db", str(db),
                      "--json", str(tmp_path / f"r{seed}.json"))
        assert done.exit_code == 0, done.output


def test_record_check_gates_on_history(use_fake, tmp_path):
    db = tmp_path / "h.db"
    record_runs(use_fake, tmp_path, db, 5)
    use_fake(seed=9, slowdown={"atomic": 1.3})
    done = invoke("dot", "--size", "1000", *QUICK, "--record", "--check", "--db", str(db),
                  "--json", str(tmp_path / "slow.json"))
    assert done.exit_code == 1, done.output
    assert "slower" in done.stdout


def at_commit(monkeypatch, commit: str) -> None:
    """Make the runs that follow record commit as theirs."""
    monkeypatch.setattr("cudabench.results.writer.git_commit",
                        lambda folder: {"git_commit": commit, "git_dirty": False})


def test_record_check_fails_a_kernel_the_command_s_last_runs_had(use_fake, tmp_path,
                                                                 monkeypatch):
    # Under CliRunner every run's command is this process's own: the same command each time.
    db = tmp_path / "h.db"
    for seed in range(3):  # three commits that measured every kernel
        at_commit(monkeypatch, f"{seed:040x}")
        use_fake(seed=seed)
        assert invoke("dot", "--size", "1000", *QUICK, "--record", "--db", str(db),
                      "--json", str(tmp_path / f"r{seed}.json")).exit_code == 0
    at_commit(monkeypatch, "f" * 40)
    # Each re-run of the job fails: its own recorded runs (at its commit) do not vote; two
    # re-runs outvoted the three runs before, and the third passed.
    for again in range(4):
        use_fake(seed=10 + again)
        done = invoke("dot", "--size", "1000", *QUICK, "--variant", "atomic", "--record",
                      "--check", "--db", str(db), "--json", str(tmp_path / f"fewer{again}.json"))
        assert done.exit_code == 1 and "missing" in done.stdout, (again, done.output)
    use_fake(seed=20)
    done = invoke("dot", "--size", "1000", *QUICK, "--variant", "atomic", "--record",
                  "--check", "--allow-missing", "--db", str(db),
                  "--json", str(tmp_path / "meant.json"))
    assert done.exit_code == 0, done.output
    # Runs that failed the gate are no level of the drop, over any number of commits: the
    # kernel stays missing. Dropped over three commits in runs that passed (recorded with
    # --allow-missing), it is no longer missing (as a slowdown that stays over three
    # commits is a step the history follows).
    for commit, allow in (("e", False), ("d", False), ("c", True), ("b", True), ("a", True),
                          ("9", False)):
        at_commit(monkeypatch, commit * 40)
        use_fake(seed=ord(commit))
        done = invoke("dot", "--size", "1000", *QUICK, "--variant", "atomic", "--record",
                      "--check", *(["--allow-missing"] if allow else []), "--db", str(db),
                      "--json", str(tmp_path / f"{commit}.json"))
        assert done.exit_code == (0 if allow or commit == "9" else 1), (commit, done.output)


def test_the_suite_named_or_not_is_one_command_to_the_missing_check():
    from cudabench.history.records import command_key, comparable_key

    forms = [["cudabench", "run"], ["cudabench", "run", "cudabench.toml"],
             ["cudabench", "run", "./cudabench.toml", "--record"],
             ["cudabench", "run", "--record", "ci/../cudabench.toml"]]
    keys = {comparable_key(command_key(form)) for form in forms}
    assert len(keys) == 1
    assert comparable_key(command_key(["cudabench", "run", "other.toml"])) not in keys
    assert comparable_key('{"not": "a list"}') == '{"not": "a list"}'


def test_pyproject_suite_named_or_not_is_one_command_where_bare_run_loads_it(tmp_path,
                                                                              monkeypatch):
    # only cudabench.toml was dropped: a suite in pyproject.toml's [tool.cudabench] that
    # dropped a kernel passed `run pyproject.toml --record --check` after bare `run`s
    from cudabench.history.records import command_key, comparable_key

    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.cudabench]\n")
    forms = [["cudabench", "run"], ["cudabench", "run", "pyproject.toml"],
             ["cudabench", "run", "./pyproject.toml", "--record"]]
    assert len({comparable_key(command_key(form)) for form in forms}) == 1
    (tmp_path / "cudabench.toml").write_text("")  # what bare `run` loads now
    assert comparable_key(command_key(forms[1])) != comparable_key(command_key(forms[0]))
    assert comparable_key(command_key(["cudabench", "run", "cudabench.toml"])) == \
        comparable_key(command_key(forms[0]))


def as_typed(monkeypatch, *args: str):
    """Invoke the CLI with args as the command its results file records (sys.argv)."""
    monkeypatch.setattr("sys.argv", ["cudabench", *map(str, args)])
    return invoke(*map(str, args))


DOT_SUITE = ("[timing]\nmax_time = 0.05\nmin_samples = 8\nwarmup = 0\n\n"
             '[[benchmark]]\nop = "dot"\nsize = "1000"\nvariants = {}\n')


def test_a_kernel_dropped_from_a_pyproject_suite_is_missing_when_the_suite_is_named(
        use_fake, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    suite = tmp_path / "pyproject.toml"
    suite.write_text(DOT_SUITE.replace("[timing]", "[tool.cudabench.timing]")
                     .replace("[[benchmark]]", "[[tool.cudabench.benchmark]]")
                     .format('["atomic", "shared_tree"]'))
    for seed in range(3):
        at_commit(monkeypatch, f"{seed:040x}")
        use_fake(seed=seed)
        assert as_typed(monkeypatch, "run", "--no-vendor", "--record", "--db", "h.db"
                        ).exit_code == 0
    suite.write_text(suite.read_text().replace('"atomic", "shared_tree"', '"atomic"'))
    at_commit(monkeypatch, "f" * 40)
    use_fake(seed=9)
    done = as_typed(monkeypatch, "run", "pyproject.toml", "--no-vendor", "--record", "--check",
                    "--db", "h.db")
    assert done.exit_code == 1 and "missing" in done.stdout, done.output


def test_a_kernel_dropped_after_calibrate_is_missing(use_fake, tmp_path, monkeypatch):
    # calibrate's runs were recorded as `calibrate --runs 5`, another command than the
    # suite's `run`: after it, a dropped kernel passed `run --record --check`
    import itertools

    from cudabench.engines.fake_engine import FakeSpec

    seeds = itertools.count(1)
    monkeypatch.setattr("cudabench.cli.commands.engine_spec",
                        lambda device: FakeSpec(device_index=device, seed=next(seeds)))
    monkeypatch.chdir(tmp_path)
    suite = tmp_path / "cudabench.toml"
    suite.write_text(DOT_SUITE.format('["atomic", "shared_tree"]'))
    at_commit(monkeypatch, "a" * 40)
    assert as_typed(monkeypatch, "calibrate", "--runs", "5", "--db", "h.db").exit_code == 0
    kept = next((tmp_path / ".cudabench" / "runs").glob("calibrate-*-5.json"))
    assert json.loads(kept.read_text())["command"] == ["cudabench", "run"]
    suite.write_text(DOT_SUITE.format('["atomic"]'))
    at_commit(monkeypatch, "f" * 40)
    done = as_typed(monkeypatch, "run", "--record", "--check", "--db", "h.db")
    assert done.exit_code == 1 and "missing" in done.stdout, done.output


def test_a_store_s_older_calibrate_runs_are_the_suite_s_run():
    # stores that hold calibrate's runs under its own words get the missing check too
    from cudabench.history.records import command_key, comparable_key

    run = comparable_key(command_key(["cudabench", "run", "--kernels-dir", "k"]))
    for older in (["cudabench", "calibrate", "--runs", "5", "--kernels-dir", "k"],
                  ["cudabench", "calibrate", "cudabench.toml", "--runs=7", "--db", "h.db",
                   "--kernels-dir", "k"]):
        assert comparable_key(command_key(older)) == run, older
    assert comparable_key(command_key(["cudabench", "calibrate", "other.toml"])) != run


def test_check_needs_record(use_fake):
    done = invoke("dot", "--check")
    assert done.exit_code == 2 and "--record" in done.stderr


def test_db_needs_record(use_fake, tmp_path):
    # --db without --record was ignored: no store written, no word said
    done = invoke("dot", "--size", "1000", "--db", str(tmp_path / "x.db"))
    assert done.exit_code == 2 and "--db names the history store --record writes" in done.stderr
    assert not (tmp_path / "x.db").exists()


def run_file(use_fake, tmp_path, name, quick=QUICK, **spec):
    use_fake(**spec)
    path = tmp_path / name
    done = invoke("dot", "--size", "1000", *quick, "--json", str(path))
    assert done.exit_code == 0, done.output
    return path


def test_auto_threshold_is_the_floor_without_history_and_says_so(use_fake, tmp_path):
    a = run_file(use_fake, tmp_path, "a.json", seed=1)
    b = run_file(use_fake, tmp_path, "b.json", seed=2, slowdown={"atomic": 1.04})
    summary = tmp_path / "s.md"
    done = invoke("compare", str(a), str(b), "--db", str(tmp_path / "none.db"),
                  "--markdown", str(summary))
    assert done.exit_code == 1, done.output  # 4% is beyond the 2% floor
    text = summary.read_text()
    assert "floor: no history store" in text and "threshold auto per benchmark" in text
    fixed = invoke("compare", str(a), str(b), "--threshold", "5%")
    assert fixed.exit_code == 0, fixed.output  # the old 5% gate let 4% through
    # an empty file as --db (a CI cache step's `touch`) is no history either: it exited
    # 2, "the store is empty"
    (tmp_path / "empty.db").touch()
    empty = invoke("compare", str(a), str(b), "--db", str(tmp_path / "empty.db"),
                   "--markdown", str(summary))
    assert empty.exit_code == 1, empty.output
    assert "floor: an empty file at" in summary.read_text()


def test_auto_threshold_comes_from_history_when_there_is_enough(use_fake, tmp_path):
    db = tmp_path / "h.db"
    files = [run_file(use_fake, tmp_path, f"r{i}.json", seed=i) for i in range(6)]
    assert invoke("history", "import", *map(str, files), "--db", str(db)).exit_code == 0
    done = invoke("compare", str(files[0]), str(files[1]), "--db", str(db))
    assert done.exit_code == 0, done.output
    assert "history: 6 runs" in done.stdout


def test_power_says_what_the_gate_can_catch(use_fake, tmp_path):
    a = run_file(use_fake, tmp_path, "a.json", seed=1)
    b = run_file(use_fake, tmp_path, "b.json", seed=2)
    out = tmp_path / "c.csv"
    done = invoke("compare", str(a), str(b), "--power", "--csv", str(out), "--db",
                  str(tmp_path / "none.db"))
    assert done.exit_code == 0, done.output
    assert "catches >=" in done.stdout
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert {r["verdict"] for r in rows} <= {"same", "noisy", "faster", "slower"}


def test_compare_csv_keeps_the_threshold_column(tmp_path):
    # the table's threshold column, as numbers: the CSV had no threshold at all
    data = Path(__file__).parent / "data" / "compare"
    out = tmp_path / "c.csv"
    done = invoke("compare", str(data / "baseline.json"), str(data / "slower20.json"),
                  "--power", "--csv", str(out), "--db", str(tmp_path / "none.db"))
    assert done.exit_code == 1, done.output
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert rows and all(float(r["threshold"]) == 0.02 for r in rows)
    assert all(r["threshold_source"].startswith("floor: no history store") for r in rows)
    assert all(0 < float(r["detectable"]) for r in rows)
    plain = invoke("compare", str(data / "baseline.json"), str(data / "slower20.json"),
                   "--threshold", "5%", "--csv", str(out))
    assert plain.exit_code == 1, plain.output
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    # "--threshold" behind the ' that keeps a spreadsheet from reading it as a formula
    assert {(r["threshold"], r["threshold_source"], r["detectable"]) for r in rows} == {
        ("0.05", "'--threshold", "")}


def test_compare_html_is_one_self_contained_file(use_fake, tmp_path):
    a = run_file(use_fake, tmp_path, "a.json", seed=1)
    b = run_file(use_fake, tmp_path, "b.json", seed=2)
    page = tmp_path / "c.html"
    done = invoke("compare", str(a), str(b), "--html", str(page))
    assert done.exit_code == 0, done.output
    text = page.read_text()
    assert "<table" in text and "dot/atomic" in text and "http://" not in text


def test_calibrate_runs_the_suite_into_the_store(use_fake, tmp_path, monkeypatch):
    # Each run on a fake GPU of its own seed: the fake's samples repeat exactly, and with
    # the CPU reference's time from the reference cache, two runs ending in the same second
    # wrote the same file, which the store records once (3 runs of 5, under load). A GPU's
    # runs never repeat exactly.
    import itertools

    from cudabench.engines.fake_engine import FakeSpec

    seeds = itertools.count(1)
    monkeypatch.setattr("cudabench.cli.commands.engine_spec",
                        lambda device: FakeSpec(device_index=device, seed=next(seeds)))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cudabench.toml").write_text(
        '[timing]\nmax_time = 0.05\nmin_samples = 8\nwarmup = 0\n\n'
        '[[benchmark]]\nop = "dot"\nsize = "1000"\n')
    monkeypatch.delenv("CUDABENCH_HISTORY_DB", raising=False)
    done = invoke("calibrate", "--runs", "5")  # the default store: run 2 was refused
    assert done.exit_code == 0, done.output
    assert "compare --threshold auto after 5 runs" in done.stdout
    with Store.open(tmp_path / ".cudabench" / "history.db") as store:
        assert store.counts()["runs"] == 5
    json.loads(next((tmp_path / ".cudabench" / "runs").glob("calibrate-*-5.json")).read_text())
    fewer = invoke("calibrate", "--runs", "3", "--db", str(tmp_path / "h.db"))
    assert fewer.exit_code == 2 and "--runs" in fewer.output  # auto needs 5 runs


def test_calibrate_lists_the_gates_compare_applies(use_fake, tmp_path, monkeypatch):
    # calibrate listed a gate for the cuBLAS and copy rows, which compare never gates, and
    # "floor 2%: only 0 runs in history" for a row that failed in each of its 5 runs
    import itertools

    from cudabench.engines.fake_engine import FakeSpec, Fault

    seeds = itertools.count(1)
    monkeypatch.setattr("cudabench.cli.commands.engine_spec",
                        lambda device: FakeSpec(device_index=device, seed=next(seeds),
                                                faults={"tiled": Fault.WRONG_ELEMENT}))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cudabench.toml").write_text(
        '[timing]\nmax_time = 0.05\nmin_samples = 8\nwarmup = 0\n\n'
        '[[benchmark]]\nop = "matmul"\nsize = "64"\nvariants = ["naive", "tiled"]\n')
    done = invoke("calibrate", "--runs", "5", "--db", str(tmp_path / "h.db"))
    assert done.exit_code == 3, done.output  # tiled fails verification
    table = done.stdout[done.stdout.index("compare --threshold auto after 5 runs"):]
    assert "matmul/naive" in table and "cuBLAS" not in table, table
    tiled = next(line for line in table.splitlines() if "matmul/tiled" in line)
    assert "FAIL in the last run" in tiled and "only 0 runs" not in tiled, table


def test_calibrate_in_a_folder_it_cannot_keep_runs_in_is_one_line(use_fake, tmp_path,
                                                                   monkeypatch):
    # NotADirectoryError: an internal error (exit 4)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cudabench.toml").write_text('[[benchmark]]\nop = "dot"\nsize = "1000"\n')
    (tmp_path / ".cudabench").write_text("")
    done = invoke("calibrate", "--runs", "5", "--db", str(tmp_path / "h.db"))
    assert done.exit_code == 2, done.output
    assert "calibrate: cannot make .cudabench/runs for the runs' results files" in done.stderr


def test_a_store_record_cannot_use_is_refused_before_anything_is_measured(use_fake, tmp_path,
                                                                          monkeypatch):
    monkeypatch.chdir(tmp_path)
    notes = tmp_path / "notes.json"
    notes.write_text('{"not": "a store"}\n', encoding="utf-8")
    measured = []
    monkeypatch.setattr("cudabench.cli.commands.run_plans",
                        lambda *a, **k: measured.append(1))  # reached: measured for nothing
    done = invoke("dot", "--size", "1000", *QUICK, "--record", "--db", str(notes))
    assert done.exit_code == 2 and "not a cudabench history store" in done.stderr, done.output
    assert not measured and not (tmp_path / ".cudabench").exists()
    suite = tmp_path / "cudabench.toml"
    suite.write_text('[[benchmark]]\nop = "dot"\nsize = "1000"\n', encoding="utf-8")
    done = invoke("calibrate", str(suite), "--db", str(suite))
    assert done.exit_code == 2 and "one of the files this command reads" in done.stderr
    assert not measured and suite.read_text(encoding="utf-8").startswith("[[benchmark]]")


def test_an_empty_store_file_is_recorded_into(use_fake, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "empty.db"
    db.write_bytes(b"")  # `--db $(mktemp)` in a CI job
    done = invoke("dot", "--size", "1000", *QUICK, "--record", "--db", str(db))
    assert done.exit_code == 0, done.output
    with Store.open(db) as store:
        assert store.counts()["runs"] == 1


def test_re_running_a_slow_job_keeps_failing(use_fake, tmp_path):
    # `--record --check` records the runs that fail the gate too: three of them once made a
    # step the check followed, and the fourth re-run passed as "too little history".
    db = tmp_path / "h.db"
    for seed in range(8):
        use_fake(seed=seed)
        done = invoke("dot", "--size", "4096", "--variant", "bulk", *QUICK, "--record",
                      "--db", str(db), "--json", str(tmp_path / f"r{seed}.json"))
        assert done.exit_code == 0, done.output
    for rerun in range(5):
        use_fake(seed=100 + rerun, slowdown={"bulk": 1.3})
        done = invoke("dot", "--size", "4096", "--variant", "bulk", *QUICK, "--record",
                      "--check", "--db", str(db), "--json", str(tmp_path / f"s{rerun}.json"))
        assert done.exit_code == 1 and "slower" in done.stdout, (rerun, done.output)
    assert "newer runs since the step" in done.stdout and "left out" in done.stdout


def test_a_fix_is_judged_on_its_speed_against_the_passing_runs(use_fake, tmp_path):
    # The last recorded run failed verification: the next one was `fixed`, exit 0, at
    # whatever speed. Its speed is judged against the passing history now.
    from cudabench.engines.fake_kernels import Fault

    db = tmp_path / "h.db"
    record_runs(use_fake, tmp_path, db, 5)
    use_fake(seed=20, faults={"atomic": Fault.WRONG_ELEMENT})
    broken = invoke("dot", "--size", "1000", *QUICK, "--record", "--db", str(db),
                    "--json", str(tmp_path / "broken.json"))
    assert broken.exit_code == 3, broken.output  # a variant failed verification
    use_fake(seed=21, slowdown={"atomic": 2.0})
    assert invoke("dot", "--size", "1000", *QUICK, "--json",
                  str(tmp_path / "slow-fix.json")).exit_code == 0
    done = invoke("history", "check", str(tmp_path / "slow-fix.json"), "--db", str(db))
    assert done.exit_code == 1, done.output
    assert "slower" in done.stdout and "now PASS (last recorded FAIL), but" in done.stdout
    use_fake(seed=22)
    assert invoke("dot", "--size", "1000", *QUICK, "--json",
                  str(tmp_path / "fix.json")).exit_code == 0
    done = invoke("history", "check", str(tmp_path / "fix.json"), "--db", str(db))
    assert done.exit_code == 0 and "fixed" in done.stdout, done.output


def test_compare_html_draws_an_infinite_change_off_the_scale(use_fake, tmp_path):
    # Samples near 1e-9 s against 1e300 s: the change was +inf, and the plot's axis
    # limits raised (internal error, exit 4) where the command without --html exits 1.
    # Samples are at most a day now: the largest change, 1e-9 s against 1e4 s, is drawn.
    a = run_file(use_fake, tmp_path, "a.json", seed=1)
    b = run_file(use_fake, tmp_path, "b.json", seed=2)
    for path, scale in ((a, 1e-9), (b, 1e4)):
        document = json.loads(path.read_text())
        for row in document["benchmarks"]:
            if row["variant"] == "atomic":
                row["samples_s"] = [scale * (1 + i / 100) for i in range(len(row["samples_s"]))]
        path.write_text(json.dumps(document))
    plain = invoke("compare", str(a), str(b), "--threshold", "5%")
    assert plain.exit_code == 1, plain.output
    page = tmp_path / "c.html"
    done = invoke("compare", str(a), str(b), "--threshold", "5%", "--html", str(page))
    assert done.exit_code == 1, done.output
    assert "<svg" in page.read_text()  # the change figure drawn


def test_compare_says_how_many_samples_the_current_run_set_aside(use_fake, tmp_path):
    # a third of the samples taken at half the clock were set aside, and compare said
    # `same` with no word of them
    before = run_file(use_fake, tmp_path, "before.json", seed=1)
    after = run_file(use_fake, tmp_path, "after.json", seed=2, slow_clock_every=3)
    done = invoke("compare", str(before), str(after), "--threshold", "5%")
    text = " ".join(done.output.split())
    assert "dot/atomic" in text and " samples of the current run ran below 75% of the maximum SM" \
        " clock and were set aside: judged on the other " in text, done.output
    quiet = invoke("compare", str(after), str(before), "--threshold", "5%")
    assert "set aside" not in quiet.output


def test_a_run_whose_every_other_sample_ran_at_half_the_clock_is_slower(use_fake, tmp_path):
    # half the samples at half the clock (a kernel that makes the card throttle) were set
    # aside and the other half judged: `same`
    before = run_file(use_fake, tmp_path, "before.json", seed=1)
    # an even count of samples, each second slow: half exactly (an odd count under load,
    # one short of half, was not a kernel that makes the card throttle)
    even = [flag if flag != "--max-time" else "--max-samples" for flag in QUICK]
    even[even.index("--max-samples") + 1] = even[even.index("--min-samples") + 1] = "20"
    after = run_file(use_fake, tmp_path, "after.json", quick=even, seed=2, slow_clock_every=2)
    done = invoke("compare", str(before), str(after), "--threshold", "5%")
    assert done.exit_code == 1, done.output
    assert "the card throttles under this kernel" in " ".join(done.output.split())


def test_a_cap_beside_a_fixed_threshold_is_refused_not_ignored(tmp_path):
    # `--threshold 30% --max-threshold 10%` ran, the cap silently doing nothing
    for command in (["compare", "a.json", "b.json"], ["history", "check", "a.json"]):
        done = invoke(*command, "--threshold", "30%", "--max-threshold", "10%")
        assert done.exit_code == 2 and "--max-threshold caps --threshold auto only; with " \
            "--threshold 30% it does nothing" in done.stderr, done.output
        auto = invoke(*command, "--threshold", "auto", "--max-threshold", "10%")
        assert "--max-threshold caps" not in auto.stderr  # (then: a.json is missing)
    # compare's --db is the history of --threshold auto: beside 30%, read by nothing
    done = invoke("compare", "a.json", "b.json", "--threshold", "30%", "--db", "x.db")
    assert done.exit_code == 2 and "--db names the history store of --threshold auto only; " \
        "with --threshold 30% it does nothing" in done.stderr, done.output
    auto = invoke("compare", "a.json", "b.json", "--db", "x.db")
    assert "--db names" not in auto.stderr


def test_a_stop_before_the_run_is_recorded_says_where_it_is(use_fake, tmp_path, monkeypatch):
    # SIGTERM while the tables printed: no run in the store, and no word of the complete
    # results file in .cudabench/runs
    from cudabench.cli import commands

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(commands.terminal, "render_run", stopped)
    done = invoke("matmul", "--size", "64", "--variant", "naive", "--max-time", "0.01",
                  "--record", "--db", str(tmp_path / "h.db"))
    assert done.exit_code == 130, done.output
    text = " ".join(done.stderr.split())
    (kept,) = (tmp_path / ".cudabench" / "runs").glob("*.json")
    assert f"the run's results are in {kept.relative_to(tmp_path)}, not recorded: record " \
        f"them with `cudabench history import {kept.relative_to(tmp_path)} --db " in text, text


def test_record_s_own_store_is_named_by_record_not_a_db_never_given(use_fake, tmp_path,
                                                                    monkeypatch):
    # "--db .cudabench/history.db: is a folder..." named a flag the user never gave
    from helpers import invoke

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CUDABENCH_HISTORY_DB", raising=False)
    (tmp_path / ".cudabench" / "history.db").mkdir(parents=True)  # a folder: not writable
    done = invoke("dot", "--size", "4096", "--variant", "atomic", "--max-time", "0.01",
                  "--record")
    assert done.exit_code == 2 and "--record .cudabench/history.db:" in done.stderr, \
        done.stderr
    done = invoke("dot", "--size", "4096", "--variant", "atomic", "--max-time", "0.01",
                  "--record", "--db", ".cudabench/history.db")
    assert done.exit_code == 2 and "'--db'" in done.stderr, done.stderr  # given: named


@pytest.mark.parametrize("committed", [True, False])
def test_a_stop_as_the_run_is_recorded_says_whether_it_is(use_fake, tmp_path, monkeypatch,
                                                         committed):
    # a stop after the store's commit, as record_files printed what it added, still said
    # "not recorded: record them with cudabench history import": run twice, it is one run
    from cudabench.cli import history

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.chdir(tmp_path)
    if committed:
        monkeypatch.setattr(history, "_say", stopped)
    else:
        monkeypatch.setattr(Store, "record", stopped)
    db = tmp_path / "h.db"
    done = invoke("matmul", "--size", "64", "--variant", "naive", "--max-time", "0.01",
                  "--record", "--db", str(db))
    assert done.exit_code == 130, done.output
    text = " ".join(done.stderr.split())
    assert ("not recorded" in text) is not committed, text
    if committed:
        with Store.open(db) as store:
            assert len(store.runs()) == 1


@pytest.mark.parametrize("db", ["notes.json", "cudabench.toml"])
def test_calibrate_checks_its_store_before_its_first_run(use_fake, tmp_path, monkeypatch, db):
    # "calibrate: run 1 of 5" and an empty .cudabench/runs/ came before the refusal of a
    # --db that is no store (or the suite itself)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.json").write_text('{"not": "a store"}\n', encoding="utf-8")
    suite = tmp_path / "cudabench.toml"
    suite.write_text('[[benchmark]]\nop = "dot"\nsize = "1000"\n', encoding="utf-8")
    done = invoke("calibrate", str(suite), "--runs", "5", "--db", db)
    assert done.exit_code == 2, done.output
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cudabench: error: ") and db in lines[0], \
        done.stderr
    assert not (tmp_path / ".cudabench").exists()


def test_calibrate_refused_in_its_first_run_leaves_no_folder(use_fake, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cudabench.toml").write_text(
        '[[benchmark]]\nop = "dot"\nsize = "1000"\nvariants = ["nosuch"]\n', encoding="utf-8")
    done = invoke("calibrate", "--runs", "5", "--db", "h.db")
    assert done.exit_code == 2 and "nosuch" in done.stderr, done.output
    assert not (tmp_path / ".cudabench").exists()
