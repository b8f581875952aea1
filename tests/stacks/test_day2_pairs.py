"""Day-2 pairs: for each change a user makes to a deployed endpoint, what the stacks do (smkit.config.day2):
update in place with the deployment guardrails, update without DeploymentConfig (variant names change: blue/green
and rolling updates would fail), or create a new endpoint (serverless <-> instance-based: a new name). The synth
tests show the serving stack applying it to the deployed endpoint ``smkit deploy`` passes as context."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
import yaml
from aws_cdk.assertions import Annotations, Match
from stack_support import CONFIG_DIR, ROOT, cdk_context

from smkit.cdk import ServingStacks, add_deployment
from smkit.config import DeploymentConfig, parse_config
from smkit.config.day2 import DeployedEndpoint, plan_update, variant_names
from smkit.config.overrides import DEPLOYED_ENDPOINT_CONTEXT
from smkit.config.resolved import resolve

Change = Callable[[dict[str, Any]], None]


def _raw(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((CONFIG_DIR / name).read_text())
    return data


def _cfg(data: dict[str, Any]) -> DeploymentConfig:
    return parse_config(data, source="day2 pair", base_dir=CONFIG_DIR)


def _endpoint_name(cfg: DeploymentConfig) -> str:
    kind = resolve(cfg, Path.cwd()).endpoint_kind
    return f"TabularEndpoint-{kind}" if kind else "TabularEndpoint"


def _deployed(cfg: DeploymentConfig) -> DeployedEndpoint:
    production, shadow = variant_names(cfg)
    return DeployedEndpoint(_endpoint_name(cfg), production, shadow)


def _add_variant(d: dict[str, Any]) -> None:
    extra = copy.deepcopy(d["endpoint"]["variants"][0])
    extra["name"] = "memory-optimized"
    extra["instance_type"] = "ml.r5.large"
    d["endpoint"]["variants"].append(extra)


def _remove_variant(d: dict[str, Any]) -> None:
    d["endpoint"]["variants"].pop()


def _rename_variant(d: dict[str, Any]) -> None:
    d["endpoint"]["variants"][1]["name"] = "compute"


def _remove_shadow(d: dict[str, Any]) -> None:
    d["endpoint"]["shadow_variants"] = []
    d["model"]["containers"] = d["model"]["containers"][:1]


def _instance_type(d: dict[str, Any]) -> None:
    d["endpoint"]["variants"][1]["instance_type"] = "ml.c5.xlarge"


def _capacity_pool(d: dict[str, Any]) -> None:
    """The first variant moves from one instance type to instance pools (same variant name)."""
    variant = d["endpoint"]["variants"][0]
    variant["instance_pools"] = [
        {"instance_type": variant.pop("instance_type"), "priority": 1},
        {"instance_type": "ml.m6i.large", "priority": 2},
    ]


def _pool_priorities(d: dict[str, Any]) -> None:
    """The pools of config/capacity.yaml reordered and one replaced."""
    d["endpoint"]["variants"][0]["instance_pools"] = [
        {"instance_type": "ml.c5.2xlarge", "priority": 1},
        {"instance_type": "ml.m5.xlarge", "priority": 2},
        {"instance_type": "ml.m6i.2xlarge", "priority": 3},
    ]


def _count(d: dict[str, Any]) -> None:
    for v in d["endpoint"]["variants"]:
        v["autoscaling"]["min_capacity"] = 2
        v["initial_instance_count"] = max(v["initial_instance_count"], 2)


def _model_data(d: dict[str, Any]) -> None:
    d["model"]["containers"][0]["model_data"] = {
        "source": "s3",
        "uri": "s3://models-eu/tabular/v2/model.tar.gz",
    }


def _image(d: dict[str, Any]) -> None:
    d["image"] = {"source": "ecr", "tag": "v2"}


def _to_serverless(d: dict[str, Any]) -> None:
    serverless = _raw("serverless.yaml")
    d["endpoint"] = serverless["endpoint"]
    d["security"] = serverless.get("security", d.get("security"))
    d["model"]["network_isolation"] = False
    d["monitoring"] = serverless["monitoring"]
    d["storage"] = serverless.get("storage", {})


# (case, base config, change, action, DeploymentConfig sent, words of the reason)
PAIRS: list[tuple[str, str, Change, str, bool, str]] = [
    ("variant-added", "realtime.yaml", _add_variant, "update", False, "variant 'memory-optimized' added"),
    (
        "variant-removed",
        "realtime.yaml",
        _remove_variant,
        "update",
        False,
        "variant 'compute-optimized' removed",
    ),
    (
        "variant-renamed",
        "realtime.yaml",
        _rename_variant,
        "update",
        False,
        "variant 'compute' renamed from 'compute-optimized'",
    ),
    ("shadow-removed", "realtime-shadow.yaml", _remove_shadow, "update", False, "shadow variant 'shadow"),
    ("instance-type", "realtime.yaml", _instance_type, "update", True, ""),
    ("instance-count", "realtime.yaml", _count, "update", True, ""),
    # EndpointConfig.ProductionVariants is replaced on any change; the endpoint is updated in place to the new
    # config and keeps its variant names, so the guardrails apply (rule capacity-pool-update).
    ("capacity-pool", "realtime.yaml", _capacity_pool, "update", True, ""),
    ("capacity-pool-priorities", "capacity.yaml", _pool_priorities, "update", True, ""),
    ("model-data", "realtime.yaml", _model_data, "update", True, ""),
    ("image", "realtime.yaml", _image, "update", True, ""),
    ("realtime-to-serverless", "realtime.yaml", _to_serverless, "create", True, ""),
]


@pytest.mark.parametrize(
    ("base", "change", "action", "guarded", "reason"), [p[1:] for p in PAIRS], ids=[p[0] for p in PAIRS]
)
def test_day2_pair(base: str, change: Change, action: str, guarded: bool, reason: str) -> None:
    old = _cfg(_raw(base))
    data = _raw(base)
    change(data)
    new = _cfg(data)
    plan = plan_update(_deployed(old), variant_names(new), _endpoint_name(new))
    assert (plan.action, plan.deployment_config) == (action, guarded)
    if not guarded:
        assert plan.reason is not None and reason in plan.reason
        assert "your new endpoint configuration must have the same variant name" in plan.reason


def test_shadow_added_and_serverless_to_realtime() -> None:
    shadowed = _cfg(_raw("realtime-shadow.yaml"))
    data = _raw("realtime-shadow.yaml")
    _remove_shadow(data)
    plain = _cfg(data)
    added = plan_update(_deployed(plain), variant_names(shadowed), _endpoint_name(shadowed))
    assert (
        not added.deployment_config
        and added.reason
        and "shadow variant" in added.reason
        and "added" in added.reason
    )
    serverless = _cfg(_raw("serverless.yaml"))
    realtime = _cfg(_raw("realtime.yaml"))
    assert (
        plan_update(_deployed(serverless), variant_names(realtime), _endpoint_name(realtime)).action
        == "create"
    )
    assert plan_update(None, variant_names(realtime), _endpoint_name(realtime)) == plan_update(
        _deployed(realtime), variant_names(realtime), _endpoint_name(realtime)
    ).__class__("create", True)


def _synth(tmp_path: Path, deployed: str | None) -> tuple[dict[str, Any], cdk.Stack]:
    context = {**cdk_context(), "config": str(CONFIG_DIR / "realtime.yaml")}
    if deployed is not None:
        context[DEPLOYED_ENDPOINT_CONTEXT] = deployed
    app = cdk.App(context=context, outdir=str(tmp_path))
    added = add_deployment(app, project_root=ROOT)
    assert isinstance(added, ServingStacks)
    template = app.synth().get_stack_by_name(added.serving.stack_name).template
    return template, added.serving


def test_a_renamed_variant_is_deployed_without_deployment_config_and_says_why(tmp_path: Path) -> None:
    template, stack = _synth(tmp_path / "first", None)
    [endpoint] = [r for r in template["Resources"].values() if r["Type"] == "AWS::SageMaker::Endpoint"]
    assert "BlueGreenUpdatePolicy" in endpoint["Properties"]["DeploymentConfig"]
    name = endpoint["Properties"]["EndpointName"]
    deployed = json.dumps({"name": name, "production": ["general-purpose", "compute"], "shadow": []})
    template, stack = _synth(tmp_path / "second", deployed)
    [endpoint] = [r for r in template["Resources"].values() if r["Type"] == "AWS::SageMaker::Endpoint"]
    assert "DeploymentConfig" not in endpoint["Properties"]
    Annotations.from_stack(stack).has_warning(
        "*",
        Match.string_like_regexp(
            "variant 'compute-optimized' renamed from 'compute'.*without DeploymentConfig"
        ),
    )


def test_a_malformed_deployed_endpoint_context_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="context deployed_endpoint: .* is not"):
        _synth(tmp_path, '{"name": "e"}')
