"""AWS's documented constraints on what the stacks emit, one row each: what, where it applies (resource type and
property path of the synthesized templates), how smkit checks it, AWS's whole sentence and page, and the test
that shows it refusing. A row whose ``model`` names a botocore service-model member quotes that member's
documentation word for word (tests/config/test_rule_quotes.py); the others cite a developer-guide page and are
checked by hand. docs/aws-rules.md is generated from these rows and the templates of every config under
config/ (:mod:`smkit.config.rule_doc`); a test keeps it current.

``check`` names the function that enforces the row (loader rule, construct, emulator repair); ``offline`` is
False for a constraint no offline check can decide (with the reason in ``check``).
"""

from __future__ import annotations

from dataclasses import dataclass

EC = "AWS::SageMaker::EndpointConfig"
EP = "AWS::SageMaker::Endpoint"
IC = "AWS::SageMaker::InferenceComponent"
MODEL = "AWS::SageMaker::Model"
API_MODEL = "Custom::SageMakerModel"  # a model with channels, created through CreateModel (api_model)
ROLE = "AWS::IAM::Role"
POLICY = "AWS::IAM::ManagedPolicy"
LOGS = "AWS::Logs::LogGroup"
TARGET = "AWS::ApplicationAutoScaling::ScalableTarget"
AAS = "https://docs.aws.amazon.com/autoscaling/application/APIReference/"
API = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/"
DG = "https://docs.aws.amazon.com/sagemaker/latest/dg/"


@dataclass(frozen=True)
class Row:
    """One documented constraint."""

    id: str
    what: str
    applies: tuple[tuple[str, str], ...]  # (resource type, property path) it constrains
    check: str
    sentence: str
    url: str
    test: str
    offline: bool = True
    # (service, shape, member) of botocore's service model whose documentation holds ``sentence`` word for
    # word (tests/config/test_rule_quotes.py checks it); None: a developer-guide or other page, checked by hand.
    model: tuple[str, str, str] | None = None


