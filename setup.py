"""Packages of the wheel, beside pyproject.toml (which holds everything else, package data included).

The serving image's files (``container/Dockerfile``, and the ``container/requirements*.txt`` and
``container/sbom.cdx.json`` that ``make lock`` writes from uv.lock) stay where the repository keeps them and ship as the package data
``smkit/container``, so ``image: {source: build}`` builds the kit's image from a pip install
(smkit/dockerimage). The CDK construct library and the app ``smkit synth`` and ``smkit deploy`` run are
``smkit.cdk``; the repository's own ``stacks/`` app and ``app.py`` are not part of the wheel.
"""

from setuptools import find_namespace_packages, setup

setup(
    packages=[*find_namespace_packages(include=["smkit", "smkit.*"]), "smkit.container"],
    package_dir={"smkit.container": "container"},
)
