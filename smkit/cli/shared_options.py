"""Command-line options that several commands share, defined once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def config_option(help_text: str, *, required: bool = True) -> Callable[[F], F]:
    """``--config PATH`` into ``config_path``: a deployment config file that exists."""
    return click.option(
        "--config",
        "config_path",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        required=required,
        help=help_text,
    )
