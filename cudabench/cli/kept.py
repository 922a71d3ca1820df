"""`cudabench workers`: the GPU workers --keep-workers kept, listed or ended."""

from __future__ import annotations

import click

from cudabench.errors import UsageError
from cudabench.render import terminal


@click.command("workers")
@click.option("--stop", is_flag=True,
              help="End them now (their GPU memory is freed), busy or not.")
@click.option("--cluster", default=None, metavar="ray|ray://HOST:PORT",
              help="The kept Ray actors of this cluster instead of this host's workers.")
def workers_command(stop: bool, cluster: str | None) -> int:
    """List the GPU workers --keep-workers kept, or end them (--stop)."""
    if cluster is not None:
        return _cluster(cluster, stop)
    from cudabench.runner import kept_worker

    try:
        kept_worker.socket_folder()
    except OSError as exc:  # a link, another user's folder, a file in its place
        raise UsageError(f"the kept workers' folder: {exc} (it is $XDG_RUNTIME_DIR/cudabench, "
                         "else cudabench-UID in the temporary folder: move what is there "
                         "away, or set XDG_RUNTIME_DIR to a folder of your own)") from None
    if stop:
        ended = kept_worker.stop_all()
        click.echo(f"ended {ended} kept worker{'s' if ended != 1 else ''}")
        return 0
    found = kept_worker.describe()
    if not found:
        click.echo(f"no kept workers (in {kept_worker.socket_folder()})")
        return 0
    terminal.render_rows("kept GPU workers (--keep-workers)",
                         ("socket", "pid", "GPU", "commands running or waiting now"),
                         [(path, str(pid), gpu, str(holding))
                          for path, pid, holding, gpu in found],
                         terminal.stdout_console())
    return 0


def _cluster(address: str, stop: bool) -> int:
    from cudabench.runner.ray_cluster import connect, kept_actors, release_kept

    joined = connect(address, running=True)  # kept actors live on a running cluster
    try:
        if stop:
            ended = release_kept(joined.ray)
            click.echo(f"ended {ended} kept actor{'s' if ended != 1 else ''}")
            return 0
        names = kept_actors(joined.ray)
        if not names:
            click.echo("no kept actors on the cluster")
            return 0
        terminal.render_rows("kept Ray actors (--keep-workers --cluster)", ("actor",),
                             [(name,) for name in names], terminal.stdout_console())
        return 0
    finally:
        joined.close()
