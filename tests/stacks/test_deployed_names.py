"""The names ``smkit synth`` and the local endpoint's banner say a deployment gets on AWS
(smkit.config.resolved.names, computed without CDK) are the ones every synthesized template gives its
endpoint and inference components."""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
import pytest
from constructs import Construct
from stack_support import SynthesizedApp

from smkit.config.resolved import resolve
from smkit.config.resolved.names import deployed_names, unique_resource_name


def test_the_names_said_before_synth_are_the_templates(synthesized: SynthesizedApp) -> None:
    checked = 0
    for case, cfg in synthesized.configs.items():
        names = deployed_names(resolve(cfg, Path.cwd()))
        assert synthesized.stacks[case].serving.stack_name == names.stack, case
        resources = synthesized.template_json(case)["Resources"].values()
        endpoints = [
            r["Properties"]["EndpointName"] for r in resources if r["Type"] == "AWS::SageMaker::Endpoint"
        ]
        assert endpoints == [names.endpoint], case
        components = sorted(
            r["Properties"]["InferenceComponentName"]
            for r in resources
            if r["Type"] == "AWS::SageMaker::InferenceComponent"
        )
        assert components == sorted(names.components.values()), case
        outputs = synthesized.template_json(case)["Outputs"]
        if names.components:
            listed = outputs["InferenceComponentNames"]["Value"]
            assert listed == ",".join(f"{k}={v}" for k, v in names.components.items()), case
        checked += 1 + len(names.components)
    assert checked > len(synthesized.configs)  # some config has components


@pytest.mark.parametrize(
    "path",
    [
        ("A" * 40 + "Serving", "Component" + "B" * 40),  # longer than 63: both ends and the hash
        ("Tiny-ServingStack", "Component_x"),  # characters other than letters and digits dropped
        ("ServingStack", "StackEndpoint"),
    ],
)
def test_a_name_is_cdks_own(path: tuple[str, str]) -> None:
    app = cdk.App()
    construct = Construct(cdk.Stack(app, path[0]), path[1])
    expected = cdk.Names.unique_resource_name(construct, max_length=63, separator="-")
    assert unique_resource_name(path, max_length=63) == expected
