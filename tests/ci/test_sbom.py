"""The serving image's SBOM (scripts/sbom.py): generated offline from uv.lock, every package the image installs.

No Docker: the image installs exactly container/requirements.txt (scripts/image_pins.py), so the SBOM is
checked against that file, and the CI publish script writes a copy naming the image it published. That the
image carries it is checked on the Dockerfile and on both build contexts: the checkout's, through its ignore
file, as the publish script sends it (smkit/release/ecr_image.py), and the kit's staged one.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from packaging.utils import canonicalize_name

from scripts import publish_image, sbom
from scripts.image_pins import REPO
from smkit.dockerimage import KIT_DOCKERFILE, stage_kit_context
from smkit.dockerimage.copies import copy_sources, missing_sources
from smkit.release.ecr_image import context_files


def _components(path: Path) -> dict[str, dict[str, object]]:
    data = json.loads(path.read_text())
    assert data["bomFormat"] == "CycloneDX" and data["specVersion"] == "1.5"
    return {canonicalize_name(str(c["name"])): c for c in data["components"]}


def test_the_committed_sbom_is_the_one_the_lock_gives() -> None:
    assert sbom.main(["--check"]) == 0, "run `make lock` (python -m scripts.sbom) to regenerate it"


def test_the_sbom_lists_every_locked_package_of_the_image_with_its_hashes() -> None:
    pins = sbom.pins()
    components = _components(sbom.SBOM)
    assert set(components) == set(pins) and len(pins) >= 5
    for name, version in pins.items():
        component = components[name]
        assert component["version"] == version
        assert component["purl"] == f"pkg:pypi/{component['name']}@{version}"
        hashes = [h for ref in component["externalReferences"] for h in ref["hashes"]]  # type: ignore[attr-defined]
        assert hashes and all(h["alg"] == "SHA-256" and len(h["content"]) == 64 for h in hashes)


def test_a_stale_sbom_is_reported(tmp_path: Path) -> None:
    stale = tmp_path / "sbom.cdx.json"
    stale.write_text("{}\n")
    assert sbom.main(["--check", "--output", str(stale)]) == 1


def test_the_publish_script_writes_the_sbom_naming_the_image(tmp_path: Path, capsys: object) -> None:
    out = tmp_path / "image.cdx.json"
    uri = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/smkit-serving"
    assert publish_image.main(["--repository-uri", uri, "--dry-run", "--sbom", str(out)]) == 0
    data = json.loads(out.read_text())
    subject = data["metadata"]["component"]
    assert subject["type"] == "container" and subject["properties"][0]["value"].startswith(f"{uri}:ctx-")
    assert set(_components(out)) == set(sbom.pins())


def _labels(dockerfile: str) -> dict[str, str]:
    text = dockerfile.replace("\\\n", " ")
    lines = [line.split(None, 1)[1] for line in text.splitlines() if line.startswith("LABEL ")]
    return dict(token.split("=", 1) for line in lines for token in shlex.split(line))


def test_the_image_carries_the_sbom_at_the_path_its_label_names() -> None:
    dockerfile = (REPO / KIT_DOCKERFILE).read_text()
    copies = {c.source: c.destination for c in copy_sources(dockerfile)}
    assert copies["container/sbom.cdx.json"] == sbom.IMAGE_PATH
    assert _labels(dockerfile)["smkit.sbom"] == sbom.IMAGE_PATH


def test_the_checkouts_ignore_file_keeps_every_file_the_dockerfile_copies() -> None:
    """``docker build -f container/Dockerfile .`` from the repository root (what the publish script builds):
    every COPY source is among the files Docker sends, after container/Dockerfile.dockerignore."""
    sent = context_files(REPO, KIT_DOCKERFILE)
    sources = [c.source for c in copy_sources((REPO / KIT_DOCKERFILE).read_text())]
    assert "container/sbom.cdx.json" in sources
    for source in sources:
        assert any(name == source or name.startswith(f"{source}/") for name in sent), source


def test_the_kits_staged_context_holds_the_committed_sbom(tmp_path: Path) -> None:
    """What ``image: {source: build}`` builds from any folder (and from a wheel's package data)."""
    context = stage_kit_context(tmp_path)
    assert missing_sources(context.directory, context.dockerfile, context.build_args) == []
    assert (context.directory / "container" / "sbom.cdx.json").read_bytes() == sbom.SBOM.read_bytes()
