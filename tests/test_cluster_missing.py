"""--cluster without Ray installed: a one-line error that says how to get it."""

from __future__ import annotations

import sys

from click.testing import CliRunner

from cudabench.cli import cli


def test_without_ray_the_error_says_how_to_install_it(use_fake, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now fails
    try:
        runner = CliRunner(mix_stderr=False)
    except TypeError:
        runner = CliRunner()
    done = runner.invoke(cli, ["dot", "--size", "100", "--cluster", "ray"])
    assert done.exit_code == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "Ray is not installed" in lines[0] and "pip install 'ray>=2.9'" in lines[0]



def _invoke(*args: str):
    try:
        runner = CliRunner(mix_stderr=False)
    except TypeError:
        runner = CliRunner()
    return runner.invoke(cli, list(args))


def test_a_dry_run_on_a_cluster_says_ray_is_missing_not_that_this_host_has_no_gpu(
        use_fake, monkeypatch):
    # it said nothing of Ray, which the real run then stopped on (exit 2)
    monkeypatch.setitem(sys.modules, "ray", None)
    done = _invoke("dot", "--size", "100", "--cluster", "ray", "--dry-run")
    assert done.exit_code == 0, done.output
    said = " ".join((done.stdout + done.stderr).split())
    assert "on this machine a run would stop here: --cluster ray: Ray is not installed" in said


def test_the_cluster_s_nodes_run_the_tools_not_the_host_that_drives_it(use_fake, monkeypatch):
    # --counters and --sanitize were refused for want of ncu and compute-sanitizer on the
    # laptop that drives the cluster (the nodes run them)
    from cudabench.errors import UsageError

    def missing(*entry):  # find_sanitizer takes the suite entry that asks for it
        raise UsageError("needs Nsight Compute's ncu")

    monkeypatch.setattr("cudabench.observers.ncu.find_ncu", missing)
    monkeypatch.setattr("cudabench.observers.sanitizer.find_sanitizer", missing)
    monkeypatch.setitem(sys.modules, "ray", None)  # the run stops at Ray: the next check
    for flag in ("--counters", "--sanitize"):
        done = _invoke("dot", "--size", "100", "--cluster", "ray", flag)
        assert done.exit_code == 2 and "Ray is not installed" in done.stderr, done.stderr
        here = _invoke("dot", "--size", "100", flag)
        assert here.exit_code == 2 and "ncu" in here.stderr, here.stderr


def test_without_ray_a_ray_client_address_names_the_ray_client_extra(use_fake, monkeypatch):
    # "pip install 'ray>=2.9'" (the `ray` extra): the minimal Ray it installed then said
    # "Ray Client requires pip package ray[client]"
    monkeypatch.setitem(sys.modules, "ray", None)
    done = _invoke("dot", "--size", "100", "--cluster", "ray://127.0.0.1:10001")
    assert done.exit_code == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Ray is not installed" in lines[0], done.stderr
    assert "pip install 'ray[client]>=2.9' (cudabench's `ray-client` extra)" in lines[0], lines


def test_a_dry_run_without_ray_names_the_ray_client_extra_for_an_address(use_fake,
                                                                          monkeypatch):
    # the dry run's note named the `ray` extra, whose minimal Ray has no Ray Client
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "ray" else real(name, *args))
    done = _invoke("dot", "--size", "100", "--cluster", "ray://127.0.0.1:10001", "--dry-run")
    assert done.exit_code == 0, done.stderr
    assert "cudabench's `ray-client` extra" in done.stderr, done.stderr
    done = _invoke("dot", "--size", "100", "--cluster", "ray", "--dry-run")
    assert "cudabench's `ray` extra" in done.stderr, done.stderr
