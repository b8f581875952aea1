"""What distinguishes each endpoint variant in its synthesized template."""

from __future__ import annotations

import json

import pytest
from aws_cdk.assertions import Match
from stack_support import DLC_URI, SUPPLIED_KEY, SynthesizedApp

MODEL = "AWS::SageMaker::Model"
ENDPOINT_CONFIG = "AWS::SageMaker::EndpointConfig"
ENDPOINT = "AWS::SageMaker::Endpoint"
TARGET = "AWS::ApplicationAutoScaling::ScalableTarget"
POLICY = "AWS::ApplicationAutoScaling::ScalingPolicy"
ALARM = "AWS::CloudWatch::Alarm"


def test_realtime_weighted_variants_capture_canary_and_scaling(synthesized: SynthesizedApp) -> None:
    t = synthesized.template("realtime")
    t.has_resource_properties(
        MODEL,
        {
            "EnableNetworkIsolation": True,
            "PrimaryContainer": Match.object_like(
                {
                    "Mode": "SingleModel",
                    "ModelDataUrl": Match.any_value(),
                    "Environment": {
                        "SAGEMAKER_PROGRAM": "inference.py",
                        "SAGEMAKER_CONTAINER_LOG_LEVEL": "20",
                    },
                }
            ),
        },
    )
    t.has_resource_properties(
        ENDPOINT_CONFIG,
        {
            "KmsKeyId": Match.any_value(),
            "ProductionVariants": [
                Match.object_like(
                    {
                        "VariantName": "general-purpose",
                        "InstanceType": "ml.m5.large",
                        "InitialInstanceCount": 2,
                        "InitialVariantWeight": 0.9,
                        "RoutingConfig": {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"},
                    }
                ),
                Match.object_like(
                    {
                        "VariantName": "compute-optimized",
                        "InstanceType": "ml.c5.large",
                        "InitialInstanceCount": 1,
                        "InitialVariantWeight": 0.1,
                    }
                ),
            ],
            "DataCaptureConfig": Match.object_like(
                {
                    "EnableCapture": True,
                    "InitialSamplingPercentage": 20,
                    "CaptureOptions": [{"CaptureMode": "Input"}, {"CaptureMode": "Output"}],
                    "KmsKeyId": Match.any_value(),
                }
            ),
        },
    )
    t.has_resource_properties(
        ENDPOINT,
        {
            "RetainAllVariantProperties": True,
            "ExcludeRetainedVariantProperties": [
                {"VariantPropertyType": "DesiredWeight"},
                {"VariantPropertyType": "DataCaptureConfig"},
            ],
            "DeploymentConfig": {
                "BlueGreenUpdatePolicy": {
                    "TrafficRoutingConfiguration": {
                        "Type": "CANARY",
                        "CanarySize": {"Type": "CAPACITY_PERCENT", "Value": 10},
                        "WaitIntervalInSeconds": 300,
                    },
                    "TerminationWaitInSeconds": 120,
                    "MaximumExecutionTimeoutInSeconds": 3600,
                },
                "AutoRollbackConfiguration": {"Alarms": Match.any_value()},
            },
        },
    )
    t.resource_count_is(TARGET, 2)  # both variants autoscale
    t.has_resource_properties(
        TARGET,
        {
            "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
            "MinCapacity": 2,
            "MaxCapacity": 6,
            "ResourceId": {"Fn::Join": ["", ["endpoint/", Match.any_value(), "/variant/general-purpose"]]},
        },
    )
    t.has_resource_properties(
        POLICY,
        {
            "TargetTrackingScalingPolicyConfiguration": Match.object_like(
                {
                    "PredefinedMetricSpecification": {
                        "PredefinedMetricType": "SageMakerVariantInvocationsPerInstance"
                    },
                    "TargetValue": 300,
                }
            )
        },
    )
    rollback = synthesized.template_json("realtime")["Resources"]
    endpoint = next(r for r in rollback.values() if r["Type"] == ENDPOINT)
    # Two per variant: new-fleet 5XX rate and p99 latency.
    assert len(endpoint["Properties"]["DeploymentConfig"]["AutoRollbackConfiguration"]["Alarms"]) == 4


def test_serverless_config_and_provisioned_concurrency_scaling(synthesized: SynthesizedApp) -> None:
    t = synthesized.template("serverless")
    t.has_resource_properties(MODEL, {"EnableNetworkIsolation": False})
    t.has_resource_properties(
        ENDPOINT_CONFIG,
        {
            "KmsKeyId": Match.any_value(),
            "ProductionVariants": [
                {
                    "VariantName": "main",
                    "ModelName": Match.any_value(),
                    "ServerlessConfig": {
                        "MemorySizeInMB": 2048,
                        "MaxConcurrency": 20,
                        "ProvisionedConcurrency": 2,
                    },
                }
            ],
            "DataCaptureConfig": Match.absent(),
        },
    )
    t.has_resource_properties(
        TARGET,
        {
            "ScalableDimension": "sagemaker:variant:DesiredProvisionedConcurrency",
            "MinCapacity": 1,
            "MaxCapacity": 10,
        },
    )
    t.has_resource_properties(
        POLICY,
        {
            "TargetTrackingScalingPolicyConfiguration": Match.object_like(
                {
                    "PredefinedMetricSpecification": {
                        "PredefinedMetricType": "SageMakerVariantProvisionedConcurrencyUtilization"
                    },
                    "TargetValue": 0.7,
                }
            )
        },
    )


def test_multi_model_prefix_mode_and_linear_deployment(synthesized: SynthesizedApp) -> None:
    t = synthesized.template("multi-model")
    t.has_resource_properties(
        MODEL,
        {
            "PrimaryContainer": Match.object_like(
                {
                    "Mode": "MultiModel",
                    "MultiModelConfig": {"ModelCacheSetting": "Enabled"},
                    "ModelDataUrl": {
                        "Fn::Join": [
                            "",
                            ["s3://", Match.any_value(), Match.string_like_regexp(r"^/models/.+/$")],
                        ]
                    },
                }
            )
        },
    )
    t.resource_count_is("Custom::CDKBucketDeployment", 1)  # the folder is uploaded as one set
    t.has_resource_properties(
        ENDPOINT,
        {
            "DeploymentConfig": Match.object_like(
                {
                    "BlueGreenUpdatePolicy": Match.object_like(
                        {
                            "TrafficRoutingConfiguration": {
                                "Type": "LINEAR",
                                "LinearStepSize": {"Type": "CAPACITY_PERCENT", "Value": 50},
                                "WaitIntervalInSeconds": 120,
                            }
                        }
                    )
                }
            )
        },
    )


def test_serial_pipeline_containers_in_order(synthesized: SynthesizedApp) -> None:
    t = synthesized.template("multi-container")
    t.has_resource_properties(
        MODEL,
        {
            "InferenceExecutionConfig": {"Mode": "Serial"},
            "PrimaryContainer": Match.absent(),
            "Containers": [
                Match.object_like({"Environment": {"SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT": "text/csv"}}),
                Match.object_like(
                    {"Environment": {"SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT": "application/json"}}
                ),
            ],
        },
    )


def test_direct_multi_container_hostnames(synthesized: SynthesizedApp) -> None:
    t = synthesized.template("multi-container-direct")
    t.has_resource_properties(
        MODEL,
        {
            "InferenceExecutionConfig": {"Mode": "Direct"},
            "Containers": [
                Match.object_like({"ContainerHostname": "tabular"}),
                Match.object_like({"ContainerHostname": "iris"}),
            ],
        },
    )


def test_async_output_topics_scale_to_zero_and_backlog_alarm(synthesized: SynthesizedApp) -> None:
    t = synthesized.template("async")
    t.has_resource_properties(
        ENDPOINT_CONFIG,
        {
            "AsyncInferenceConfig": {
                "OutputConfig": {
                    "S3OutputPath": {"Fn::Join": ["", ["s3://", Match.any_value(), "/async/output"]]},
                    "S3FailurePath": {"Fn::Join": ["", ["s3://", Match.any_value(), "/async/failure"]]},
                    "KmsKeyId": Match.any_value(),
                    "NotificationConfig": {
                        "SuccessTopic": {"Ref": Match.string_like_regexp("^AsyncSuccess")},
                        "ErrorTopic": {"Ref": Match.string_like_regexp("^AsyncError")},
                        "IncludeInferenceResponseIn": Match.absent(),
                    },
                },
                "ClientConfig": {"MaxConcurrentInvocationsPerInstance": 4},
            }
        },
    )
    t.has_resource_properties(
        TARGET,
        {"ScalableDimension": "sagemaker:variant:DesiredInstanceCount", "MinCapacity": 0, "MaxCapacity": 4},
    )
    t.has_resource_properties(
        POLICY,
        {
            "TargetTrackingScalingPolicyConfiguration": Match.object_like(
                {
                    "CustomizedMetricSpecification": Match.object_like(
                        {"MetricName": "ApproximateBacklogSizePerInstance", "Namespace": "AWS/SageMaker"}
                    ),
                    "TargetValue": 5,
                }
            )
        },
    )
    t.has_resource_properties(POLICY, {"PolicyType": "StepScaling"})
    t.has_resource_properties(ALARM, {"MetricName": "HasBacklogWithoutCapacity"})
    t.has_resource_properties(
        ALARM, {"MetricName": "ApproximateAgeOfOldestRequest", "Threshold": 900, "Statistic": "Maximum"}
    )


def test_alarms_per_variant(synthesized: SynthesizedApp) -> None:
    t = synthesized.template("realtime")
    for metric in ("Invocation5XXErrors", "Invocation4XXErrors"):
        t.has_resource_properties(
            ALARM,
            {
                "Metrics": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "MetricStat": Match.object_like(
                                    {
                                        "Metric": Match.object_like(
                                            {
                                                "MetricName": metric,
                                                "Dimensions": Match.array_with(
                                                    [{"Name": "VariantName", "Value": "compute-optimized"}]
                                                ),
                                            }
                                        )
                                    }
                                )
                            }
                        )
                    ]
                )
            },
        )
    t.has_resource_properties(
        ALARM, {"MetricName": "ModelLatency", "ExtendedStatistic": "p99", "Threshold": 500_000}
    )
    t.resource_count_is("AWS::CloudWatch::Dashboard", 1)


