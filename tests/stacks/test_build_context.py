"""A synth that proves the image can build: every COPY/ADD source of a ``build`` image is in the context
the Docker asset staged (after its ignore file), or synth fails naming the line and the file.

The kit's image (``image: {source: build}`` without ``context``) is staged from the smkit package itself,
so it builds from any folder.
"""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
import pytest
import yaml
from stack_support import CONFIG_DIR, SynthesizedApp, cdk_context

from smkit.cdk.serving_stage import add_serving_stacks
from smkit.config import load_deployment
from smkit.dockerimage import container_dir, kit_context_files
from smkit.dockerimage.copies import copy_sources, missing_sources


def test_the_kits_image_asset_holds_every_file_its_dockerfile_copies(synthesized: SynthesizedApp) -> None:
    stack = synthesized.stacks["realtime"].serving
    manifest = json.loads((synthesized.outdir / f"{stack.artifact_id}.assets.json").read_text())
    (image,) = manifest["dockerImages"].values()
    staged = synthesized.outdir / image["source"]["directory"]
    dockerfile = image["source"]["dockerFile"]
    assert dockerfile == "container/Dockerfile"
    sources = {c.source for c in copy_sources((staged / dockerfile).read_text())}
    assert {"container/requirements.txt", "container/requirements-extra.txt", "smkit"} <= sources
    assert missing_sources(staged, dockerfile, image["source"].get("dockerBuildArgs")) == []
    assert (staged / "smkit" / "serving" / "entrypoint.py").is_file()
    assert (staged / "container" / "requirements.txt").read_text() == (
        container_dir() / "requirements.txt"
    ).read_text()
    assert not list(staged.rglob("__pycache__"))


def test_the_kits_context_is_the_package_and_its_container_files() -> None:
    files = kit_context_files()
    assert {"container/Dockerfile", "container/requirements.txt", "smkit/serving/entrypoint.py"} <= set(files)
    assert not any(name.startswith(("smkit/container/", "smkit/cdk/", "tests/", "stacks/")) for name in files)


def test_copy_sources_follow_build_arguments_and_skip_other_stages() -> None:
    text = (
        "FROM python:3.11 AS base\n"
        "ARG REQS=req/default.txt\n"
        "ENV APP=/app\n"
        'COPY --chown=1:1 ["a.txt", "b.txt", "/dst/"]\n'
        "COPY ${REQS} \\\n"
        "     /x.txt\n"
        "ADD https://example.com/file.tgz /tmp/\n"
        "COPY --from=base /app /app\n"
        "COPY <<EOF /inline\n"
    )
    found = [(c.line, c.source) for c in copy_sources(text, {"REQS": "mine.txt"})]
    assert found == [(4, "a.txt"), (4, "b.txt"), (5, "mine.txt")]
    assert [c.destination for c in copy_sources(text, {"REQS": "mine.txt"})] == ["/dst/", "/dst/", "/x.txt"]
    assert [c.source for c in copy_sources(text)][-1] == "req/default.txt"


def _user_config(tmp_path: Path, dockerfile: str, ignore: str | None = None) -> Path:
    context = tmp_path / "docker"
    context.mkdir()
    (context / "Dockerfile").write_text(dockerfile)
    (context / "app.py").write_text("print('serve')\n")
    if ignore is not None:
        (context / "Dockerfile.dockerignore").write_text(ignore)
    data = yaml.safe_load((CONFIG_DIR / "realtime.yaml").read_text())
    data["name"] = "own-image"
    data["image"] = {"source": "build", "context": "docker"}
    data["model"]["containers"][0]["model_data"]["path"] = str(CONFIG_DIR.parent / "build" / "model.tar.gz")
    path = tmp_path / "own.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _synth(config: Path, outdir: Path) -> None:
    app = cdk.App(context=cdk_context(), outdir=str(outdir))
    add_serving_stacks(app, deployment=load_deployment(config))


def test_a_dockerfile_copying_a_file_missing_from_its_context_fails_synth(tmp_path: Path) -> None:
    config = _user_config(
        tmp_path, "FROM python:3.11-slim\nCOPY app.py /app.py\nCOPY requirements.txt /r.txt\n"
    )
    with pytest.raises(ValueError, match=r"line 3: COPY requirements.txt\).*docker build would fail"):
        _synth(config, tmp_path / "out")


def test_a_file_left_out_by_the_ignore_file_counts_as_missing(tmp_path: Path) -> None:
    config = _user_config(tmp_path, "FROM python:3.11-slim\nCOPY app.py /app.py\n", ignore="*\n!nothing\n")
    with pytest.raises(ValueError, match=r"line 2: COPY app.py\).*ignore file"):
        _synth(config, tmp_path / "out")


def test_a_complete_context_of_your_own_synthesizes(tmp_path: Path) -> None:
    config = _user_config(tmp_path, "FROM python:3.11-slim\nCOPY app.py /app.py\n")
    _synth(config, tmp_path / "out")
