"""One synthesized CDK app per test session (see :mod:`stack_support`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from stack_support import CONFIG_FILES, SynthesizedApp, derived_configs, synthesize

from smkit.config import load_config


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SynthesizedApp]:
    prefix_dir = tmp_path_factory.mktemp("uncompressed-model")
    (prefix_dir / "model.joblib").write_bytes(b"weights")
    (prefix_dir / "code").mkdir()
    (prefix_dir / "code" / "inference.py").write_text("def model_fn(model_dir):\n    return None\n")
    configs = {path.stem: load_config(path) for path in CONFIG_FILES}
    configs.update(derived_configs(prefix_dir))
    outdir = tmp_path_factory.mktemp("cdk.out")
    stacks = synthesize(configs, outdir)
    yield SynthesizedApp(outdir=outdir, configs=configs, stacks=stacks)
