"""reconcile(): a skipped resource is accepted only for a type listed with its reason, and reported."""

from __future__ import annotations

import pytest

from smkit.emulator import MOTO_SKIPS, DeployMismatch, retained_resources
from smkit.emulator.inventory import StackResource, reconcile

TEMPLATE = {
    "Resources": {
        "Endpoint": {"Type": "AWS::SageMaker::Endpoint"},
        "Subscription": {"Type": "AWS::SNS::Subscription"},
        "Repository": {"Type": "AWS::ECR::Repository", "DeletionPolicy": "Retain"},
    }
}
ENDPOINT = StackResource("Endpoint", "AWS::SageMaker::Endpoint", "arn:aws:sagemaker:us-east-1:1:endpoint/e")
REPOSITORY = StackResource("Repository", "AWS::ECR::Repository", "repo")


def test_listed_types_are_reported_with_their_reason() -> None:
    [skipped] = reconcile("S", TEMPLATE, [ENDPOINT, REPOSITORY])
    assert (skipped.stack, skipped.logical_id) == ("S", "Subscription")
    assert skipped.reason == MOTO_SKIPS["AWS::SNS::Subscription"]
    assert str(skipped).startswith("S/Subscription (AWS::SNS::Subscription): moto has no")


def test_a_missing_resource_of_an_unlisted_type_fails_the_deploy() -> None:
    with pytest.raises(DeployMismatch) as caught:
        reconcile("S", TEMPLATE, [REPOSITORY])
    assert str(caught.value) == (
        "moto did not create 1 resource(s) of stack S: Endpoint (AWS::SageMaker::Endpoint). If moto cannot "
        "emulate that type, add it with the reason to smkit.emulator.inventory.MOTO_SKIPS."
    )


def test_retained_resources_are_the_ones_with_deletion_policy_retain() -> None:
    assert retained_resources(TEMPLATE) == {"Repository": "AWS::ECR::Repository"}
