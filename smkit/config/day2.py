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
- Everything else (instance type, instance count, model data, image) updates the endpoint in place under its
  name, with the config's deployment guardrails.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from smkit.config.models import DeploymentConfig

BLUE_GREEN_URL = "https://docs.aws.amazon.com/sagemaker/latest/dg/deployment-guardrails-blue-green.html"
SAME_VARIANT_NAMES = (
    "your new endpoint configuration must have the same variant name as the old endpoint configuration"
)


@dataclass(frozen=True)
class DeployedEndpoint:
    """What SageMaker runs now: the endpoint's name and its config's production and shadow variant names."""

    name: str
    production: tuple[str, ...]
    shadow: tuple[str, ...] = ()

    def to_json(self) -> str:
        return json.dumps({"name": self.name, "production": self.production, "shadow": self.shadow})

    @classmethod
    def from_json(cls, value: Any) -> DeployedEndpoint:
        """From the context value (a JSON object or its text); ValueError naming the problem."""
        try:
            data = json.loads(value) if isinstance(value, str) else value
            return cls(
                name=str(data["name"]),
                production=tuple(str(n) for n in data["production"]),
                shadow=tuple(str(n) for n in data.get("shadow", ())),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(
                f"context deployed_endpoint: {value!r} is not "
                '{"name": ENDPOINT, "production": [VARIANT, ...], "shadow": [VARIANT, ...]} '
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
    ``deployment_config``: whether Endpoint.DeploymentConfig is sent; ``reason``: why not, for the synth output."""

    action: str
    deployment_config: bool
    reason: str | None = None


def plan_update(
    deployed: DeployedEndpoint | None, names: tuple[tuple[str, ...], tuple[str, ...]], endpoint_name: str
) -> UpdatePlan:
    """The update from ``deployed`` (None: nothing deployed yet) to an endpoint called ``endpoint_name`` whose
    endpoint config has the ``(production, shadow)`` variant ``names`` (:func:`variant_names`)."""
    if deployed is None or deployed.name != endpoint_name:
        return UpdatePlan("create", True)
    production, shadow = names
    changes = _changes("variant", deployed.production, production) + _changes(
        "shadow variant", deployed.shadow, shadow
    )
    if not changes:
        return UpdatePlan("update", True)
    return UpdatePlan(
        "update",
        False,
        f"endpoint {endpoint_name}: {'; '.join(changes)}: blue/green and rolling updates need the same variant "
        f'names ("{SAME_VARIANT_NAMES}", {BLUE_GREEN_URL}), so this update is sent without DeploymentConfig: '
        "SageMaker replaces the fleet at once, without traffic shifting or auto-rollback. To keep the "
        "guardrails, deploy the variant change on its own first, or keep the old names",
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
