"""Which API member a CloudFormation property becomes: the property paths of a synthesized template (``A.B``,
``A[].B`` for lists of objects, :func:`smkit.config.rule_doc.property_paths`) resolved to a member of the
request shape of botocore's service model (:mod:`smkit.aws.service_models`) that CloudFormation calls for the
resource, so the model's ranges, lengths, patterns and enums can be read beside the registry schema's.

CloudFormation's property names for these resources are the API's member names; a path is walked through
nested structures and lists of the request shape. Where a resource's properties are spread over two calls
(an endpoint's retained-properties options and an inference component's deployment settings exist only on the
update), the create request is tried first, then the update. Properties that have no API counterpart are listed
in :data:`NO_COUNTERPART` with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from smkit.aws.service_models import Constraint, member, shape

# Resource type -> (service, request shapes tried in order).
REQUESTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "AWS::SageMaker::Model": ("sagemaker", ("CreateModelInput",)),
    # smkit's model created through the API (smkit.cdk.constructs.api_model): its properties are CreateModel's.
    "Custom::SageMakerModel": ("sagemaker", ("CreateModelInput",)),
    "AWS::SageMaker::EndpointConfig": ("sagemaker", ("CreateEndpointConfigInput",)),
    "AWS::SageMaker::Endpoint": ("sagemaker", ("CreateEndpointInput", "UpdateEndpointInput")),
    "AWS::SageMaker::InferenceComponent": (
        "sagemaker",
        ("CreateInferenceComponentInput", "UpdateInferenceComponentInput"),
    ),
    "AWS::ApplicationAutoScaling::ScalableTarget": (
        "application-autoscaling",
        ("RegisterScalableTargetRequest",),
    ),
    "AWS::ApplicationAutoScaling::ScalingPolicy": ("application-autoscaling", ("PutScalingPolicyRequest",)),
    "AWS::CloudWatch::Alarm": ("cloudwatch", ("PutMetricAlarmInput",)),
}

# (resource type, property path or a prefix of it) -> why the property has no member of the request shape.
NO_COUNTERPART: dict[tuple[str, str], str] = {
    ("AWS::ApplicationAutoScaling::ScalableTarget", "Tags"): (
        "the API takes tags as a map of key to value (RegisterScalableTargetRequest.Tags, a TagMap); "
        "CloudFormation as a list of Key/Value objects"
    ),
    ("Custom::SageMakerModel", "ServiceToken"): (
        "CloudFormation's reference to the custom resource's function, which calls CreateModel"
    ),
    ("Custom::SageMakerModel", "ModelNamePrefix"): (
        "the function names the model <ModelNamePrefix>-<digest of the request> (ModelName)"
    ),
    ("AWS::ApplicationAutoScaling::ScalingPolicy", "ScalingTargetId"): (
        "CloudFormation's reference to the scalable target; the API names the target by ServiceNamespace, "
        "ResourceId and ScalableDimension instead"
    ),
}


@dataclass(frozen=True)
class Mapped:
    """The API member a property becomes: its constraints and the type of its shape (``integer``, ``string``,
    ``list``, ``map``, ...), which says whether ``min``/``max`` bound a value, a length or an item count."""

    constraint: Constraint
    kind: str

    @property
    def name(self) -> str:
        """``service Shape.Member``."""
        c = self.constraint
        return f"{c.service} {c.shape}.{c.member}"


def no_counterpart(resource_type: str, path: str) -> str | None:
    """Why ``path`` of ``resource_type`` has no API member (None: it should have one, or the type is unmapped)."""
    for (t, p), reason in NO_COUNTERPART.items():
        if t == resource_type and (path == p or path.startswith((f"{p}.", f"{p}[]"))):
            return reason
    return None


def _walk(service: str, request: str, path: str) -> Mapped | None:
    structure = request
    segments = path.split(".")
    for index, segment in enumerate(segments):
        name, many = segment.removesuffix("[]"), segment.endswith("[]")
        members = shape(service, structure).members
        if name not in members:
            return None
        target = members[name]
        if index == len(segments) - 1:
            if many:
                return None
            return Mapped(member(service, structure, name), target.type_name)
        if many:
            if target.type_name != "list":
                return None
            target = target.member
        if target.type_name != "structure":
            return None
        structure = target.name
    return None


def api_member(resource_type: str, path: str) -> Mapped | None:
    """The request member ``path`` of ``resource_type`` becomes (None: the type is not mapped, the property is
    in :data:`NO_COUNTERPART`, or the request shapes have no such member)."""
    if resource_type not in REQUESTS or no_counterpart(resource_type, path) is not None:
        return None
    service, requests = REQUESTS[resource_type]
    for request in requests:
        found = _walk(service, request, path)
        if found is not None:
            return found
    return None


def describe(mapped: Mapped) -> str:
    """The member's limits as a short text: ``min 1``, ``1-100``, ``length 1-63``, ``items 0-5``,
    ``pattern ...``, ``enum of N values`` ("" where the model sets none)."""
    c = mapped.constraint
    out = []
    if c.min is not None or c.max is not None:
        if c.min is not None and c.max is not None:
            bounds = f"{c.min}-{c.max}"
        elif c.min is not None:
            bounds = f"min {c.min}"
        else:
            bounds = f"max {c.max}"
        prefix = {"string": "length ", "list": "items ", "map": "entries ", "blob": "bytes "}.get(
            mapped.kind, ""
        )
        out.append(prefix + bounds)
    if c.pattern is not None:
        out.append("pattern `" + c.pattern.replace("|", "\\|") + "`")
    if c.enum:
        out.append(f"enum of {len(c.enum)} values")
    return "; ".join(out)
