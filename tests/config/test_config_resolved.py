"""The resolved deployment (smkit/config/resolved): what each endpoint-level setting resolves to, the part every
consumer reads instead of the config (docs/resolved-deployment.md)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from config_harness import CONFIG_DIR, raw

from smkit.config import load_config, load_deployment, parse_config
from smkit.config.resolved import ResolvedDeployment, ResolvedScaling, resolve


def _resolved(name: str, change: Any = None) -> ResolvedDeployment:
    data = copy.deepcopy(raw(name))
    if change is not None:
        change(data)
    return resolve(parse_config(data, source=name), CONFIG_DIR)


def test_identity_and_placement_are_the_configs() -> None:
    d = load_deployment(CONFIG_DIR / "realtime.yaml")
    cfg = load_config(CONFIG_DIR / "realtime.yaml")
    assert (d.name, d.environment, d.account, d.region) == (
        cfg.name,
        cfg.environment,
        cfg.account,
        cfg.region,
    )
    assert dict(d.tags) == cfg.tags and d.description == cfg.description
    assert d.pipeline == cfg.pipeline and d.pipeline is not None
    assert d.monitoring == cfg.monitoring and d.storage == cfg.storage and d.local == cfg.local
    assert d.kms == cfg.security.kms and d.vpc is None


def test_realtime_variants_carry_their_production_variant_settings() -> None:
    def tune(data: dict[str, Any]) -> None:
        v = data["endpoint"]["variants"][0]
        v.update(volume_size_gb=30, model_data_download_timeout_seconds=600, routing="random")

    d = _resolved("realtime.yaml", tune)
    first = d.variants[0]
    assert (first.volume_size_gb, first.model_data_download_timeout_s, first.routing) == (30, 600, "random")
    assert first.pool_types == (first.instance_type,) and first.instance_pools == ()
    assert d.endpoint_kind is None and d.serverless is None and d.asynchronous is None


def test_instance_pools_resolve_to_their_types_by_priority() -> None:
    def reorder(data: dict[str, Any]) -> None:
        data["endpoint"]["variants"][0]["instance_pools"].reverse()

    variant = _resolved("capacity.yaml", reorder).variants[0]
    assert variant.pool_types == ("ml.m5.xlarge", "ml.m6i.xlarge", "ml.c5.2xlarge")
    assert variant.instance_provision_timeout_s == 900


def test_autoscaled_variants_resolve_to_invocation_policies_shadow_variants_too() -> None:
    def scale_shadow(data: dict[str, Any]) -> None:
        policy = {"min_capacity": 1, "max_capacity": 2, "target_invocations_per_instance": 200}
        data["endpoint"]["variants"][0]["autoscaling"] = policy
        data["endpoint"]["shadow_variants"][0]["autoscaling"] = policy

    d = _resolved("realtime-shadow.yaml", scale_shadow)
    assert [(s.variant, s.kind, s.target) for s in d.scaling] == [
        (d.variants[0].name, "invocations", 200.0),
        (d.shadow_variants[0].name, "invocations", 200.0),
    ]
    assert d.retains_instance_counts
    assert not _resolved("realtime-shadow.yaml").retains_instance_counts


def test_serverless_resolves_its_section_kind_and_provisioned_concurrency_policy() -> None:
    d = _resolved("serverless.yaml")
    assert d.serverless is not None and d.endpoint_kind == "serverless"
    (policy,) = d.scaling
    autoscaling = d.serverless.autoscaling
    assert autoscaling is not None
    assert policy == ResolvedScaling(
        d.serverless.variant_name,
        None,
        "provisioned-concurrency",
        autoscaling.min_capacity,
        autoscaling.max_capacity,
        autoscaling.target_utilization,
    )
    assert d.variant_names == ((d.serverless.variant_name,), ())


def test_async_resolves_its_section_backlog_policy_and_written_prefixes() -> None:
    d = _resolved("async.yaml")
    assert d.asynchronous is not None
    assert [s.kind for s in d.scaling] == ["backlog"]
    a = d.asynchronous
    assert {"async/input", a.output_prefix.strip("/"), a.failure_prefix.strip("/")} <= set(d.written_prefixes)


def test_disabled_data_capture_resolves_to_none() -> None:
    assert _resolved("realtime.yaml").data_capture is not None

    def disable(data: dict[str, Any]) -> None:
        data["endpoint"]["data_capture"]["enabled"] = False
        data.get("storage", {}).get("expire_days", {}).pop("data-capture", None)

    d = _resolved("realtime.yaml", disable)
    assert d.data_capture is None and "data-capture" not in d.written_prefixes


def test_guardrails_and_vpc_are_the_configured_sections() -> None:
    vpc = {"subnet_ids": ["subnet-0123456789abcdef0"], "security_group_ids": ["sg-0123456789abcdef0"]}

    def place(data: dict[str, Any]) -> None:
        data.setdefault("security", {})["vpc"] = vpc

    d = _resolved("realtime.yaml", place)
    assert d.vpc is not None and d.vpc.subnet_ids == vpc["subnet_ids"]
    assert d.guardrails.strategy == raw("realtime.yaml")["endpoint"]["deployment"]["strategy"]


def test_inference_components_resolve_scale_to_zero_and_specifications() -> None:
    d = _resolved("inference-components.yaml")
    assert d.components is not None and d.components.scale_to_zero
    assert [c.name for c in d.components.bases] == ["tabular", "iris"] and d.components.adapters == ()
    assert d.components.specifications == {"tabular": (), "iris": ()}
    assert d.scaling == () and d.variants[0].containers == ()

    capacity = _resolved("capacity.yaml").components
    assert capacity is not None and not capacity.scale_to_zero
    compute = capacity.components[0].compute
    specs = dict(capacity.specifications["tabular"])
    assert list(specs) == ["ml.m5.xlarge", "ml.m6i.xlarge", "ml.c5.2xlarge"]
    assert specs["ml.m5.xlarge"] == compute and specs["ml.c5.2xlarge"].cpu_cores == 2
    assert _resolved("realtime.yaml").components is None


def test_adapter_weights_count_among_the_data_in_s3() -> None:
    d = _resolved("llm.yaml")
    assert d.components is not None
    adapters = {c.artifact_url for c in d.components.adapters}
    assert adapters and adapters <= d.s3_data_uris


def test_an_llm_image_the_local_endpoint_cannot_run_resolves_its_refusal() -> None:
    assert _resolved("realtime.yaml").local_refusal is None

    def djl(data: dict[str, Any]) -> None:
        data["image"] = {
            "source": "dlc",
            "uri": "763104351884.dkr.ecr.eu-west-1.amazonaws.com/djl-inference:0.33.0-lmi15.0.0-cu128",
        }

    refusal = _resolved("realtime.yaml", djl).local_refusal
    assert refusal is not None and "djl-inference" in refusal


def test_resolve_is_a_pure_function_that_caches_nothing(tmp_path: Path) -> None:
    loaded = load_config(CONFIG_DIR / "realtime.yaml")
    first = resolve(loaded, CONFIG_DIR)
    again = resolve(loaded, CONFIG_DIR)
    assert again == first and again is not first and first.base_dir == CONFIG_DIR.resolve()
    assert set(loaded.__pydantic_private__ or {}) == {"_notices"}, "nothing cached on the config"
    assert load_deployment(CONFIG_DIR / "realtime.yaml") == first
    elsewhere = resolve(loaded, tmp_path)  # a loaded config's paths are absolute: the same files
    assert elsewhere.base_dir == tmp_path.resolve() and elsewhere.containers == first.containers

    unloaded = parse_config(raw("realtime.yaml"))
    path = resolve(unloaded, tmp_path).containers[0].model_data.path
    assert path is not None and path.is_relative_to(tmp_path.parent.resolve())


def test_a_copy_of_a_loaded_config_is_resolved_as_itself() -> None:
    loaded = load_config(CONFIG_DIR / "realtime.yaml")
    staged = loaded.model_copy(update={"environment": "staging", "region": "eu-central-1"})
    d = resolve(staged, Path.cwd())
    assert (d.environment, d.region) == ("staging", "eu-central-1")
    assert resolve(loaded, Path.cwd()).environment == loaded.environment


@pytest.mark.parametrize("name", [p.name for p in sorted(CONFIG_DIR.glob("*.yaml"))])
def test_the_resolved_deployment_keeps_no_public_reference_to_the_config(name: str) -> None:
    d = load_deployment(CONFIG_DIR / name)
    public = {f for f in vars(d) if not f.startswith("_")}
    assert not any(type(getattr(d, f)).__name__ == "DeploymentConfig" for f in public)


def test_an_llm_engines_environment_is_the_configs_alone() -> None:
    """vLLM's server reads none of the kit's variables: SMKIT_PROFILE goes to the kit's runtime only."""
    llm = load_deployment(CONFIG_DIR / "llm.yaml")
    (engine,) = llm.containers
    assert dict(engine.environment) == raw("llm.yaml")["model"]["containers"][0]["environment"]
    kit = load_deployment(CONFIG_DIR / "realtime.yaml")
    assert all(c.environment["SMKIT_PROFILE"] == "realtime" for c in kit.containers)
