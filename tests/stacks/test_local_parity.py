"""Local == AWS: for every config in config/ and the derived ones, what the synthesized template gives each
container equals what the local endpoint starts it with.

Both read the resolved deployment (smkit.config.resolved); this test holds the two translations to it:
the ``Environment`` of each ContainerDefinition equals the local container's variables minus the ones a
local run alone needs (``smkit.local.containers.LOCAL_ONLY``, each with its reason), and so do the payload
limit, timeouts, program and worker count the serving runtime reads from them, the model data kind and the
variant names. The async container, started with the template's environment, takes a 7 MiB request.
An LLM engine container (AWS's vLLM image, smkit.llm.engine) is held to the same Environment, and its
engine arguments are the ones the image's entrypoint derives from that Environment.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from stack_support import ROOT, SynthesizedApp

from smkit.cdk.constructs.logical_ids import pascal
from smkit.config.engine_settings import engine_arguments
from smkit.config.local_refusal import refusal
from smkit.config.resolved import ResolvedContainer, resolve
from smkit.contract import ASYNC_PAYLOAD_LIMIT, BIND_TO_PORT, MIB, MODEL_SERVER_WORKERS, REGION
from smkit.cpus import available_cpus
from smkit.hosting.env import ServingEnv
from smkit.llm.engine import CONTAINER_MODEL_DIR, SERVER_MODULE
from smkit.local.artifacts import extract_archive
from smkit.local.channels import local_environment
from smkit.local.components import ComponentEndpointRuntime, create_runtime
from smkit.local.containers import LOCAL_ONLY, ContainerLaunch, ContainerProcess
from smkit.local.engines import EngineProcess
from smkit.local.runtime import EndpointRuntime, LocalSettings

PORT = 8080
LOCAL_CPUS = available_cpus().count


def _runtime(synthesized: SynthesizedApp, case: str) -> EndpointRuntime:
    settings = LocalSettings(root=ROOT, model_envs=False, region="eu-west-1")
    return create_runtime(resolve(synthesized.configs[case], ROOT), settings=settings)


def _processes(runtime: EndpointRuntime) -> list[ContainerProcess]:
    processes = [p for v in runtime.variants for p in v.processes]
    if runtime.shadows is not None:
        processes += [p for v in runtime.shadows.variants for p in v.processes]
    if isinstance(runtime, ComponentEndpointRuntime):
        # An adapter component runs in its base's process (smkit.local.engines).
        processes += [c.process for n, c in runtime.components.items() if n not in runtime.adapters]
    return processes


def _definitions(template: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for resource in template["Resources"].values():
        if resource["Type"] in ("AWS::SageMaker::Model", "Custom::SageMakerModel"):
            props = resource["Properties"]
            out += [props["PrimaryContainer"]] if "PrimaryContainer" in props else props["Containers"]
    return out


def _definition_of(container: ResolvedContainer, definitions: list[dict[str, Any]]) -> dict[str, Any]:
    """The ContainerDefinition whose model data is this container's (uploaded under its construct id)."""
    data = container.model_data
    marker = (
        data.package
        if data.kind == "model-package"
        else data.uri or f"models/ModelData{pascal(container.name)}/"
    )
    found = [d for d in definitions if marker in json.dumps(d)]
    assert found, f"no ContainerDefinition for container {container.name}"
    return found[0]


def _template_kind(definition: dict[str, Any]) -> str:
    if "ModelPackageName" in definition:
        return "model-package"
    if definition.get("Mode") == "MultiModel":
        return "multi-model"
    source = definition.get("ModelDataSource", {}).get("S3DataSource")
    if source is not None:
        assert (source["S3DataType"], source["CompressionType"]) == ("S3Prefix", "None")
        return "prefix"
    assert "ModelDataUrl" in definition
    return "archive"


def _local_kind(runtime: EndpointRuntime, process: ContainerProcess) -> str:
    container = runtime.deployment.container(process.spec.name)
    if container.model_data.kind == "model-package":
        # The local endpoint serves the registry version's own data (smkit.model_packages.served_packages,
        # tests/deploy/test_model_registry.py); what it downloads is the registry's, not the config's.
        return "model-package"
    if process.spec.multi_model:
        return "multi-model"
    return "archive" if str(process.spec.model_dir) in runtime.archives else "prefix"


def _cases(synthesized: SynthesizedApp) -> list[str]:
    """Every config the local endpoint runs; the ones it refuses are held to their refusal below."""
    return sorted(case for case, config in synthesized.configs.items() if refusal(config) is None)