def test_supplied_key_vpc_and_ecr_image(synthesized: SynthesizedApp) -> None:
    t = synthesized.template("realtime-byo")
    t.resource_count_is("AWS::KMS::Key", 0)
    t.has_resource_properties(ENDPOINT_CONFIG, {"KmsKeyId": SUPPLIED_KEY})
    t.has_resource_properties(
        MODEL,
        {
            "VpcConfig": {
                "Subnets": ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"],
                "SecurityGroupIds": ["sg-0123456789abcdef0"],
            },
            "PrimaryContainer": Match.object_like(
                {"Image": {"Fn::Join": ["", Match.array_with([Match.string_like_regexp(":v1.2.3$")])]}}
            ),
        },
    )


def test_dlc_image_and_uncompressed_prefix(synthesized: SynthesizedApp) -> None:
    t = synthesized.template("async-prefix")
    t.has_resource_properties(
        MODEL,
        {
            "PrimaryContainer": Match.object_like(
                {
                    "Image": DLC_URI,
                    "ModelDataUrl": Match.absent(),
                    "ModelDataSource": {
                        "S3DataSource": {
                            "S3Uri": Match.any_value(),
                            "S3DataType": "S3Prefix",
                            "CompressionType": "None",
                        }
                    },
                }
            )
        },
    )


