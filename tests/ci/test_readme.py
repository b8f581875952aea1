"""The README names only make targets, smkit commands, scripts and files that exist."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from smkit.cli import COMMANDS

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()


def test_every_make_target_it_names_exists() -> None:
    listed = subprocess.run(["make", "help"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    targets = {line.split()[0] for line in listed.splitlines() if line.strip()}
    named = set(re.findall(r"`make ([a-z-]+)", README)) | set(re.findall(r"^make ([a-z-]+)", README, re.M))
    assert named and named <= targets, named - targets


def test_every_smkit_command_it_names_exists() -> None:
    named = set(re.findall(r"(?:`|bin/)smkit ([a-z-]+)", README))
    assert named and named <= set(COMMANDS), named - set(COMMANDS)


def test_every_script_and_file_it_names_exists() -> None:
    scripts = set(re.findall(r"scripts[./]([a-z_]+)(?:\.py|\.sh)?", README))
    assert scripts
    for name in scripts:
        assert (REPO / "scripts" / f"{name}.py").is_file() or (REPO / "scripts" / f"{name}.sh").is_file(), (
            name
        )
    for path in re.findall(r"\]\(((?!https?:|#)[^)]+)\)", README):
        assert (REPO / path).exists(), path
    made = set(re.findall(r"smkit init ([a-z-]+)", README))  # a journey's own config, written by smkit init
    for config in re.findall(r"config/([a-z-]+)\.yaml", README):
        assert config in made or (REPO / "config" / f"{config}.yaml").is_file(), config
