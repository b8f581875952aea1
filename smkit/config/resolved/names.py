"""The names a deployment gets on AWS: its serving stack, its endpoint and its inference components.

The stacks name the endpoint and each component after its construct path (stable across updates, unique
per stack; smkit.cdk.constructs.endpoint and .inference_component), with aws-cdk-lib's
``Names.uniqueResourceName``: the path's ids from the stack down, without characters other than letters and
digits, joined by ``-``, then the first 8 hex digits (upper case) of the MD5 of the path joined by ``/``;
consecutive repeats are dropped from the readable part, ids ``Default`` everywhere and ``Resource`` from
the readable part, and a name longer than its maximum keeps the readable part's two ends
(aws-cdk-lib ``core/lib/private/unique-resource-name.ts``). This module computes the same names without
CDK, so ``smkit synth`` and the local endpoint's banner can say them;
``tests/stacks/test_deployed_names.py`` holds them equal to every synthesized template's.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from smkit.aws.limits import MAX_NAME_LENGTH
from smkit.config.resolved.deployment import ResolvedDeployment

HASH_LENGTH = 8
_HIDDEN = "Default"
_HIDDEN_FROM_HUMANS = "Resource"
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9]")
ENDPOINT_ID = "Endpoint"  # the endpoint's construct id in the serving stack
COMPONENT_PREFIX = "Component"  # a component's construct id: Component<PascalName>


def pascal(text: str) -> str:
    """``tabular-realtime`` -> ``TabularRealtime`` (construct ids are PascalCase): the rule of
    smkit.cdk.constructs.logical_ids.pascal, which the constructs keep (they import nothing from smkit.config);
    tests/stacks/test_deployed_names.py holds the names both give equal."""
    return "".join(part[:1].upper() + part[1:] for part in text.replace("_", "-").split("-") if part)


def serving_stack_id(deployment: ResolvedDeployment) -> str:
    """The serving stack's id (and name, when deployed with ``smkit deploy``): ``<Name><Environment>Serving``."""
    return f"{pascal(deployment.name)}{pascal(deployment.environment)}Serving"


def component_id(component: str) -> str:
    """The construct id of the config's component ``component`` in the serving stack."""
    return f"{COMPONENT_PREFIX}{pascal(component)}"


def unique_resource_name(path: Sequence[str], *, max_length: int, separator: str = "-") -> str:
    """aws-cdk-lib's ``Names.uniqueResourceName`` of a construct whose ids from its stack down are ``path``."""
    parts = [p for p in path if p != _HIDDEN]
    if not parts:
        raise ValueError("a unique resource name needs a construct path")
    if len(parts) == 1 and len(_NOT_ALLOWED.sub("", parts[0])) <= max_length:
        return _NOT_ALLOWED.sub("", parts[0])
    digest = hashlib.md5("/".join(parts).encode(), usedforsecurity=False).hexdigest()
    readable: list[str] = []
    for part in parts:
        if not readable or not readable[-1].endswith(part):
            readable.append(part)
    kept = [_NOT_ALLOWED.sub("", p) for p in readable if p != _HIDDEN_FROM_HUMANS]
    human = separator.join(p for p in kept if p) + separator
    room = max_length - HASH_LENGTH
    if len(human) > room:
        half = room // 2
        human = human[:half] + human[len(human) - half :]
    return human + digest[:HASH_LENGTH].upper()


@dataclass(frozen=True)
class DeployedNames:
    """What a deployment is called on AWS: the serving stack, the endpoint (``EndpointName``) and, on an
    inference-component endpoint, each component's ``InferenceComponentName`` by its name in the config."""

    stack: str
    endpoint: str
    components: Mapping[str, str]

    def lines(self) -> list[str]:
        """``config name -> deployed name`` lines, for the banner and ``smkit synth``."""
        out = [f"endpoint: {self.endpoint} (stack {self.stack})"]
        out += [f"inference component {local}: {name}" for local, name in self.components.items()]
        return out


def deployed_names(deployment: ResolvedDeployment) -> DeployedNames:
    """The names ``deployment``'s serving stack gives its endpoint and components."""
    stack = serving_stack_id(deployment)
    kind = deployment.endpoint_kind
    if kind:
        base = unique_resource_name([stack, ENDPOINT_ID], max_length=MAX_NAME_LENGTH - len(kind) - 1)
        endpoint = f"{base}-{kind}"
    else:
        endpoint = unique_resource_name([stack, ENDPOINT_ID], max_length=MAX_NAME_LENGTH)
    components = {
        c.name: unique_resource_name([stack, component_id(c.name)], max_length=MAX_NAME_LENGTH)
        for c in (deployment.components.components if deployment.components is not None else ())
    }
    return DeployedNames(stack, endpoint, components)
