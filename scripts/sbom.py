"""The serving image's software bill of materials (CycloneDX 1.5 JSON), generated offline from ``uv.lock``.

    python -m scripts.sbom                       # rewrite container/sbom.cdx.json (part of `make lock`)
    python -m scripts.sbom --check               # exit 1 when the file disagrees with the lock
    python -m scripts.sbom --output F --image URI  # a copy naming the published image (scripts/publish_image.py)

``uv export --format cyclonedx1.5`` writes the components of the image's dependency groups with their purls
and the sha256 of every distribution the lock records. The lock covers every Python and platform, so the
components are then cut to exactly the pins of ``container/requirements.txt`` (the image's interpreter,
scripts/image_pins.py); a pin the export lacks is an error. The timestamp and random serial number uv adds are
replaced by ones derived from the content, so the same lock always gives the same bytes. The image carries the
file at :data:`IMAGE_PATH`, which its ``smkit.sbom`` label names (container/Dockerfile). Why not BuildKit's ``--sbom`` attestation: it turns
the pushed image into an OCI image index, which SageMaker CreateModel refuses (smkit/release/ecr_image.py).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from scripts.image_pins import CONTAINER, REPO, find_uv

SBOM = CONTAINER / "sbom.cdx.json"
# Where container/Dockerfile copies the SBOM inside the image (its smkit.sbom label).
IMAGE_PATH = "/opt/smkit/sbom.cdx.json"
GROUP = "image"
PINS = CONTAINER / "requirements.txt"


def pins(path: Path = PINS) -> dict[str, str]:
    """``{canonical name: version}`` of the image's pinned requirements."""
    found: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        text = line.split("#", 1)[0].strip()
        if text:
            requirement = Requirement(text)
            (spec,) = requirement.specifier
            found[str(canonicalize_name(requirement.name))] = spec.version
    return found


def export(uv: str) -> dict[str, Any]:
    command = [uv, "export", "--frozen", "--only-group", GROUP, "--no-emit-project"]
    command += ["--format", "cyclonedx1.5", "--preview-features", "sbom-export"]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{result.stderr}")
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def for_image(bom: dict[str, Any], wanted: dict[str, str], image: str | None = None) -> dict[str, Any]:
    """The export cut to the image's pins, with a content-derived serial number and no timestamp."""
    kept: list[dict[str, Any]] = []
    refs: set[str] = set()
    for component in bom.get("components", []):
        name = canonicalize_name(component["name"])
        if wanted.get(name) == component.get("version") and name not in {
            canonicalize_name(c["name"]) for c in kept
        }:
            kept.append(component)
            refs.add(component["bom-ref"])
    missing = sorted(set(wanted) - {canonicalize_name(c["name"]) for c in kept})
    if missing:
        raise SystemExit(f"uv.lock's export lacks {', '.join(missing)} of {PINS.name}: run `make lock`")
    kept.sort(key=lambda c: canonicalize_name(c["name"]))
    dependencies = [
        {**d, "dependsOn": sorted(x for x in d.get("dependsOn", []) if x in refs)}
        for d in bom.get("dependencies", [])
        if d.get("ref") in refs
    ]
    metadata = {k: v for k, v in bom.get("metadata", {}).items() if k != "timestamp"}
    subject: dict[str, Any] = {"type": "container", "bom-ref": "smkit-serving-image", "name": "smkit-serving"}
    if image is not None:
        subject["version"] = image.rsplit(":", 1)[-1]
        subject["properties"] = [{"name": "smkit:image-uri", "value": image}]
    metadata["component"] = subject
    body = {"components": kept, "dependencies": sorted(dependencies, key=lambda d: d["ref"])}
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
    return {
        "bomFormat": "CycloneDX",
        "specVersion": "1.5",
        "serialNumber": f"urn:uuid:{uuid.UUID(digest[:32])}",
        "version": 1,
        "metadata": metadata,
        **body,
    }


def render(uv: str, image: str | None = None) -> str:
    return json.dumps(for_image(export(uv), pins(), image), indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check", action="store_true", help="compare with container/sbom.cdx.json; exit 1 on a difference"
    )
    parser.add_argument(
        "--output", type=Path, default=SBOM, help="where to write (default: container/sbom.cdx.json)"
    )
    parser.add_argument("--image", help="the image URI the SBOM describes (recorded in metadata.component)")
    args = parser.parse_args(argv)
    text = render(find_uv(), args.image)
    if args.check:
        if not args.output.is_file() or args.output.read_text(encoding="utf-8") != text:
            print(f"{args.output} disagrees with uv.lock: run `make lock` to regenerate it", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
