"""What each stage of the pipeline runs now, read from the stage's account before the pipeline synthesizes.

``smkit deploy`` reads the deployed endpoint and the recorded releases before its synth
(smkit.release.deploy); the pipeline's synth step does the same for each of its stages with ``smkit synth
--read-stages``: it synthesizes ``-c pipeline=true`` once, finds in each stage's cloud assembly the serving
stack and the endpoint's name, reads them in the stage's account, and synthesizes again with the
``deployed_endpoints`` and ``previous_s3_uris`` context. The stage's plan (smkit.config.day2) then drops
DeploymentConfig for renamed variants, and an instance-type change of an autoscaled variant stops the synth
naming the procedure, before anything is deployed.

The synth step reads each stage account through the CDK bootstrap's lookup role
(``cdk-QUALIFIER-lookup-role-ACCOUNT-REGION``, ReadOnlyAccess, trusted by the pipeline account when the stage
was bootstrapped with ``--trust``), the role the CDK itself assumes for context lookups.
https://docs.aws.amazon.com/cdk/v2/guide/bootstrapping-env.html
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smkit.aws.cdk_bootstrap import DEFAULT_QUALIFIER, lookup_role_arn
from smkit.config.day2 import DeployedEndpoint
from smkit.config.overrides import DEPLOYED_ENDPOINTS_CONTEXT, PREVIOUS_S3_CONTEXT
from smkit.release.history import Release, previous_s3_uris, release_parameter

STAGES = {"Staging": "staging", "Production": "prod"}


@dataclass(frozen=True)
class Stage:
    """One stage of a synthesized pipeline: its environment name, account, region, serving stack and endpoint."""

    environment: str
    account: str
    region: str
    stack: str
    endpoint: str


def stages(assembly: Path) -> list[Stage]:
    """The stages of the pipeline synthesized into ``assembly``: each nested stage assembly's serving stack
    (the one with an ``AWS::SageMaker::Endpoint``) and the endpoint's name as the template spells it."""
    manifest = json.loads((assembly / "manifest.json").read_text(encoding="utf-8"))
    found = []
    for artifact in manifest.get("artifacts", {}).values():
        if artifact.get("type") != "cdk:cloud-assembly":
            continue
        nested = assembly / artifact["properties"]["directoryName"]
        stage_id = str(artifact["properties"].get("displayName", nested.name)).rsplit("/", 1)[-1]
        environment = STAGES.get(stage_id)
        if environment is None:
            continue
        inner = json.loads((nested / "manifest.json").read_text(encoding="utf-8"))
        for stack in inner.get("artifacts", {}).values():
            if stack.get("type") != "aws:cloudformation:stack":
                continue
            template = json.loads((nested / stack["properties"]["templateFile"]).read_text(encoding="utf-8"))
            names = [
                r["Properties"].get("EndpointName")
                for r in template.get("Resources", {}).values()
                if r.get("Type") == "AWS::SageMaker::Endpoint"
            ]
            if len(names) != 1 or not isinstance(names[0], str):
                continue
            account, region = stack["environment"].removeprefix("aws://").split("/")
            found.append(
                Stage(environment, account, region, stack["properties"].get("stackName", ""), names[0])
            )
    return found


def session_for(stage: Stage, *, role_arn: str | None) -> Any:
    """A boto3 session in the stage's account: ``role_arn`` assumed, or the caller's own credentials (None)."""
    import boto3

    if role_arn is None:
        return boto3.session.Session(region_name=stage.region)
    credentials = (
        boto3.session.Session(region_name=stage.region)
        .client("sts")
        .assume_role(RoleArn=role_arn, RoleSessionName="smkit-pipeline-synth")["Credentials"]
    )
    return boto3.session.Session(
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
        region_name=stage.region,
    )


