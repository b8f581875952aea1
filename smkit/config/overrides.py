"""The one override a deployment config takes from outside its file: the ECR image tag to deploy.

CI publishes the serving image under an immutable tag and deploys exactly that image
(``scripts/publish_image.py``, then ``cdk deploy -c image_tag=TAG``); the emulated deploy uses it for
configs whose image would be built by a Docker engine; a rollback pins the tag it recorded. All of them
apply :func:`with_image_tag` to the config's YAML data before it is validated, through
:func:`smkit.config.load_config` (``image_tag=``).
"""

from __future__ import annotations

from typing import Any

# The CDK context key app.py reads (``cdk synth -c image_tag=TAG``).
IMAGE_TAG_CONTEXT = "image_tag"
# The CDK context key of the S3 data recorded releases ran, which the execution role keeps reading
# (``smkit deploy`` passes it from the release history; smkit.cdk.compose reads it).
PREVIOUS_S3_CONTEXT = "previous_s3_uris"
# The CDK context key of the endpoint SageMaker runs now (smkit.config.day2.DeployedEndpoint, as JSON).
DEPLOYED_ENDPOINT_CONTEXT = "deployed_endpoint"
# The pipeline's: the endpoint each stage runs now, as recorded ({"staging": {...}, "prod": {...}}, each a
# DeployedEndpoint as JSON), so its synth plans each stage's update as ``smkit deploy`` does.
DEPLOYED_ENDPOINTS_CONTEXT = "deployed_endpoints"
OVERRIDDEN_SOURCES = ("build", "ecr")


def _pinned(image: Any, tag: str) -> Any:
    if not isinstance(image, dict) or image.get("source") not in OVERRIDDEN_SOURCES:
        return image
    pinned: dict[str, Any] = {"source": "ecr", "tag": tag}
    if image.get("source") == "ecr" and image.get("repository"):
        pinned["repository"] = image["repository"]
    return pinned


def with_image_tag(data: Any, tag: str) -> Any:
    """The config data with every ``build`` or ``ecr`` image (top level and per container) as ``ecr: tag``.

    An ``ecr`` image keeps its repository; a ``build`` image becomes the kit's ECR repository (the ECR
    stack's). ``dlc`` images are left alone. Anything that is not config-shaped is returned unchanged for
    the validation to report.
    """
    if not isinstance(data, dict):
        return data
    out = dict(data)
    if "image" in out:
        out["image"] = _pinned(out["image"], tag)
    model = out.get("model")
    if isinstance(model, dict) and isinstance(model.get("containers"), list):
        containers = [
            {**c, "image": _pinned(c["image"], tag)} if isinstance(c, dict) and "image" in c else c
            for c in model["containers"]
        ]
        out["model"] = {**model, "containers": containers}
    return out
