"""The local endpoint's process for AWS's vLLM image, and the router of its adapter components.

:class:`EngineProcess` starts vLLM's server as the image's entrypoint does (smkit.llm.engine: command,
environment, what differs locally and why). :class:`AdapterRouter` serves an adapter inference component.

On AWS an adapter component (``Specification.BaseInferenceComponentName`` with ``Container.ArtifactUrl``)
has no container of its own: SageMaker registers the adapter's weights with the base component's engine
and sends each request for the adapter to that engine with the adapter selected
(https://docs.aws.amazon.com/sagemaker/latest/dg/realtime-endpoints-adapt.html). The engine side of that
contract is AWS's model-hosting-container-standards package, which vLLM's server uses
(docs/sagemaker/05_lora_adapter_management.md there): ``POST /adapters`` with ``{"name", "src"}`` loads
the weights, and the ``X-Amzn-SageMaker-Adapter-Identifier`` header on ``/invocations`` selects them.
Locally the adapter is registered under its component's name with the folder its ``artifact_url`` was
downloaded (and, for an archive, extracted) into. docs/llm.md.
"""

from __future__ import annotations

import os
from pathlib import Path

from smkit.config.engine_settings import EngineSettingError, engine_arguments
from smkit.config.resolved import ResolvedContainer
from smkit.hosting.childpath import PYTHONPATH, child_path
from smkit.llm.engine import (
    CONTAINER_MODEL_DIR,
    ENGINE_STARTUP_S,
    KV_CACHE_GIB,
    KV_CACHE_VAR,
    MODEL_PATH_VAR,
    OFFLINE_VAR,
    SERVER_MODULE,
    SMALLER_MODEL,
    adapter_headers,
    cpu_refusal,
    engine_environment,
    local_arguments,
    local_engine,
    local_model_path,
    memory_refusal,
)
from smkit.local.artifacts import ArtifactError
from smkit.local.channels import local_value
from smkit.local.containers import ContainerLaunch, ContainerProcess
from smkit.local.routers import SingleContainer
from smkit.local.runtime_api import Invocation
from smkit.modelenv import ModelEnvError
from smkit.process import HOST


class EngineProcess(ContainerProcess):
    """AWS's vLLM image as a local process: vLLM's server on the container's model folder."""

    def __init__(self, spec: ContainerLaunch, *, engine: str, **kwargs: object) -> None:
        super().__init__(spec, **kwargs)  # type: ignore[arg-type]
        self.startup_timeout_s = max(self.startup_timeout_s, ENGINE_STARTUP_S)
        self.engine = engine
        try:
            self.arguments = engine_arguments(engine, spec.environment)
        except EngineSettingError as exc:
            raise ArtifactError(f"container {spec.name}: {exc}") from None
        model = spec.environment.get("SM_VLLM_MODEL", CONTAINER_MODEL_DIR)
        if model != CONTAINER_MODEL_DIR:
            raise ArtifactError(
                f"container {spec.name}: SM_VLLM_MODEL={model!r} names a model on a hub, which the local "
                f"endpoint does not download; remove SM_VLLM_MODEL (the image then serves {CONTAINER_MODEL_DIR}, "
                "the config's model_data) or set it to that path"
            )

    def prepare(self, *, python: str | None = None) -> None:
        """Check this machine can run the engine and the model, then use the engine environment with the
        model folder's ``requirements.txt`` layered over it (smkit.llm.layer), as the image installs it."""
        refusal = cpu_refusal()
        if refusal is None:
            kv_cache = float(os.environ.get(KV_CACHE_VAR) or KV_CACHE_GIB)
            refusal = memory_refusal(self.spec.model_dir, kv_cache)
        if refusal is not None:
            raise ArtifactError(
                f"container {self.label}: the local endpoint cannot run it: {refusal}; {SMALLER_MODEL}"
            )
        try:
            if python is not None:
                self.use_environment(python, {})
                return
            interpreter, layers = engine_environment(self.spec.model_dir)
        except ModelEnvError as exc:
            raise ArtifactError(f"container {self.label}: the engine's environment: {exc}") from None
        paths = {PYTHONPATH: child_path(layers, os.environ.get(PYTHONPATH))} if layers else {}
        self.use_environment(interpreter, paths)

    def container_environment(self, port: int) -> dict[str, str]:
        env = super().container_environment(port)
        env.setdefault(KV_CACHE_VAR, os.environ.get(KV_CACHE_VAR) or KV_CACHE_GIB)
        env[OFFLINE_VAR] = "1"
        # The custom handler file (model.py) is read from the model folder, /opt/ml/model on AWS.
        env[MODEL_PATH_VAR] = local_model_path(self.spec.environment, self.spec.model_dir)
        return env

    def command(self, port: int) -> list[str]:
        """The image's entrypoint command, with the local port, model folder and channels folder (a draft model
        of a channel named by AWS's path, smkit.local.channels)."""
        served = (
            []
            if "SM_VLLM_SERVED_MODEL_NAME" in self.spec.environment
            else ["--served-model-name", CONTAINER_MODEL_DIR]
        )
        model = ["--model", str(self.spec.model_dir), *served]
        return [
            self.python,
            "-m",
            SERVER_MODULE,
            "--host",
            HOST,
            "--port",
            str(port),
            *model,
            *(
                local_value(argument, self.spec.channels_dir)
                for argument in local_arguments(self.arguments, self.spec.model_dir)
            ),
        ]

    async def load_adapter(self, name: str, source: Path) -> None:
        """Register a LoRA adapter with the engine (``POST /adapters``, as SageMaker does for an adapter
        component); ArtifactError with the engine's answer when it refuses."""
        reply = await self.request("POST", "/adapters", json_body={"name": name, "src": str(source)})
        if not reply.ok:
            raise ArtifactError(
                f"adapter component {name}: the engine of container {self.label} refused the adapter in {source} "
                f"({reply.status}): {reply.body.decode('utf-8', errors='replace')[:500]}"
            )


def engine_process(
    container: ResolvedContainer, spec: ContainerLaunch, **kwargs: object
) -> EngineProcess | None:
    """The process of ``container`` when it runs an engine image the local endpoint runs, else None."""
    engine = local_engine(container)
    return None if engine is None else EngineProcess(spec, engine=engine, **kwargs)


class AdapterRouter(SingleContainer):
    """The base component's container, with the adapter selected on every request."""

    def __init__(self, process: ContainerProcess, *, endpoint: str, adapter: str) -> None:
        super().__init__(process, endpoint=endpoint)
        self.adapter = adapter

    def headers(self, invocation: Invocation) -> dict[str, str]:
        return {**super().headers(invocation), **adapter_headers(self.adapter)}