def test_every_shipped_config_runs_locally(synthesized: SynthesizedApp) -> None:
    """None is left out of the comparison: the LLM config runs with its engine (AWS's vLLM image)."""
    refused = {case: refusal(config) for case, config in synthesized.configs.items() if refusal(config)}
    assert refused == {}
    assert "llm" in _cases(synthesized)
    assert len(_cases(synthesized)) >= 16


def test_the_llm_engine_gets_the_templates_environment_and_the_arguments_derived_from_it(
    synthesized: SynthesizedApp,
) -> None:
    template = synthesized.template_json("llm")
    runtime = _runtime(synthesized, "llm")
    assert isinstance(runtime, ComponentEndpointRuntime)
    (engine,) = [p for p in _processes(runtime) if isinstance(p, EngineProcess)]
    container = resolve(synthesized.configs["llm"], Path.cwd()).container(engine.spec.name)
    aws = _definition_of(container, _definitions(template))["Environment"]
    assert aws == dict(container.environment)
    assert {k: v for k, v in engine.container_environment(PORT).items() if k in aws} == aws
    derived = engine_arguments("vllm", aws)
    assert derived == [
        "--max-model-len",
        "4096",
        "--enable-lora",
        "--max-lora-rank",
        "64",
        "--max-loras",
        "4",
    ]
    command = engine.command(PORT)
    assert command[1:3] == ["-m", SERVER_MODULE]
    assert command[-len(derived) :] == derived
    assert command[command.index("--served-model-name") + 1] == CONTAINER_MODEL_DIR
    assert command[command.index("--port") + 1] == str(PORT)
    # The adapter component is served by the base's engine, with the artifact the template names.
    assert set(runtime.adapters) == {"qwen-support"}
    assert runtime.adapters["qwen-support"].process is engine


def test_every_container_gets_the_templates_environment_locally(synthesized: SynthesizedApp) -> None:
    checked = 0
    for case in _cases(synthesized):
        template = synthesized.template_json(case)
        definitions = _definitions(template)
        runtime = _runtime(synthesized, case)
        deployment = resolve(synthesized.configs[case], Path.cwd())
        for process in _processes(runtime):
            container = deployment.container(process.spec.name)
            definition = _definition_of(container, definitions)
            aws = definition.get("Environment", {})
            local = process.container_environment(PORT)
            where = f"{case}: container {process.label}"
            # The resolved Environment is what the stacks wrote, key for key.
            assert aws == dict(container.environment), where
            extra = {k: v for k, v in local.items() if k not in aws}
            assert set(extra) <= set(LOCAL_ONLY), (
                f"{where}: unexplained local-only {sorted(set(extra) - set(LOCAL_ONLY))}"
            )
            # A value naming a channel's folder by AWS's path names its folder here (smkit.local.channels).
            expected = local_environment(aws, process.spec.channels_dir)
            assert {k: local[k] for k in aws} == expected, (
                f"{where}: the local values differ from the template's"
            )
            assert local[BIND_TO_PORT] == str(PORT) and local[REGION] == "eu-west-1"
            if isinstance(process, EngineProcess):
                # vLLM's server, not the kit's runtime: its arguments are checked in the test above.
                assert _template_kind(definition) == container.model_data.kind == "prefix", where
                checked += 1
                continue

            aws_env = ServingEnv.from_environ({**aws, BIND_TO_PORT: str(PORT)})
            local_env = ServingEnv.from_environ(local)
            for name in (
                "profile",
                "max_payload_bytes",
                "timeout_seconds",
                "startup_timeout_seconds",
                "program",
            ):
                assert getattr(local_env, name) == getattr(aws_env, name), f"{where}: {name}"
            assert local_env.multi_model == container.multi_model, where

            # Workers: the config's count where it sets one (then the template carries it), else one per
            # vCPU of the instance, capped by the local CPUs (what the image computes from os.cpu_count()).
            variant = next(
                v
                for v in (*deployment.variants, *deployment.shadow_variants)
                if process.label.startswith(f"{v.name}-")
            )
            expected = container.workers(variant, LOCAL_CPUS).count
            assert local_env.workers == expected, where
            if MODEL_SERVER_WORKERS in aws:
                assert aws_env.workers == expected, where
            elif variant.vcpus is not None:
                assert expected == min(variant.vcpus, LOCAL_CPUS), where
            assert "--workers" not in process.command(PORT), where

            assert _template_kind(definition) == container.model_data.kind == _local_kind(runtime, process), (
                where
            )
            checked += 1
    assert checked >= 20


