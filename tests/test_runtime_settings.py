"""smkit.contract.RuntimeSettings: the one reader of a container's serving variables, and the parts that use it.

The serving runtime, the local endpoint, local batch transform and the config rules (tests/config/test_config_invalid.py) all read a container's
environment with it, so one bad value gets one message (the variable, its value and the fix) wherever it
is found first.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.requirements import Requirement

from smkit import contract
from smkit.batch.local import LocalModel, run_local_job
from smkit.batch.options import TransformOptions
from smkit.contract import MIB, RuntimeSettings, SettingError
from smkit.hosting.env import ServingEnv
from smkit.local.containers import ContainerLaunch, ContainerProcess
from smkit.packaging.requirements import unsatisfied
from smkit.requirement_lines import installed_versions, is_satisfied


def test_defaults_are_the_platforms() -> None:
    settings = RuntimeSettings.from_environment({})
    assert settings == RuntimeSettings()
    assert (settings.invocation_timeout_s, settings.max_payload_bytes, settings.profile) == (
        60.0,
        6 * MIB,
        "realtime",
    )
    assert (settings.workers, settings.batch_size, settings.batching) == (None, 1, False)


@pytest.mark.parametrize(
    ("profile", "limit"),
    [("realtime", 6 * MIB), ("serverless", 4 * MIB), ("async", 1024 * MIB), ("batch", 6 * MIB)],
)
def test_the_profile_picks_the_payload_limit_unless_the_limit_is_set(profile: str, limit: int) -> None:
    assert RuntimeSettings.from_environment({contract.SMKIT_PROFILE: profile}).max_payload_bytes == limit
    assert (
        RuntimeSettings.from_environment(
            {contract.SMKIT_PROFILE: profile, contract.MAX_PAYLOAD_IN_MB: "2"}
        ).max_payload_bytes
        == 2 * MIB
    )


def test_the_older_timeout_name_is_read_when_the_newer_is_unset() -> None:
    older = {contract.MODEL_SERVER_TIMEOUT: "5"}
    assert RuntimeSettings.from_environment(older).invocation_timeout_s == 5.0
    both = {**older, contract.MODEL_SERVER_TIMEOUT_SECONDS: "7"}
    assert RuntimeSettings.from_environment(both).invocation_timeout_s == 7.0


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        (contract.MODEL_SERVER_TIMEOUT_SECONDS, "soon", "'soon' is not a number; use e.g."),
        (contract.MODEL_SERVER_TIMEOUT_SECONDS, "nan", "'nan' is not a finite number"),
        (contract.MODEL_SERVER_TIMEOUT, "0", "'0' is below 0.001"),
        (contract.MAX_PAYLOAD_IN_MB, "-1", "'-1' is below 0.001"),
        (contract.MODEL_SERVER_WORKERS, "1.5", "'1.5' is not a whole number"),
        (contract.SMKIT_PROFILE, "edge", "'edge' is not one of realtime, serverless, async, batch"),
        (contract.STARTUP_TIMEOUT, "0.5", "'0.5' is below 1"),
        (contract.TS_BATCH_SIZE, "0", "'0' is below 1"),
    ],
)
def test_a_bad_value_is_one_error_naming_the_variable_the_value_and_the_fix(
    variable: str, value: str, message: str
) -> None:
    with pytest.raises(SettingError) as caught:
        RuntimeSettings.from_environment({variable: value})
    assert (caught.value.variable, caught.value.value) == (variable, value)
    assert str(caught.value).startswith(f"{variable}={message}")
    assert "; " in str(caught.value)  # the fix follows


def test_the_serving_runtime_carries_the_same_settings() -> None:
    environ = {contract.MODEL_SERVER_TIMEOUT_SECONDS: "9", contract.SMKIT_PROFILE: "serverless"}
    env = ServingEnv.from_environ(environ)
    assert env.settings == RuntimeSettings.from_environment(environ)
    assert (env.timeout_seconds, env.max_payload_bytes) == (9.0, 4 * MIB)


def test_a_local_container_reads_its_own_resolved_environment(tmp_path: Path) -> None:
    spec = ContainerLaunch("model", tmp_path, environment={contract.MODEL_SERVER_TIMEOUT: "3"})
    assert ContainerProcess(spec, label="v-model").invocation_limit_s == 3.0
    bad = ContainerLaunch("model", tmp_path, environment={contract.MODEL_SERVER_TIMEOUT_SECONDS: "soon"})
    with pytest.raises(SettingError, match="SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS='soon' is not a number"):
        ContainerProcess(bad, label="v-model")


def test_a_local_transform_job_refuses_a_bad_value_before_it_starts_anything(tmp_path: Path) -> None:
    model = LocalModel(path=tmp_path, environment={contract.TS_BATCH_SIZE: "many"})
    with pytest.raises(SettingError, match="SAGEMAKER_TS_BATCH_SIZE='many' is not a whole number"):
        run_local_job(
            TransformOptions(),
            model,
            input_location=(tmp_path / "in").as_uri(),
            output_location=(tmp_path / "out").as_uri(),
        )


def test_requirement_satisfaction_compares_names_as_pep_503_normalizes_them() -> None:
    installed = installed_versions(
        [("Scikit_Learn", "1.5.2"), ("scikit-learn", "0.1"), ("zope.interface", "6.0")]
    )
    assert installed == {"scikit-learn": "1.5.2", "zope-interface": "6.0"}
    assert is_satisfied(Requirement("scikit.learn>=1.5"), installed)
    assert is_satisfied(Requirement("Zope_Interface==6.0"), installed)
    assert not is_satisfied(Requirement("scikit-learn<1"), installed)
    assert not is_satisfied(Requirement("numpy"), installed)
    assert is_satisfied(Requirement('numpy; python_version < "3"'), installed)
    assert not is_satisfied(Requirement("scikit-learn @ https://example.com/sk.whl"), installed)


def test_the_packager_check_finds_a_requirement_installed_under_another_spelling() -> None:
    found = unsatisfied([Requirement("scikit_learn==1.5.2"), Requirement("numpy")], {"Scikit-Learn": "1.5.2"})
    assert [str(item) for item in found] == ["numpy (not installed)"]


def test_every_part_names_the_same_frameworks() -> None:
    from smkit.config.resolved.images import FRAMEWORK_PACKAGES, FRAMEWORK_REPOSITORIES
    from smkit.serving.worker.frameworks import DEFAULTS

    assert set(contract.FRAMEWORKS) == set(FRAMEWORK_REPOSITORIES.values()) == set(FRAMEWORK_PACKAGES)
    assert set(DEFAULTS) == {None, *contract.FRAMEWORKS}


def test_every_profile_has_a_payload_limit() -> None:
    from smkit.config.resolved import profile_of

    assert set(contract.PROFILES) == set(contract.PROFILE_PAYLOAD_LIMITS)
    endpoint_types = (
        "realtime",
        "serverless",
        "multi-model",
        "multi-container",
        "async",
        "inference-components",
    )
    assert {profile_of(kind) for kind in endpoint_types} <= set(contract.PROFILES)
