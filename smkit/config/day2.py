"""Day-2 rules: what an update from the deployed endpoint to a config does, decided before CloudFormation runs.

The serving stack applies :func:`plan_update` to the deployed endpoint that ``smkit deploy`` reads from
SageMaker (the CDK context ``deployed_endpoint``, :data:`smkit.config.overrides.DEPLOYED_ENDPOINT_CONTEXT`), and
the emulator's UpdateEndpoint refuses what SageMaker refuses:

- Blue/green and rolling updates (``Endpoint.DeploymentConfig``) need the new endpoint config to keep the old
  one's variant names: "your new endpoint configuration must have the same variant name as the old endpoint
  configuration" (https://docs.aws.amazon.com/sagemaker/latest/dg/deployment-guardrails-blue-green.html).
  A variant added, removed or renamed, or a shadow variant added or removed, is therefore sent without
  ``DeploymentConfig`` (SageMaker replaces the fleet at once, without traffic shifting or auto-rollback), and
  the synth output says why.
- A switch between serverless and instance-based gives the endpoint a new name (smkit.cdk.mapping.endpoint_kind):
  CloudFormation creates the new endpoint and deletes the old one, so nothing is updated in place.
- An instance-type change (or removal) of an autoscaled variant: "If the update would change the instance type
  for any model that is a target for auto scaling, the update fails." AWS's procedure deregisters the scalable
  target, updates, and registers it again (https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-scaling-update.html):
  ``smkit deploy`` does so around ``cdk deploy`` (smkit.release.instance_type_change); the pipeline cannot, so its synth
  refuses such an update and names the procedure (:func:`pipeline_refusal`).
- Everything else (instance type, instance count, model data, image) updates the endpoint in place under its
  name, with the config's deployment guardrails.

Both deploy paths read the same plan: ``smkit deploy`` passes the deployed endpoint it reads from SageMaker,
the pipeline the one recorded for each stage (the CDK context ``deployed_endpoints``,
:data:`smkit.config.overrides.DEPLOYED_ENDPOINTS_CONTEXT`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from smkit.config.models import DeploymentConfig

BLUE_GREEN_URL = "https://docs.aws.amazon.com/sagemaker/latest/dg/deployment-guardrails-blue-green.html"
SAME_VARIANT_NAMES = (
    "your new endpoint configuration must have the same variant name as the old endpoint configuration"
)
SCALING_UPDATE_URL = "https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-scaling-update.html"
SCALED_TYPE_CHANGE = "If the update would change the instance type for any model that is a target for auto scaling, the update fails."


@dataclass(frozen=True)
class DeployedEndpoint:
    """What SageMaker runs now: the endpoint's name, its config's production and shadow variant names, and
    (when known) each variant's instance type and the variants registered with Application Auto Scaling."""

    name: str
    production: tuple[str, ...]
    shadow: tuple[str, ...] = ()
    instance_types: Mapping[str, str] = field(default_factory=dict)
    autoscaled: tuple[str, ...] = ()

    def to_json(self) -> str:
        return json.dumps(
            {
                "name": self.name,
                "production": self.production,
                "shadow": self.shadow,
                "instance_types": dict(self.instance_types),
                "autoscaled": self.autoscaled,
            }
        )

    @classmethod
    def from_json(cls, value: Any) -> DeployedEndpoint:
        """From the context value (a JSON object or its text); ValueError naming the problem."""
        try:
            data = json.loads(value) if isinstance(value, str) else value
            return cls(
                name=str(data["name"]),
                production=tuple(str(n) for n in data["production"]),
                shadow=tuple(str(n) for n in data.get("shadow", ())),
                instance_types={str(k): str(v) for k, v in data.get("instance_types", {}).items()},
                autoscaled=tuple(str(n) for n in data.get("autoscaled", ())),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(
                f"context deployed_endpoint: {value!r} is not "
                '{"name": ENDPOINT, "production": [VARIANT, ...], "shadow": [VARIANT, ...], '
                '"instance_types": {VARIANT: TYPE, ...}, "autoscaled": [VARIANT, ...]} '
                f"({exc.__class__.__name__}: {exc})"
            ) from None


def variant_names(cfg: DeploymentConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(production, shadow)`` variant names the config's endpoint config will have."""
    ep = cfg.endpoint
    production = (
        (ep.serverless.variant_name,) if ep.serverless is not None else tuple(v.name for v in ep.variants)
    )
    return production, tuple(s.name for s in ep.shadow_variants)


@dataclass(frozen=True)
class UpdatePlan:
    """What the stacks do with an update: ``action`` create (a new endpoint name) or update (in place);
    ``deployment_config``: whether Endpoint.DeploymentConfig is sent; ``reason``: why not, for the synth output;
    ``pause_scaling``: autoscaled variants whose instance type changes or that go away (their scalable targets
    must be deregistered around the update)."""

    action: str
    deployment_config: bool
    reason: str | None = None
    pause_scaling: tuple[str, ...] = ()


def plan_update(
    deployed: DeployedEndpoint | None,
    names: tuple[tuple[str, ...], tuple[str, ...]],
    endpoint_name: str,
    instance_types: Mapping[str, str | None] | None = None,
) -> UpdatePlan:
    """The update from ``deployed`` (None: nothing deployed yet) to an endpoint called ``endpoint_name`` whose
    endpoint config has the ``(production, shadow)`` variant ``names`` (:func:`variant_names`) and, per variant,
    ``instance_types`` (None: serverless)."""
    if deployed is None or deployed.name != endpoint_name:
        return UpdatePlan("create", True)
    new_types = dict(instance_types or {})
    pause = tuple(
        sorted(
            v
            for v in deployed.autoscaled
            if v in deployed.instance_types
            and (v not in new_types or new_types[v] != deployed.instance_types[v])
        )
    )
    production, shadow = names
    changes = _changes("variant", deployed.production, production) + _changes(
        "shadow variant", deployed.shadow, shadow
    )
    if not changes:
        return UpdatePlan("update", True, pause_scaling=pause)
    return UpdatePlan(
        "update",
        False,
        f"endpoint {endpoint_name}: {'; '.join(changes)}: blue/green and rolling updates need the same variant "
        f'names ("{SAME_VARIANT_NAMES}", {BLUE_GREEN_URL}), so this update is sent without DeploymentConfig: '
        "SageMaker replaces the fleet at once, without traffic shifting or auto-rollback. To keep the "
        "guardrails, deploy the variant change on its own first, or keep the old names",
        pause_scaling=pause,
    )


def pipeline_refusal(plan: UpdatePlan, stage: str, config_file: str) -> str | None:
    """Why the pipeline cannot deploy ``plan`` to ``stage`` (None: it can), naming the procedure.

    The pipeline's CloudFormation deploy cannot deregister and register scalable targets around the update,
    so an instance-type change of an autoscaled variant would fail there; ``smkit deploy`` runs AWS's
    procedure."""
    if not plan.pause_scaling:
        return None
    variants = ", ".join(plan.pause_scaling)
    return (
        f"the {stage} stage's update changes the instance type of (or removes) autoscaled variant(s) {variants}; "
        f'AWS: "{SCALED_TYPE_CHANGE}" ({SCALING_UPDATE_URL}). The pipeline deploys with CloudFormation only and '
        "cannot deregister the scalable targets around the update. Procedure: deploy this change to the stage "
        f"with `smkit deploy --config {config_file}` (it deregisters the targets, updates the endpoint and "
        "registers them again), record the endpoint it leaves, then let the pipeline run; or take the variant's "
        "autoscaling out in one pipeline run and change the instance type (autoscaling back in) in the next"
    )


def _changes(what: str, old: tuple[str, ...], new: tuple[str, ...]) -> list[str]:
    added = [n for n in new if n not in old]
    removed = [n for n in old if n not in new]
    out = []
    if added and removed and len(added) == len(removed) and what == "variant":
        return [f"{what} {a!r} renamed from {r!r}" for r, a in zip(removed, added, strict=True)]
    if added:
        out.append(f"{what} {', '.join(map(repr, added))} added")
    if removed:
        out.append(f"{what} {', '.join(map(repr, removed))} removed")
    return out