ROWS: tuple[Row, ...] = (
    Row(
        "instance-store-volume",
        "no VolumeSizeInGB on instance types with local NVMe storage (production, shadow, IC pool)",
        ((EC, "ProductionVariants[].VolumeSizeInGB"), (EC, "ShadowProductionVariants[].VolumeSizeInGB")),
        "smkit.config.aws_rules.instance_store_volume; EndpointConfiguration; emulator ebs_only_volumes",
        "Currently only Amazon EBS gp2 storage volumes are supported.",
        API + "API_ProductionVariant.html",
        "tests/config/test_config_invalid.py::test_invalid_config_names_path_value_and_fix[volume-on-instance-storage]",
        model=("sagemaker", "ProductionVariant", "VolumeSizeInGB"),
    ),
    Row(
        "instance-store-kms",
        "no KmsKeyId on an endpoint config with instance-storage instance types",
        ((EC, "KmsKeyId"),),
        "EndpointConfiguration (leaves KmsKeyId out for INSTANCE_STORE types)",
        "If any of the models that you specify in the ProductionVariants parameter use nitro-based instances "
        "with local storage, the KmsKeyId parameter does not encrypt instance local storage.",
        API + "API_CreateEndpointConfig.html",
        "tests/stacks/test_config_rules.py::test_instance_store_endpoint_keeps_kms_for_capture_and_passes_the_gates",
        model=("sagemaker", "CreateEndpointConfigInput", "KmsKeyId"),
    ),
    Row(
        "instance-type",
        "InstanceType is one of the SageMaker API's ProductionVariantInstanceType values",
        ((EC, "ProductionVariants[].InstanceType"), (EC, "ShadowProductionVariants[].InstanceType")),
        "smkit.config.aws_rules.instance_types (botocore's model); emulator current_instance_types",
        "The ML compute instance type.",
        API + "API_ProductionVariant.html",
        "tests/config/test_config_invalid.py::test_invalid_config_names_path_value_and_fix[misspelled-instance-type]",
        model=("sagemaker", "ProductionVariant", "InstanceType"),
    ),
    Row(
        "instance-type-in-region",
        "the instance type is offered in the deployment's region",
        ((EC, "ProductionVariants[].InstanceType"),),
        "not enforceable offline: botocore's enum is one list for every region; CreateEndpointConfig decides",
        "Instance types available by Region differ.",
        "https://aws.amazon.com/sagemaker/pricing/",
        "none (refused by AWS at deploy)",
        offline=False,
    ),
    Row(
        "ic-variant-timeouts",
        "download and start-up timeouts of an inference-component endpoint go on the components",
        ((IC, "Specification.StartupParameters.ModelDataDownloadTimeoutInSeconds"),),
        "smkit.config.aws_rules.component_variant_timeouts",
        "Settings that take effect while the model container starts up.",
        API + "API_InferenceComponentSpecification.html",
        "tests/config/test_config_invalid.py::test_invalid_config_names_path_value_and_fix[component-variant-download-timeout]",
        model=("sagemaker", "InferenceComponentSpecification", "StartupParameters"),
    ),
    Row(
        "timeouts-range",
        "ModelDataDownloadTimeoutInSeconds and ContainerStartupHealthCheckTimeoutInSeconds are 60-3600",
        (
            (EC, "ProductionVariants[].ModelDataDownloadTimeoutInSeconds"),
            (EC, "ProductionVariants[].ContainerStartupHealthCheckTimeoutInSeconds"),
            (IC, "Specification.StartupParameters.ModelDataDownloadTimeoutInSeconds"),
            (IC, "Specification.StartupParameters.ContainerStartupHealthCheckTimeoutInSeconds"),
        ),
        "Field bounds from smkit.aws.limits (STARTUP_HEALTH_CHECK_RANGE_S, MODEL_DOWNLOAD_TIMEOUT_RANGE_S) in smkit.config.endpoint and smkit.config.components",
        "The timeout value, in seconds, to download and extract the model that you want to host from Amazon "
        "S3 to the individual inference instance associated with this production variant.",
        API + "API_ProductionVariant.html",
        "tests/config/test_config_schema.py (the schema's minimum/maximum)",
        model=("sagemaker", "ProductionVariant", "ModelDataDownloadTimeoutInSeconds"),
    ),
    Row(
        "component-log-group",
        "component containers log to /aws/sagemaker/InferenceComponents/<name>; the role may write there",
        ((LOGS, "LogGroupName"), (POLICY, "PolicyDocument.Statement[].Resource")),
        "ServingStack + DeploymentLogs.add_component_group; emulator moto_access.component_problem",
        "SageMaker AI sends container logs to Amazon CloudWatch Logs (log groups per endpoint and component).",
        DG + "logging-cloudwatch.html",
        "tests/deploy/test_moto_fixes_served.py::test_repaired_server_refuses_components_whose_role_cannot_log_or_read",
    ),
    Row(
        "log-retention",
        "RetentionInDays is one of CloudWatch Logs' periods",
        ((LOGS, "RetentionInDays"),),
        "smkit.config.aws_rules.log_retention",
        "Possible values are: 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, "
        "2192, 2557, 2922, 3288, and 3653.",
        "https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_PutRetentionPolicy.html",
        "tests/config/test_config_invalid.py",
        model=("logs", "PutRetentionPolicyRequest", "retentionInDays"),
    ),
    Row(
        "trust-confused-deputy",
        "the execution role's trust policy limits sagemaker.amazonaws.com by aws:SourceAccount and aws:SourceArn",
        ((ROLE, "AssumeRolePolicyDocument.Statement[].Condition.StringEquals.aws:SourceAccount"),),
        "smkit.cdk.constructs.execution_role.confused_deputy_conditions",
        "We recommend using the aws:SourceArn and aws:SourceAccount global condition context keys in resource "
        "policies to limit the permissions that SageMaker AI gives another service to the resource.",
        DG + "security-confused-deputy-prevention.html",
        "tests/stacks/test_aws_template_rules.py::test_trust_policy_limits_sagemaker_to_this_account_and_region",
    ),
    Row(
        "same-variant-names",
        "blue/green and rolling updates keep the old endpoint config's variant names",
        ((EP, "DeploymentConfig.BlueGreenUpdatePolicy.TrafficRoutingConfiguration.Type"),),
        "smkit.config.day2.plan_update (update without DeploymentConfig); emulator endpoint_update_as_sagemaker_does",
        "your new endpoint configuration must have the same variant name as the old endpoint configuration",
        DG + "deployment-guardrails-blue-green.html",
        "tests/stacks/test_day2_pairs.py::test_day2_pair[variant-renamed]",
    ),
    Row(
        "rollback-alarms",
        "AutoRollbackConfiguration takes 1 to 10 alarms",
        ((EP, "DeploymentConfig.AutoRollbackConfiguration.Alarms[].AlarmName"),),
        "smkit.config.aws_rules.rollback_alarms",
        "If any alarms are tripped during a deployment, SageMaker rolls back the deployment.",
        API + "API_AutoRollbackConfig.html",
        "tests/stacks/test_day2.py::test_too_many_rollback_alarms_are_refused",
        model=("sagemaker", "AutoRollbackConfig", "Alarms"),
    ),
    Row(
        "traffic-shift-sizes",
        "a canary is at most 50% and a linear step 10-50% of the new fleet",
        (
            (EP, "DeploymentConfig.BlueGreenUpdatePolicy.TrafficRoutingConfiguration.CanarySize.Value"),
            (EP, "DeploymentConfig.BlueGreenUpdatePolicy.TrafficRoutingConfiguration.LinearStepSize.Value"),
        ),
        "smkit.config.aws_rules.traffic_shift_sizes",
        "Value must be less than or equal to 50% of the variant's total instance count.",
        API + "API_TrafficRoutingConfig.html",
        "tests/stacks/test_day2.py::test_traffic_shift_sizes_outside_the_documented_range",
        model=("sagemaker", "TrafficRoutingConfig", "CanarySize"),
    ),
    Row(
        "execution-timeout",
        "MaximumExecutionTimeoutInSeconds exceeds the waits (600-28800 s, blue/green and rolling)",
        ((EP, "DeploymentConfig.BlueGreenUpdatePolicy.MaximumExecutionTimeoutInSeconds"),),
        "smkit.config.aws_rules.execution_timeout; smkit.config.hosting_rules.rolling_deployment",
        "Note that the timeout value should be larger than the total waiting time specified in "
        "TerminationWaitInSeconds and WaitIntervalInSeconds.",
        API + "API_BlueGreenUpdatePolicy.html",
        "tests/stacks/test_day2.py::test_execution_timeout_shorter_than_the_waits",
        model=("sagemaker", "BlueGreenUpdatePolicy", "MaximumExecutionTimeoutInSeconds"),
    ),
    Row(
        "rolling-batch",
        "a rolling update's MaximumBatchSize is 5-50% of the variant's capacity",
        ((EP, "DeploymentConfig.RollingUpdatePolicy.MaximumBatchSize.Value"),),
        "smkit.config.hosting_rules.rolling_deployment",
        "Value must be between 5% to 50% of the variant's total instance count.",
        API + "API_RollingUpdatePolicy.html",
        "tests/config/test_config_hosting.py",
        model=("sagemaker", "RollingUpdatePolicy", "MaximumBatchSize"),
    ),
    Row(
        "burstable-autoscaling",
        "burstable ml.t* instances cannot be scalable targets",
        ((EC, "ProductionVariants[].InstanceType"),),
        "smkit.config.aws_rules.burstable_autoscaling; EndpointAutoscaling",
        "Burstable instances (ml.t2, ml.t3) are not supported for automatic scaling.",
        DG + "endpoint-auto-scaling-prerequisites.html",
        "tests/stacks/test_config_rules.py::test_rule_is_enforced_by_config_and_constructs[burstable-autoscaling]",
    ),
    Row(
        "serverless-memory",
        "MemorySizeInMB is 1024-6144 in 1 GB steps; provisioned concurrency <= max concurrency",
        (
            (EC, "ProductionVariants[].ServerlessConfig.MemorySizeInMB"),
            (EC, "ProductionVariants[].ServerlessConfig.ProvisionedConcurrency"),
        ),
        "smkit.config.endpoint.ServerlessSpec (memory_size_mb: one of smkit.aws.limits.SERVERLESS_MEMORY_MB); "
        "smkit.config.rules.serverless_limits",
        "Valid values are in 1 GB increments: 1024 MB, 2048 MB, 3072 MB, 4096 MB, 5120 MB, or 6144 MB.",
        API + "API_ProductionVariantServerlessConfig.html",
        "tests/stacks/test_config_rules.py::test_rule_is_enforced_by_config_and_constructs[serverless-provisioned-over-max]",
        model=("sagemaker", "ProductionVariantServerlessConfig", "MemorySizeInMB"),
    ),
    Row(
        "serverless-exclusions",
        "serverless endpoints take no data capture, VPC or network isolation",
        ((EC, "DataCaptureConfig.EnableCapture"),),
        "smkit.config.rules.serverless_limits",
        "Serverless Inference does not support ... data capture, VPC configuration, network isolation.",
        DG + "serverless-endpoints.html",
        "tests/stacks/test_config_rules.py::test_rule_is_enforced_by_config_and_constructs[serverless-no-capture]",
    ),
    Row(
        "environment-size",
        "a container's Environment: at most 100 entries, 1024 bytes per key and value, 32 KB combined per "
        "container and per Model",
        ((MODEL, "PrimaryContainer.Environment"), (MODEL, "Containers[].Environment")),
        "smkit.config.rules.environments",
        "The maximum length of all keys and values in the map, combined, is 32 KB.",
        API + "API_ContainerDefinition.html",
        "tests/config/test_config_invalid.py::test_invalid_config_names_path_value_and_fix[env-over-32-kb]",
        model=("sagemaker", "ContainerDefinition", "Environment"),
    ),
    Row(
        "container-hostname-all",
        "a serial inference pipeline names a hostname on every container or on none",
        ((MODEL, "Containers[].ContainerHostname"),),
        "smkit.config.rules.direct_hostnames; smkit.cdk.constructs.model (Model's validation)",
        "If you specify a value for the ContainerHostName for any ContainerDefinition that is part of an inference "
        "pipeline, you must specify a value for the ContainerHostName parameter of every ContainerDefinition in "
        "that pipeline.",
        API + "API_ContainerDefinition.html",
        "tests/stacks/test_config_rules.py::test_rule_is_enforced_by_config_and_constructs[serial-hostnames-all-or-none]",
        model=("sagemaker", "ContainerDefinition", "ContainerHostname"),
    ),
    Row(
        "channel-name",
        "a channel name is 1-64 characters of [A-Za-z0-9\\.\\-_] (ChannelName's length and pattern)",
        ((API_MODEL, "PrimaryContainer.AdditionalModelDataSources[].ChannelName"),),
        "smkit.config.channel_rules.channels (smkit.aws.patterns.CHANNEL_NAME, limits.CHANNEL_NAME_LENGTH)",
        "A custom name for this AdditionalModelDataSource object.",
        API + "API_AdditionalModelDataSource.html",
        "tests/config/test_config_channels.py::test_invalid_channels_name_the_field_value_and_fix",
        model=("sagemaker", "AdditionalModelDataSource", "ChannelName"),
    ),
    Row(
        "channel-unique",
        "the channels of a container have names of their own (each is its folder <channel>/)",
        ((API_MODEL, "PrimaryContainer.AdditionalModelDataSources[].ChannelName"),),
        "smkit.config.channel_rules.channels",
        "A custom name for this AdditionalModelDataSource object.",
        API + "API_AdditionalModelDataSource.html",
        "tests/config/test_config_channels.py::test_invalid_channels_name_the_field_value_and_fix",
        model=("sagemaker", "AdditionalModelDataSource", "ChannelName"),
    ),
    Row(
        "channel-count",
        "at most 5 additional model data sources per container (the list's max)",
        ((API_MODEL, "PrimaryContainer.AdditionalModelDataSources[].ChannelName"),),
        "smkit.config.channel_rules.channels (smkit.aws.limits.MAX_CHANNELS)",
        "Data sources that are available to your model in addition to the one that you specify for "
        "ModelDataSource when you use the CreateModel action.",
        API + "API_ContainerDefinition.html",
        "tests/config/test_config_channels.py::test_invalid_channels_name_the_field_value_and_fix",
        model=("sagemaker", "ContainerDefinition", "AdditionalModelDataSources"),
    ),
    Row(
        "channel-prefix",
        "a channel's S3Prefix (CompressionType None) ends with /",
        ((API_MODEL, "PrimaryContainer.AdditionalModelDataSources[].S3DataSource.S3Uri"),),
        "smkit.config.channel_rules.channels (source: s3); smkit.cdk.constructs.model_data.as_channel",
        "A valid key name prefix identified by S3Uri always ends with a forward slash (/).",
        API + "API_S3ModelDataSource.html",
        "tests/config/test_config_channels.py::test_invalid_channels_name_the_field_value_and_fix",
        model=("sagemaker", "S3ModelDataSource", "S3DataType"),
    ),
    Row(
        "channel-archive",
        "a channel's archive is one gzip-compressed tar (.tar.gz) with S3Object and Gzip",
        (
            (API_MODEL, "PrimaryContainer.AdditionalModelDataSources[].S3DataSource.CompressionType"),
            (API_MODEL, "PrimaryContainer.AdditionalModelDataSources[].S3DataSource.S3DataType"),
        ),
        "smkit.config.channel_rules.channels (source: s3); smkit.cdk.constructs.model_data.as_channel",
        "If you choose Gzip and choose S3Object as the value of S3DataType, S3Uri identifies an object that "
        "is a gzip-compressed TAR archive.",
        API + "API_S3ModelDataSource.html",
        "tests/config/test_config_channels.py::test_invalid_channels_name_the_field_value_and_fix",
        model=("sagemaker", "S3ModelDataSource", "CompressionType"),
    ),
    Row(
        "image-region",
        "a DLC image is pulled from the endpoint's own region",
        ((MODEL, "PrimaryContainer.Image"), (MODEL, "Containers[].Image")),
        "smkit.config.aws_rules.image_regions",
        "The model artifacts in an Amazon S3 bucket and the Docker image for inference container in Amazon "
        "EC2 Container Registry must be in the same region as the model or endpoint you are creating.",
        API + "API_ContainerDefinition.html",
        "tests/config/test_config_s3_model_data.py",
        model=("sagemaker", "ContainerDefinition", "Image"),
    ),
    Row(
        "image-exists",
        "the image and tag exist and the role may pull them",
        ((MODEL, "PrimaryContainer.Image"),),
        "not enforceable offline: ECR decides at CreateModel (the emulator checks its own repositories only)",
        "The path where inference code is stored.",
        API + "API_ContainerDefinition.html",
        "none (refused by AWS at deploy)",
        offline=False,
        model=("sagemaker", "ContainerDefinition", "Image"),
    ),
    Row(
        "kms-key-arn",
        "a key in IAM and key-policy statements is named by its key ARN, not an alias",
        ((EC, "KmsKeyId"), (EC, "DataCaptureConfig.KmsKeyId")),
        "smkit.config.aws_rules.kms_key",
        "you cannot use an alias name or alias ARN to identify a KMS key in the Resource element of a policy",
        "https://docs.aws.amazon.com/kms/latest/developerguide/cmks-in-iam-policies.html",
        "tests/stacks/test_day2.py::test_kms_alias_arn_is_refused",
    ),
    Row(
        "component-name",
        "InferenceComponentName: letters, digits and hyphens, at most 63 characters",
        ((IC, "InferenceComponentName"),),
        "smkit.aws.patterns.COMPONENT_NAME; InferenceComponent (unique_resource_name, 63)",
        "A unique name to assign to the inference component.",
        API + "API_CreateInferenceComponent.html",
        "tests/config/test_config_components.py",
        model=("sagemaker", "CreateInferenceComponentInput", "InferenceComponentName"),
    ),
    Row(
        "adapter-data",
        "an adapter's ArtifactUrl is in S3 and stays readable by the role across releases",
        ((IC, "Specification.Container.ArtifactUrl"),),
        "smkit.config.hosting_rules.adapters (one .tar.gz object); ServingStack previous_s3_uris; emulator "
        "moto_access",
        "This path must point to a single gzip compressed tar archive (.tar.gz suffix).",
        API + "API_InferenceComponentContainerSpecification.html",
        "tests/config/test_config_hosting.py::test_an_adapters_weights_are_one_tar_gz_archive",
        model=("sagemaker", "InferenceComponentContainerSpecification", "ArtifactUrl"),
    ),
    Row(
        "component-rolling-batch",
        "an inference component's rolling batch, in copies or percent, is 5-50% of the fewest copies it may run "
        "with, and at least one copy",
        ((IC, "DeploymentConfig.RollingUpdatePolicy.MaximumBatchSize.Value"),),
        "smkit.config.hosting_rules.component_rolling_batch",
        "The value must be between 5% to 50% of the copy count of the inference component.",
        API + "API_InferenceComponentRollingUpdatePolicy.html",
        "tests/config/test_config_hosting.py::test_component_rolling_batch_against_the_copy_count",
        model=("sagemaker", "InferenceComponentRollingUpdatePolicy", "MaximumBatchSize"),
    ),
    Row(
        "managed-scaling",
        "ManagedInstanceScaling: MaxInstanceCount >= 1 and >= MinInstanceCount",
        (
            (EC, "ProductionVariants[].ManagedInstanceScaling.MaxInstanceCount"),
            (EC, "ProductionVariants[].ManagedInstanceScaling.MinInstanceCount"),
        ),
        "smkit.config.components.InstanceScaling; EndpointConfiguration (_validate_component_pool)",
        "The maximum number of instances that the endpoint can provision when it scales up to accommodate an "
        "increase in traffic.",
        API + "API_ProductionVariantManagedInstanceScaling.html",
        "tests/config/test_config_components.py",
        model=("sagemaker", "ProductionVariantManagedInstanceScaling", "MaxInstanceCount"),
    ),
    Row(
        "instance-pools",
        "InstancePools replace InstanceType: 1-5 pools, each priority 1-5 once, each type once and a hosting type",
        (
            (EC, "ProductionVariants[].InstancePools[].InstanceType"),
            (EC, "ProductionVariants[].InstancePools[].Priority"),
        ),
        "smkit.config.endpoint.Variant (pools replace instance_type); smkit.config.aws_rules.instance_pools; "
        "EndpointConfiguration (pool_problems); emulator current_instance_types "
        "(variant_pool_problem)",
        "To use instance pools, you replace the InstanceType parameter in your production variant with an "
        "InstancePools list. Each entry specifies an instance type and a priority (1 to 5, where 1 is the highest).",
        DG + "realtime-endpoints-heterogeneous.html",
        "tests/config/test_config_invalid.py::test_invalid_config_names_path_value_and_fix[pool-priority-repeated]",
    ),
    Row(
        "instance-pools-endpoint-types",
        "instance pools on real-time, async and inference-component endpoints only",
        ((EC, "ProductionVariants[].InstancePools[].InstanceType"),),
        "smkit.config.aws_rules.instance_pools",
        "Instance pools support both real-time and asynchronous inference endpoints. You can use them with "
        "single-model endpoints and with inference components.",
        DG + "realtime-endpoints-heterogeneous.html",
        "tests/config/test_config_invalid.py::test_invalid_config_names_path_value_and_fix[pools-on-multi-model]",
    ),
    Row(
        "instance-provision-timeout",
        "VariantInstanceProvisionTimeoutInSeconds is 300-3600, with instance pools",
        ((EC, "ProductionVariants[].VariantInstanceProvisionTimeoutInSeconds"),),
        "smkit.aws.limits.PROVISION_TIMEOUT_RANGE_S on smkit.config.endpoint.Variant; smkit.config.aws_rules.instance_pools; "
        "emulator variant_pool_problem",
        "You can optionally set VariantInstanceProvisionTimeoutInSeconds (300 to 3600 seconds) to control the "
        "total time SageMaker AI spends attempting to provision instances across all pools before the operation "
        "fails.",
        DG + "realtime-endpoints-heterogeneous.html",
        "tests/config/test_config_invalid.py::test_invalid_config_names_path_value_and_fix[provision-timeout-too-short]",
    ),
    Row(
        "scale-in-strategy",
        "ScaleInPolicy.Strategy is IDLE_RELEASE or CONSOLIDATION",
        ((EC, "ProductionVariants[].ManagedInstanceScaling.ScaleInPolicy.Strategy"),),
        "smkit.config.components.InstanceScaling.scale_in (Literal); EndpointConfiguration (_validate_component_pool)",
        "The strategy for scaling in instances.",
        API + "API_ProductionVariantManagedInstanceScalingScaleInPolicy.html",
        "tests/config/test_config_invalid.py::test_invalid_config_names_path_value_and_fix[unknown-scale-in]",
        model=("sagemaker", "ProductionVariantManagedInstanceScalingScaleInPolicy", "Strategy"),
    ),
    Row(
        "az-balance",
        "AvailabilityZoneBalance: MaxImbalance 0-100 and stated with every PlacementStrategy (AWS's default is 0), "
        "EnforcementMode PERMISSIVE",
        (
            (IC, "Specification.SchedulingConfig.AvailabilityZoneBalance.EnforcementMode"),
            (IC, "Specification.SchedulingConfig.AvailabilityZoneBalance.MaxImbalance"),
            (IC, "Specification.SchedulingConfig.PlacementStrategy"),
            (IC, "Specifications[].SchedulingConfig.AvailabilityZoneBalance.EnforcementMode"),
            (IC, "Specifications[].SchedulingConfig.AvailabilityZoneBalance.MaxImbalance"),
            (IC, "Specifications[].SchedulingConfig.PlacementStrategy"),
        ),
        "smkit.config.components.Scheduling (smkit.aws.limits.AZ_IMBALANCE_RANGE); smkit.config.hosting_rules.placement "
        "(required with placement); inference_component.specification (PERMISSIVE, the only mode)",
        "Default value: 0.",
        API + "API_InferenceComponentAvailabilityZoneBalance.html",
        "tests/config/test_config_hosting.py::test_placement_states_the_availability_zone_balance",
        model=("sagemaker", "InferenceComponentAvailabilityZoneBalance", "MaxImbalance"),
    ),
    Row(
        "ic-specifications",
        "Specifications: 2-5 entries, one per instance type of the variant, in place of Specification; no adapters",
        (
            (IC, "Specifications[].InstanceType"),
            (IC, "Specifications[].ComputeResourceRequirements.MinMemoryRequiredInMb"),
        ),
        "smkit.config.component_rules (per_instance_type: pooled variant, pool types once, fit per type); "
        "InferenceComponent (2-5, no adapter)",
        "You can use either this parameter or the singular Specification parameter, but not both.",
        API + "API_CreateInferenceComponent.html",
        "tests/config/test_config_invalid.py::test_invalid_config_names_path_value_and_fix"
        "[per-instance-type-not-a-pool]",
        model=("sagemaker", "CreateInferenceComponentInput", "Specifications"),
    ),
    Row(
        "capacity-pool-update",
        "a changed instance pool replaces the endpoint config and updates the endpoint in place, variant names kept",
        ((EC, "ProductionVariants[].InstancePools[].InstanceType"),),
        "smkit.config.day2.plan_update (same variant names: DeploymentConfig kept); emulator "
        "endpoint_update_as_sagemaker_does",
        "ProductionVariants: Update requires: Replacement (the endpoint is then updated to the new endpoint "
        "configuration)",
        "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/"
        "aws-resource-sagemaker-endpointconfig.html",
        "tests/stacks/test_day2_pairs.py::test_day2_pair[capacity-pool]",
    ),
    Row(
        "metrics-publish-frequency",
        "MetricsConfig.MetricPublishFrequencyInSeconds is one of 10, 30, 60, 120, 180, 240, 300",
        ((EC, "MetricsConfig.MetricPublishFrequencyInSeconds"),),
        "smkit.config.endpoint.EndpointMetrics (publish_frequency_seconds: one of "
        "smkit.aws.limits.METRICS_PUBLISH_FREQUENCIES_S); EndpointConfiguration",
        "The interval, in seconds, at which metrics are published to Amazon CloudWatch. Defaults to 60. Valid "
        "values: 10, 30, 60, 120, 180, 240, 300.",
        API + "API_MetricsConfig.html",
        "tests/stacks/test_observability.py::test_a_bad_metrics_setting_names_its_path",
        model=("sagemaker", "MetricsConfig", "MetricPublishFrequencyInSeconds"),
    ),
    Row(
        "detailed-observability-default",
        "MetricsConfig is written with each value explicit; EnableDetailedObservability defaults to true",
        ((EC, "MetricsConfig.EnableDetailedObservability"), (EC, "MetricsConfig.EnableEnhancedMetrics")),
        "smkit.config.endpoint.EndpointMetrics (defaults: true, false, 60); EndpointConfiguration",
        "The default value for new endpoint configurations is True. For existing endpoint configurations "
        "created before this feature, the value is False unless explicitly set.",
        API + "API_MetricsConfig.html",
        "tests/stacks/test_observability.py::test_every_endpoint_config_has_metrics_config_with_each_value_explicit",
        model=("sagemaker", "MetricsConfig", "EnableDetailedObservability"),
    ),
    Row(
        "metrics-endpoint-path",
        "MetricsEndpointPath starts with / and holds letters, digits, /, _, -, . (at most 256 characters)",
        (
            (IC, "Specification.Container.ContainerMetricsConfig.MetricsEndpoints[].MetricsEndpointPath"),
            (IC, "Specifications[].Container.ContainerMetricsConfig.MetricsEndpoints[].MetricsEndpointPath"),
        ),
        "smkit.config.components.InferenceComponentSpec.metrics_path (pattern, max_length); the runtime's "
        "SMKIT_METRICS_PATH (smkit.hosting.env)",
        "The path must start with / and can contain alphanumeric characters, forward slashes, underscores, "
        "hyphens, and periods. Maximum length is 256 characters.",
        API + "API_MetricsEndpoint.html",
        "tests/stacks/test_observability.py::test_a_bad_metrics_path_names_its_path",
        model=("sagemaker", "MetricsEndpoint", "MetricsEndpointPath"),
    ),
    Row(
        "container-metrics-one-endpoint",
        "ContainerMetricsConfig.MetricsEndpoints holds at most one endpoint",
        (
            (
                IC,
                "Specification.Container.ContainerMetricsConfig.MetricsEndpoints[].MetricPublishFrequencyInSeconds",
            ),
        ),
        "smkit.cdk.constructs.inference_component.MetricsEndpoint (one path per component)",
        "You can specify a maximum of 1 endpoint.",
        API + "API_ContainerMetricsConfig.html",
        "tests/stacks/test_observability.py::test_a_component_with_its_own_metrics_path_gets_container_metrics_config",
        model=("sagemaker", "ContainerMetricsConfig", "MetricsEndpoints"),
    ),
    Row(
        "core-dump-kms",
        "a core dump encrypted with a KMS key needs the execution role's use of that key",
        (
            (EC, "ProductionVariants[].CoreDumpConfig.KmsKeyId"),
            (EC, "ProductionVariants[].CoreDumpConfig.DestinationS3Uri"),
        ),
        "smkit.cdk.mapping.core_dump_uri (the data bucket) and EndpointBucket.grant_write (the role's PutObject; "
        "the key's grant to the role)",
        "If you use a KMS key ID or an alias of your KMS key, the SageMaker execution role must include "
        "permissions to call kms:Encrypt.",
        API + "API_ProductionVariantCoreDumpConfig.html",
        "tests/stacks/test_observability.py::test_core_dumps_go_to_the_data_bucket_with_the_key_and_the_role_may_write_them",
        model=("sagemaker", "ProductionVariantCoreDumpConfig", "KmsKeyId"),
    ),
    Row(
        "scaling-capacity-required",
        "a scalable target states both its minimum and its maximum capacity",
        ((TARGET, "MinCapacity"), (TARGET, "MaxCapacity")),
        "Autoscaling.min_capacity and max_capacity have no default (smkit.config.scaling; components: "
        "instance_scaling and autoscaling)",
        "This property is required when registering a new scalable target.",
        AAS + "API_RegisterScalableTarget.html",
        "tests/config/test_config_invalid.py::test_invalid_config_names_path_value_and_fix[autoscaling-without-max]",
        model=("application-autoscaling", "RegisterScalableTargetRequest", "MaxCapacity"),
    ),
    Row(
        "target-value-range",
        "a target-tracking policy's TargetValue is at most 2^360 (the kit's targets are positive)",
        (
            (
                "AWS::ApplicationAutoScaling::ScalingPolicy",
                "TargetTrackingScalingPolicyConfiguration.TargetValue",
            ),
        ),
        "Autoscaling.target_invocations_per_instance / target_backlog_per_instance, "
        "CopyScaling.target_invocations_per_copy le=MAX_TARGET_VALUE (smkit.aws.limits)",
        "Values must be in the range of -2^360 to 2^360.",
        AAS + "API_TargetTrackingScalingPolicyConfiguration.html",
        "tests/config/test_config_invalid.py::test_invalid_config_names_path_value_and_fix[scaling-target-past-2-to-the-360]",
        model=("application-autoscaling", "TargetTrackingScalingPolicyConfiguration", "TargetValue"),
    ),
    Row(
        "scaling-min-capacity",
        "a SageMaker variant's or inference component's minimum capacity is 0 or more, and at most its maximum",
        ((TARGET, "MinCapacity"),),
        "Autoscaling.min_capacity ge=0 (smkit.config.scaling); smkit.config.rules and component_rules "
        "(max_capacity >= min_capacity; 0 only where the endpoint kind scales to zero)",
        "For the following resources, the minimum value allowed is 0.",
        AAS + "API_RegisterScalableTarget.html",
        "tests/config/test_config_invalid.py::test_invalid_config_names_path_value_and_fix[min-above-max]",
        model=("application-autoscaling", "RegisterScalableTargetRequest", "MinCapacity"),
    ),
    Row(
        "pool-priority",
        "an instance pool's Priority is 1-5",
        ((EC, "ProductionVariants[].InstancePools[].Priority"),),
        "smkit.config.endpoint.InstancePool.priority (POOL_PRIORITY_RANGE, smkit.aws.limits)",
        "Valid values: 1 to 5, where 1 is the highest priority.",
        API + "API_InstancePool.html",
        "tests/config/test_config_invalid.py::test_invalid_config_names_path_value_and_fix[pool-priority-six]",
        model=("sagemaker", "InstancePool", "Priority"),
    ),
    Row(
        "alarm-evaluation-day",
        "an alarm of one-minute periods evaluates at most a day: EvaluationPeriods <= 1440",
        (("AWS::CloudWatch::Alarm", "EvaluationPeriods"), ("AWS::CloudWatch::Alarm", "Period")),
        "Monitoring.evaluation_periods le=MAX_SUB_HOUR_EVALUATION_S // ALARM_PERIOD_S (smkit.aws.limits, "
        "smkit.config.monitoring)",
        "For alarms with a period of less than one hour (3,600 seconds), the total evaluation period can't be "
        "longer than one day (86,400 seconds).",
        "https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricAlarm.html",
        "tests/config/test_config_invalid.py::test_invalid_config_names_path_value_and_fix[alarm-evaluation-over-a-day]",
        model=("cloudwatch", "PutMetricAlarmInput", "Period"),
    ),
    Row(
        "alarm-period",
        "the kit's alarms and the metrics they watch use one-minute periods, a Period CloudWatch takes",
        (("AWS::CloudWatch::Alarm", "Period"), ("AWS::CloudWatch::Alarm", "Metrics[].MetricStat.Period")),
        "smkit.aws.limits.ALARM_PERIOD_S in smkit.cdk.constructs.cloudwatch_metrics.DEFAULT_PERIOD (every alarm's metric "
        "and math expression) and in Monitoring.evaluation_periods' bound (smkit.config.monitoring)",
        "Valid values are 10, 20, 30, and any multiple of 60.",
        "https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricAlarm.html",
        "tests/aws/test_limits.py::test_the_alarm_period_is_one_cloudwatch_takes",
        model=("cloudwatch", "PutMetricAlarmInput", "Period"),
    ),
    Row(
        "alarm-actions",
        "an alarm has at most 5 AlarmActions and 5 OKActions: the alarm topic and at most 4 forwarded sns topics",
        (("AWS::CloudWatch::Alarm", "AlarmActions"), ("AWS::CloudWatch::Alarm", "OKActions")),
        "smkit.config.aws_rules.alarm_actions (MAX_ALARM_ACTIONS, smkit.aws.limits, the API model's maximum); "
        "AlarmTopic (smkit.cdk.constructs.monitoring)",
        "The actions to execute when this alarm transitions to the ALARM state from any other state.",
        "https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricAlarm.html",
        "tests/config/test_config_invalid.py::test_invalid_config_names_path_value_and_fix[alarm-actions-over-five]",
        model=("cloudwatch", "PutMetricAlarmInput", "AlarmActions"),
    ),
    Row(
        "variant-weight",
        "InitialVariantWeight is 0 or more, and not 0 for every production variant",
        ((EC, "ProductionVariants[].InitialVariantWeight"),),
        "smkit.config.endpoint.Variant.initial_weight ge=MIN_VARIANT_WEIGHT (smkit.aws.limits); "
        "smkit.config.aws_rules.variant_weights (sum above 0); EndpointConfiguration",
        "The traffic to a production variant is determined by the ratio of the VariantWeight to the sum of all "
        "VariantWeight values across all ProductionVariants.",
        API + "API_ProductionVariant.html",
        "tests/config/test_config_invalid.py::test_invalid_config_names_path_value_and_fix[weights-all-zero]",
        model=("sagemaker", "ProductionVariant", "InitialVariantWeight"),
    ),
    Row(
        "shadow-one-production",
        "with a shadow variant: exactly one production variant and one shadow variant",
        ((EC, "ShadowProductionVariants[].VariantName"),),
        "smkit.config.component_rules.shadow_variants; EndpointSpec.shadow_variants max_length="
        "MAX_SHADOW_VARIANTS (smkit.aws.limits)",
        "If you use this field, you can only specify one variant for ProductionVariants and one variant for "
        "ShadowProductionVariants.",
        API + "API_CreateEndpointConfig.html",
        "tests/config/test_config_invalid.py::test_invalid_config_names_path_value_and_fix[shadow-beside-two-production-variants]",
        model=("sagemaker", "CreateEndpointConfigInput", "ShadowProductionVariants"),
    ),
    Row(
        "capacity-available",
        "the account's quota and the region's capacity allow the instances",
        ((EC, "ProductionVariants[].InitialInstanceCount"),),
        "not enforceable offline: service quotas and capacity are the account's and the region's",
        "ResourceLimitExceeded / InsufficientCapacity (quotas per account and Region).",
        DG + "regions-quotas.html",
        "none (refused by AWS at deploy)",
        offline=False,
    ),
)