def test_variant_names_match(synthesized: SynthesizedApp) -> None:
    for case in _cases(synthesized):
        template = synthesized.template_json(case)
        (config,) = [
            r["Properties"]
            for r in template["Resources"].values()
            if r["Type"] == "AWS::SageMaker::EndpointConfig"
        ]
        runtime = _runtime(synthesized, case)
        aws = [v["VariantName"] for v in config["ProductionVariants"]]
        if isinstance(runtime, ComponentEndpointRuntime):
            assert aws == [runtime.variant_name], case
        else:
            assert aws == [v.name for v in runtime.variants], case
        shadows = [v["VariantName"] for v in config.get("ShadowProductionVariants", [])]
        assert shadows == [v.name for v in (runtime.shadows.variants if runtime.shadows else [])], case


@pytest.mark.parametrize(
    ("case", "profile", "limit"),
    [
        ("async", "async", ASYNC_PAYLOAD_LIMIT),
        ("serverless", "serverless", 4 * MIB),
        ("realtime", "realtime", 6 * MIB),
    ],
)
def test_the_template_states_the_profile_of_the_endpoint(
    synthesized: SynthesizedApp, case: str, profile: str, limit: int
) -> None:
    (definition,) = _definitions(synthesized.template_json(case))
    env = ServingEnv.from_environ(definition["Environment"])
    assert (env.profile, env.max_payload_bytes) == (profile, limit)


def test_the_async_container_with_the_templates_environment_takes_7_mib(
    synthesized: SynthesizedApp, tmp_path: Path
) -> None:
    (definition,) = _definitions(synthesized.template_json("async"))
    container = resolve(synthesized.configs["async"], Path.cwd()).containers[0]
    assert container.model_data.path is not None
    model_dir = extract_archive(container.model_data.path, tmp_path / "model")
    spec = ContainerLaunch(name="tabular", model_dir=model_dir, environment=definition["Environment"])
    process = ContainerProcess(spec, label="async", log_dir=tmp_path, workers=1)
    row = (ROOT / "model_code" / "tabular" / "samples" / "request.csv").read_bytes().splitlines()[0] + b"\n"
    body = row * (7 * MIB // len(row) + 1)
    assert 7 * MIB < len(body) < ASYNC_PAYLOAD_LIMIT

    async def call() -> tuple[int, bytes]:
        await process.start()
        try:
            reply = await process.request(
                "POST",
                "/invocations",
                body=body,
                headers={"Content-Type": "text/csv", "Accept": "application/json"},
            )
            return reply.status, reply.body
        finally:
            await process.stop()

    status, answer = asyncio.run(call())
    assert status == 200, answer[:500]
    assert len(json.loads(answer)["predictions"]) == body.count(b"\n")


def test_the_local_endpoint_mounts_the_channels_the_template_creates(synthesized: SynthesizedApp) -> None:
    """For the config with additional model data sources: the template's AdditionalModelDataSources (names,
    S3DataType and CompressionType, the S3 URI of data already there) are the folders the local endpoint
    gives the container, each read as SageMaker reads it, and the variable naming a channel by AWS's path
    names that channel's folder locally."""
    case = "realtime-channels"
    (definition,) = _definitions(synthesized.template_json(case))
    aws = {
        source["ChannelName"]: source["S3DataSource"] for source in definition["AdditionalModelDataSources"]
    }
    runtime = _runtime(synthesized, case)
    processes = _processes(runtime)
    planned = runtime.channels.planned
    for process in processes:
        local = {name: plan for (container, name), plan in planned.items() if container == process.spec.name}
        assert set(local) == set(aws) == {"draft", "lookup.v2", "heads"}
        for name, plan in local.items():
            form = (aws[name]["S3DataType"], aws[name]["CompressionType"])
            assert form == {"archive": ("S3Object", "Gzip"), "prefix": ("S3Prefix", "None")}[plan.kind], name
            if plan.uri is not None:
                assert aws[name]["S3Uri"] == plan.uri
            else:
                assert plan.source is not None and "Fn::Join" in aws[name]["S3Uri"]  # uploaded by the stack
        assert process.spec.channels_dir is not None
        variable = process.container_environment(PORT)["DRAFT_MODEL"]
        assert definition["Environment"]["DRAFT_MODEL"] == "/opt/ml/additional-model-data-sources/draft"
        assert variable == str(process.spec.channels_dir / "draft")
    assert len(processes) == 2  # both variants' containers
