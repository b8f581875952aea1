"""Day 2 in the emulator: one deployment switched serverless -> realtime -> serverless.

SageMaker cannot convert an instance-based endpoint into a serverless one, and the opposite update cannot be
rolled back (https://docs.aws.amazon.com/sagemaker/latest/dg/serverless-endpoints.html, feature exclusions);
the emulator refuses the in-place conversion (tests/deploy/test_moto_endpoint_type.py shows a naive template
failing). The stacks' endpoint name carries the type, so each switch replaces the endpoint.

Named test_day2_* so it runs before test_deploy.py's final destroy-everything test; it removes what it adds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from deploy_support import REPO, synth_assembly
from test_day2_update import _delete_retained, _retained

from smkit.config import absolute_paths
from smkit.emulator import CdkCli, CdkError, MotoServer, ensure_bootstrapped
from smkit.emulator.deploy import with_server_traceback

PREFIX = "TabularKindDay2"


def _config(tmp_path: Path, step: str, kind: str) -> Path:
    data: dict[str, Any] = absolute_paths(
        yaml.safe_load((REPO / "config" / "serverless.yaml").read_text()), REPO / "config"
    )
    data["name"] = "tabular-kind-day2"
    if kind == "realtime":
        data["endpoint"] = {
            "type": "realtime",
            "variants": [{"name": "main", "instance_type": "ml.m5.large", "initial_instance_count": 1}],
            "deployment": {"strategy": "all-at-once"},
        }
    source = tmp_path / step / "kind-day2.yaml"
    source.parent.mkdir()
    source.write_text(yaml.safe_dump(data))
    return source


def _endpoints(emulator: MotoServer) -> list[dict[str, Any]]:
    sagemaker = emulator.client("sagemaker")
    names = [
        e["EndpointName"]
        for e in sagemaker.list_endpoints()["Endpoints"]
        if e["EndpointName"].startswith(PREFIX)
    ]
    return [sagemaker.describe_endpoint(EndpointName=n) for n in names]


def _variant(emulator: MotoServer, endpoint: dict[str, Any]) -> dict[str, Any]:
    config = emulator.client("sagemaker").describe_endpoint_config(
        EndpointConfigName=endpoint["EndpointConfigName"]
    )
    variant: dict[str, Any] = config["ProductionVariants"][0]
    return variant


def test_switching_between_serverless_and_realtime_replaces_the_endpoint(
    emulator: MotoServer, cdk: CdkCli, tmp_path: Path
) -> None:
    ensure_bootstrapped(emulator, cdk, tmp_path)
    names = []
    assembly = None
    for step, kind in enumerate(("serverless", "realtime", "serverless")):
        assembly = synth_assembly([_config(tmp_path, str(step), kind)], tmp_path / f"{step}.out")
        try:
            cdk.deploy_assembly(assembly=assembly.path)
        except CdkError as exc:
            pytest.fail(with_server_traceback(str(exc), emulator))
        [endpoint] = _endpoints(emulator)  # the old one is gone
        assert endpoint["EndpointStatus"] == "InService"
        variant = _variant(emulator, endpoint)
        assert ("ServerlessConfig" in variant) == (kind == "serverless"), variant
        names.append(endpoint["EndpointName"])
    assert names[0] == names[2] != names[1]
    assert names[0].endswith("-serverless") and not names[1].endswith("-serverless")

    assert assembly is not None
    retained = _retained(emulator, PREFIX)
    cdk.destroy(assembly=assembly.path)
    _delete_retained(emulator, retained)
    assert _endpoints(emulator) == []
