"""The release record: what every container of an endpoint ran after each successful deploy.

After a deploy, :func:`describe_release` reads back from SageMaker the image and model data of each
container and :func:`record_release` appends them to one SSM String parameter per deployment
(``/smkit/<name>/<environment>/releases``); a rollback reads them with :func:`read_releases`.

Why SSM and not stack outputs or tags: moto returns no stack outputs for change-set deploys
(docs/toolchain.md), and stack-level tags propagate to every resource, so writing the previous release into
them would update the Model and EndpointConfig on each deploy. The parameter is readable with
``aws ssm get-parameter`` and costs nothing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from smkit.aws.limits import SSM_STANDARD_LIMIT
from smkit.release.aws import client

RELEASE_HISTORY = 10


@dataclass(frozen=True)
class DeployedContainer:
    """What one container of the deployed Model runs: the image URI and its model data location; for a model
    package (``data_type: model-package``) ``image`` is the version's ARN, which names both."""

    image: str
    model_data: str | None
    data_type: str = "archive"  # archive | prefix | multi-model | model-package, as the config's source


@dataclass(frozen=True)
class Release:
    """One successful deploy: the image and model data every container ran, and where it came from."""

    endpoint: str
    containers: tuple[DeployedContainer, ...]
    deployed_at: str
    image_tag: str | None = None
    note: str = ""
    extra: dict[str, str] = field(default_factory=dict)
    adapters: tuple[str, ...] = ()  # ArtifactUrl of each adapter component, by component name

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["containers"] = [asdict(c) for c in self.containers]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Release:
        containers = tuple(DeployedContainer(**c) for c in data["containers"])
        return cls(**{**data, "containers": containers, "adapters": tuple(data.get("adapters", ()))})


def describe_release(endpoint_name: str, *, image_tag: str | None, note: str, region: str | None) -> Release:
    """Read back, from SageMaker itself, what the endpoint now runs."""
    sm = client("sagemaker", region)
    endpoint = sm.describe_endpoint(EndpointName=endpoint_name)
    config = sm.describe_endpoint_config(EndpointConfigName=endpoint["EndpointConfigName"])
    # Production models, then shadow models; an inference-component endpoint's variant has no model of its
    # own and its models are the components' (in the order of the components' names).
    variants = [*config["ProductionVariants"], *config.get("ShadowProductionVariants", [])]
    model_names = list(dict.fromkeys(v["ModelName"] for v in variants if v.get("ModelName")))
    pools = [v for v in config["ProductionVariants"] if not v.get("ModelName")]
    components = (
        sm.list_inference_components(EndpointNameEquals=endpoint_name)["InferenceComponents"] if pools else []
    )
    adapters: list[str] = []
    for summary in sorted(components, key=lambda c: c["InferenceComponentName"]):
        name = summary["InferenceComponentName"]
        spec = sm.describe_inference_component(InferenceComponentName=name)["Specification"]
        if spec.get("ModelName"):  # an adapter component runs in its base's model: no model of its own
            model_names.append(spec["ModelName"])
        elif spec.get("Container", {}).get("ArtifactUrl"):
            adapters.append(spec["Container"]["ArtifactUrl"])
    containers: list[DeployedContainer] = []
    for model_name in model_names:
        model = sm.describe_model(ModelName=model_name)
        for definition in model.get("Containers") or [model["PrimaryContainer"]]:
            containers.append(_deployed_container(definition))
    return Release(
        endpoint=endpoint_name,
        containers=tuple(containers),
        deployed_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        image_tag=image_tag,
        note=note,
        adapters=tuple(adapters),
    )


def previous_s3_uris(history: list[Release], *, own_bucket: str | None) -> list[str]:
    """The S3 model data and adapter weights the recorded releases ran, outside the deployment's own bucket
    (whose copies the stack's models/ grant covers): what the execution role must keep reading so that the
    old fleet of an update, and a rollback, still load their data."""
    uris = [c.model_data for r in history for c in r.containers if c.model_data]
    uris += [a for r in history for a in r.adapters]
    own = f"s3://{own_bucket}/" if own_bucket else None
    return sorted({u for u in uris if u.startswith("s3://") and not (own and u.startswith(own))})


def _deployed_container(definition: Mapping[str, Any]) -> DeployedContainer:
    if "ModelPackageName" in definition:
        return DeployedContainer(
            image=definition["ModelPackageName"], model_data=None, data_type="model-package"
        )
    source = definition.get("ModelDataSource", {}).get("S3DataSource")
    if source:
        return DeployedContainer(image=definition["Image"], model_data=source["S3Uri"], data_type="prefix")
    kind = "multi-model" if definition.get("Mode") == "MultiModel" else "archive"
    return DeployedContainer(
        image=definition["Image"], model_data=definition.get("ModelDataUrl"), data_type=kind
    )


def release_parameter(name: str, environment: str) -> str:
    """The SSM parameter that keeps the release history of one deployment."""
    return f"/smkit/{name}/{environment}/releases"


def read_releases(parameter: str, *, region: str | None = None) -> list[Release]:
    """The recorded releases, oldest first (empty when nothing was recorded yet)."""
    ssm = client("ssm", region)
    try:
        value = ssm.get_parameter(Name=parameter)["Parameter"]["Value"]
    except ssm.exceptions.ParameterNotFound:
        return []
    return [Release.from_json(item) for item in json.loads(value)]


def record_release(parameter: str, release: Release, *, region: str | None = None) -> list[Release]:
    """Append ``release`` to the history (keeping the last few that fit in one standard parameter)."""
    history = [*read_releases(parameter, region=region), release][-RELEASE_HISTORY:]
    while True:
        value = json.dumps([r.to_json() for r in history], separators=(",", ":"))
        if len(value.encode()) <= SSM_STANDARD_LIMIT or len(history) == 1:
            break
        history = history[1:]
    client("ssm", region).put_parameter(
        Name=parameter,
        Value=value,
        Type="String",
        Overwrite=True,
        Description="smkit release history (written by each deploy, read by rollback)",
    )
    return history
