"""Fixtures of the emulated-deploy tests: one moto server, one bootstrap and one deploy of every config.

Every file in ``config/`` goes into ONE cloud assembly, synthesized once in a child interpreter with the
same ``smkit.cdk.serving_stage.add_serving_stacks`` and cdk.json context as ``app.py`` (cdk-nag is left to
the stack tests: it only reports, it does not change templates). The real CDK CLI then deploys all of
its stacks into moto with one ``cdk deploy --all --concurrency`` call: one synth and one CLI start
instead of one per config.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from deploy_support import CONCURRENCY, CONFIGS, REPO, Assembly, DeployedConfig, synth_assembly

from smkit.config import load_config
from smkit.emulator import (
    CdkCli,
    CdkError,
    MotoServer,
    child_environment,
    deployed_stacks,
    emulated_image_tag,
    emulator_cli,
    ensure_bootstrapped,
)
from smkit.emulator.deploy import with_server_traceback


@pytest.fixture(scope="session")
def emulator(moto_server: MotoServer) -> MotoServer:
    """The session's moto server (tests/conftest.py), under the name these tests give it."""
    return moto_server


@pytest.fixture(scope="session")
def cdk(emulator: MotoServer) -> CdkCli:
    """The pinned CDK CLI pointed at the session's emulator."""
    return emulator_cli(REPO, child_environment(emulator.endpoint_url))


@pytest.fixture(scope="session")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Assembly:
    """Every config's stacks in one synthesized cloud assembly."""
    return synth_assembly(CONFIGS, tmp_path_factory.mktemp("assembly") / "cdk.out")


@pytest.fixture(scope="session")
def deployed(
    request: pytest.FixtureRequest,
    emulator: MotoServer,
    cdk: CdkCli,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, DeployedConfig]:
    """``cdk bootstrap`` once, then ``cdk deploy --all`` of the assembly; config stem -> its stacks."""
    # The bootstrap needs only the emulator: it runs while the assembly is synthesized.
    with ThreadPoolExecutor(max_workers=1) as pool:
        bootstrap = pool.submit(ensure_bootstrapped, emulator, cdk, tmp_path_factory.mktemp("bootstrap"))
        assembly: Assembly = request.getfixturevalue("assembly")
        bootstrap.result()
    try:
        cdk.deploy_assembly(assembly=assembly.path, concurrency=CONCURRENCY)
    except CdkError as exc:
        pytest.fail(with_server_traceback(str(exc), emulator))
    stacks = {stack.name: stack for stack in deployed_stacks(emulator, assembly.path)}
    result = {}
    for stem, names in assembly.stack_names.items():
        assert names["serving"] is not None
        result[stem] = DeployedConfig(
            config=load_config(
                REPO / "config" / f"{stem}.yaml",
                image_tag=emulated_image_tag(REPO / "config" / f"{stem}.yaml"),
            ),
            ecr=stacks[names["ecr"]] if names["ecr"] is not None else None,  # none for dlc-only configs
            serving=stacks[names["serving"]],
        )
    return result
