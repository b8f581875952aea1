"""``smkit cache list`` and ``smkit cache prune``: the model environments and downloads smkit keeps."""

from __future__ import annotations

import time

import click


@click.group("cache")
def cache() -> None:
    """The model environments and vendored-wheel downloads smkit keeps ($SMKIT_CACHE_DIR, else
    ~/.cache/smkit): list them with their sizes, prune them."""


@cache.command("list")
def list_command() -> None:
    """Every image layer, model layer, link and download, with its size, last use and state."""
    from smkit.modelenv import cache_root
    from smkit.modelenv.cache import entries, human

    root = cache_root()
    found = entries(root)
    click.echo(f"{root}: {len(found)} entries, {human(sum(e.size for e in found))}")
    for entry in found:
        used = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.last_used))
        state = "" if entry.state == "ok" else f"  [{entry.state}]"
        click.echo(f"{entry.kind:<7} {human(entry.size):>10}  {used}  {entry.path}{state}")


@cache.command("prune")
@click.option("--all", "everything", is_flag=True, help="Remove every entry (all are rebuilt on next use).")
@click.option(
    "--unused-days",
    type=click.FloatRange(min=0),
    help="Also remove entries not used for this many days.",
)
def prune_command(everything: bool, unused_days: float | None) -> None:
    """Remove what interrupted builds left and links to removed layers; with --unused-days or --all, more.

    \b
    smkit cache prune                      # half-built entries and dangling links only
    smkit cache prune --unused-days 30
    smkit cache prune --all
    """
    from smkit.modelenv import cache_root
    from smkit.modelenv.cache import human, prune

    removed = prune(cache_root(), everything=everything, unused_days=unused_days)
    for entry in removed:
        click.echo(f"removed {entry.kind} {entry.path} ({human(entry.size)})")
    click.echo(f"freed {human(sum(e.size for e in removed))} in {len(removed)} entries")
