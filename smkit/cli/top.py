"""``smkit top``: a running endpoint, live, from its Prometheus metrics (smkit/top.py, docs/observability.md)."""

from __future__ import annotations

import sys
import time

import click


@click.command("top")
@click.argument("target")
@click.option(
    "--interval",
    type=click.FloatRange(min=0.1),
    default=2.0,
    show_default=True,
    help="Seconds between readings.",
)
@click.option(
    "--iterations",
    type=click.IntRange(min=1),
    default=None,
    help="Stop after this many refreshes (default: until Ctrl-C).",
)
@click.option("--plain", is_flag=True, help="Plain text lines instead of rich's live table.")
def top(target: str, interval: float, iterations: int | None, plain: bool) -> None:
    """Show a running endpoint live from its Prometheus metrics: per variant, container and model, requests
    per second, errors, p50/p99 of each phase, queue depth and workers.

    TARGET is a metrics URL (``http://127.0.0.1:8080/metrics`` of ``smkit serve``), a port of this machine
    (``8080``: its ``/metrics``), or ``http://127.0.0.1:PORT/endpoints/NAME/metrics`` of ``smkit
    local-endpoint``, which labels each container's metrics with its variant and container.
    """
    from smkit import top as view

    url = target if "://" in target else f"http://127.0.0.1:{int(target)}/metrics" if target.isdigit() else ""
    if not url:
        raise click.BadParameter(
            f"{target!r} is neither a URL nor a port; give e.g. http://127.0.0.1:8080/metrics or 8080",
            param_hint="TARGET",
        )
    try:
        before = view.parse(view.fetch(url), time.monotonic())
    except OSError as exc:
        raise click.ClickException(f"cannot read {url}: {exc}; is the endpoint running?") from None
    live = None
    if not plain:
        try:
            from rich.console import Console
            from rich.live import Live

            live = Live(console=Console(), auto_refresh=False)
        except ImportError:  # rich is optional: plain lines
            live = None
    shown = 0
    try:
        if live is not None:
            live.start()
        while iterations is None or shown < iterations:
            time.sleep(interval)
            try:
                after = view.parse(view.fetch(url), time.monotonic())
            except OSError as exc:
                raise click.ClickException(f"cannot read {url}: {exc}; the endpoint stopped?") from None
            found = view.rows(before, after)
            title = f"{url}  every {interval:g} s"
            if live is not None:
                live.update(view.render_rich(found, after, title), refresh=True)
            else:
                click.echo("\n".join([title, *view.table_lines(found, after), ""]))
                sys.stdout.flush()
            before = after
            shown += 1
    except KeyboardInterrupt:
        pass
    finally:
        if live is not None:
            live.stop()
