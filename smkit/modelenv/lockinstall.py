"""Install a lock of exact pins into a venv with uv, showing one progress bar and keeping the raw log in a file.

For an engine environment (smkit.llm.engine: ~150 pins, several GB): uv installs the lock's lines with
``--no-deps`` (the lock is the whole environment; nothing is resolved), in batches of
:data:`BATCH` packages, so that the one bar (tqdm) counts packages installed of the total and the elapsed
time. uv's own output goes to the log file, whose path a failure names with uv's last lines. pip's index
and find-links settings reach uv as they do for model environments (smkit.modelenv.uvtool).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tqdm import tqdm

from smkit.modelenv import uvtool
from smkit.modelenv.image_runtime import ModelEnvError
from smkit.requirement_lines import file_lines

BATCH = 12  # packages per uv call: small enough for a moving bar, large enough for uv's parallel downloads


def install_lock(python: str, lock: Path, log: Path, *, label: str, progress: bool) -> int:
    """Install every pin of ``lock`` into the venv of ``python``; the number of packages. Raises
    :class:`ModelEnvError` naming the log file (kept) on failure."""
    lines = file_lines(lock)
    options = [line for line in lines if line.startswith("-")]  # index options of the lock, if any
    pins = [line for line in lines if not line.startswith("-")]
    log.parent.mkdir(parents=True, exist_ok=True)
    base = [uvtool.uv_binary(), "pip", "install", "--python", python, "--no-deps", *uvtool.index_options()]
    base += [part for option in options for part in option.split(maxsplit=1)]
    show = progress and sys.stderr.isatty()
    with (
        log.open("w", encoding="utf-8") as out,
        tqdm(
            total=len(pins),
            unit="pkg",
            desc=f"{label} environment",
            disable=not progress,
            file=sys.stderr,
            dynamic_ncols=show,
            mininterval=0.5 if show else 10.0,
        ) as bar,
    ):
        for start in range(0, len(pins), BATCH):
            batch = pins[start : start + BATCH]
            command = [*base, *batch]
            out.write(f"$ {' '.join(command)}\n")
            out.flush()
            done = subprocess.run(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "NO_COLOR": "1"},
                check=False,
            )
            if done.returncode != 0:
                out.flush()
                tail = [t.strip() for t in log.read_text(encoding="utf-8").splitlines() if t.strip()][-4:]
                raise ModelEnvError(
                    f"installing {lock} failed (uv exit {done.returncode}) at {', '.join(batch[:3])} ...: "
                    f"{' | '.join(tail)}; the full log: {log}"
                )
            bar.update(len(batch))
    return len(pins)