def test_build_image_context_holds_only_what_the_dockerfile_needs(synthesized: SynthesizedApp) -> None:
    manifest = json.loads((synthesized.outdir / "TabularRealtimeDevServing.assets.json").read_text())
    images = list(manifest["dockerImages"].values())
    assert len(images) == 1
    source = images[0]["source"]
    assert source["dockerFile"] == "container/Dockerfile"
    staged = synthesized.outdir / source["directory"]
    files = {p.relative_to(staged).as_posix() for p in staged.rglob("*") if p.is_file()}
    assert {"container/Dockerfile", "container/requirements.txt", "smkit/serving/entrypoint.py"} <= files
    assert not any(f.startswith((".venv/", "node_modules/", "build/", "tests/", "stacks/")) for f in files)


def test_scalable_targets_use_the_service_linked_role(synthesized: SynthesizedApp) -> None:
    for case in ("realtime", "serverless", "async", "multi-model"):
        resources = synthesized.template_json(case)["Resources"].values()
        targets = [r for r in resources if r["Type"] == TARGET]
        assert targets, case
        for target in targets:
            assert "AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint" in json.dumps(
                target["Properties"]["RoleARN"]
            )
        roles = [r for r in resources if r["Type"] == "AWS::IAM::Role"]
        principals = {json.dumps(r["Properties"]["AssumeRolePolicyDocument"]) for r in roles}
        assert not any("application-autoscaling" in p for p in principals), case


def test_the_endpoint_of_realtime_yaml_reports_its_two_variants(synthesized: SynthesizedApp) -> None:
    endpoint = synthesized.stacks["realtime"].serving.endpoint
    assert endpoint.variant_names == ("general-purpose", "compute-optimized")
    latency = endpoint.variant("compute-optimized").metric_model_latency()
    assert (latency.metric_name, latency.statistic, latency.dimensions) == (
        "ModelLatency",
        "Average",
        {"EndpointName": endpoint.endpoint_name, "VariantName": "compute-optimized"},
    )
    with pytest.raises(
        ValueError, match=r"its variants are \['general-purpose', 'compute-optimized'\]; name the variant"
    ):
        endpoint.metric_model_latency()