def deployed_endpoint(name: str, sagemaker: Any, autoscaling: Any) -> DeployedEndpoint | None:
    """The endpoint ``name`` as it runs now (None: there is none): its variants, instance types and autoscaled
    variants, what smkit.config.day2.plan_update compares the new config with."""
    from botocore.exceptions import ClientError

    try:
        config_name = sagemaker.describe_endpoint(EndpointName=name)["EndpointConfigName"]
        config = sagemaker.describe_endpoint_config(EndpointConfigName=config_name)
    except ClientError:  # nothing deployed yet
        return None
    variants = [*config["ProductionVariants"], *config.get("ShadowProductionVariants", [])]
    targets = autoscaling.describe_scalable_targets(
        ServiceNamespace="sagemaker",
        ResourceIds=[f"endpoint/{name}/variant/{v['VariantName']}" for v in variants],
    )["ScalableTargets"]
    return DeployedEndpoint(
        name=name,
        production=tuple(v["VariantName"] for v in config["ProductionVariants"]),
        shadow=tuple(v["VariantName"] for v in config.get("ShadowProductionVariants", [])),
        instance_types={v["VariantName"]: v["InstanceType"] for v in variants if v.get("InstanceType")},
        autoscaled=tuple(sorted(str(t["ResourceId"]).rsplit("/", 1)[-1] for t in targets)),
    )


def recorded_s3_uris(session: Any, deployment_name: str, stage: Stage) -> list[str]:
    """S3 data of the releases recorded for the stage (smkit.release.history), but the stage's own bucket."""
    from botocore.exceptions import ClientError

    ssm = session.client("ssm")
    try:
        value = ssm.get_parameter(Name=release_parameter(deployment_name, stage.environment))["Parameter"][
            "Value"
        ]
    except ssm.exceptions.ParameterNotFound:
        return []
    history = [Release.from_json(item) for item in json.loads(value)]
    bucket = None
    try:
        outputs = session.client("cloudformation").describe_stacks(StackName=stage.stack)["Stacks"][0]
        bucket = next(
            (o["OutputValue"] for o in outputs.get("Outputs", []) if o["OutputKey"].endswith("BucketName")),
            None,
        )
    except ClientError:  # the stage's stack does not exist (yet)
        pass
    return previous_s3_uris(history, own_bucket=bucket)


def pipeline_context(
    assembly: Path, deployment_name: str, *, qualifier: str | None = DEFAULT_QUALIFIER
) -> list[str]:
    """``deployed_endpoints=...`` and ``previous_s3_uris=...`` of the pipeline synthesized into ``assembly``,
    read in each stage's account (through its lookup role; ``qualifier`` None: the caller's own credentials),
    as context for the next synth (empty: nothing deployed, nothing recorded)."""
    deployed: dict[str, Any] = {}
    uris: list[str] = []
    for stage in stages(assembly):
        role = (
            None if qualifier is None else lookup_role_arn(stage.account, stage.region, qualifier=qualifier)
        )
        session = session_for(stage, role_arn=role)
        endpoint = deployed_endpoint(
            stage.endpoint, session.client("sagemaker"), session.client("application-autoscaling")
        )
        if endpoint is not None:
            deployed[stage.environment] = json.loads(endpoint.to_json())
        uris += [u for u in recorded_s3_uris(session, deployment_name, stage) if u not in uris]
    context = []
    if deployed:
        context.append(f"{DEPLOYED_ENDPOINTS_CONTEXT}={json.dumps(deployed, separators=(',', ':'))}")
    if uris:
        context.append(f"{PREVIOUS_S3_CONTEXT}={json.dumps(uris, separators=(',', ':'))}")
    return context


def main(argv: list[str] | None = None) -> None:
    """``python -m smkit.release.stage_state CONFIG ASSEMBLY``: the ``-c KEY=VALUE`` arguments (shell-quoted, one
    line; empty when no stage runs anything) of what the stages of the pipeline in ASSEMBLY run, for the
    deployment of CONFIG: for a synth step of its own, ``eval "npx cdk synth ... $STAGES"``."""
    import shlex
    import sys

    from smkit.config import load_deployment

    config, assembly = argv if argv is not None else sys.argv[1:]
    name = load_deployment(Path(config)).name
    print(" ".join(f"-c {shlex.quote(line)}" for line in pipeline_context(Path(assembly), name)))


if __name__ == "__main__":
    main()
