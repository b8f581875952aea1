cat > app.py <<'PY'
import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms

from smkit.cdk import (FEATURE_FLAGS, AlarmTopic, ContainerSpec, EndpointBucket, EndpointConfiguration,
                       ExecutionRole, InferenceEndpoint, InferenceModel, InstanceType, InstanceVariant,
                       ModelData, ServingImage, add_compliance_checks)

app = cdk.App(context=FEATURE_FLAGS)
stack = cdk.Stack(app, "Churn", env=cdk.Environment(account="111122223333", region="us-east-1"))
# The team's own key, role and (existing) VPC: aws-cdk-lib objects.
key = kms.Key(stack, "Key", enable_key_rotation=True)
own_role = iam.Role(stack, "ServingRole", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"))
vpc = ec2.Vpc.from_vpc_attributes(stack, "Vpc", vpc_id="vpc-0123456789abcdef0",
                                  availability_zones=["us-east-1a", "us-east-1b"],
                                  isolated_subnet_ids=["subnet-0aaaaaaaaaaaaaaaa", "subnet-0bbbbbbbbbbbbbbbb"],
                                  isolated_subnet_route_table_ids=["rtb-0aaaaaaaaaaaaaaaa", "rtb-0bbbbbbbbbbbbbbbb"])
role = ExecutionRole(stack, "ExecutionRole", role=own_role)  # grants land in its managed policies
key.grant(role, "kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:DescribeKey")
storage = EndpointBucket(stack, "Storage", encryption_key=key)
image = ServingImage.from_dlc(
    "683313688378.dkr.ecr.us-east-1.amazonaws.com/sagemaker-scikit-learn:1.2-1-cpu-py3"
).bind(stack, "Image", grantee=role)
data = ModelData.from_s3("s3://my-models/churn/model.tar.gz", kind="archive").bind(
    stack, "ModelData", grantee=role, bucket=storage.bucket)
model = InferenceModel(stack, "Model", role=own_role, containers=[ContainerSpec(image, data)], vpc=vpc)
role.grant_vpc_access(model)  # SageMaker creates the model's network interfaces with the role
config = EndpointConfiguration(stack, "Config", model=model, key=key, variants=[
    InstanceVariant("blue", InstanceType.of("ml.m5.large"), initial_weight=0.9),
    InstanceVariant("green", InstanceType.of("ml.c5.large"), initial_weight=0.1)])
endpoint = InferenceEndpoint(stack, "Endpoint", endpoint_config=config)
endpoint.variant("blue").auto_scale_instance_count(max_capacity=4, target_invocations_per_instance=200)
alarms = AlarmTopic(stack, "Alarms", encryption_key=key)  # KMS-encrypted SNS topic
cloudwatch.Alarm(stack, "GreenLatency", metric=endpoint.variant("green").metric_model_latency(),
                 threshold=500_000, evaluation_periods=3).add_alarm_action(*alarms.actions)
# An endpoint config deployed before, run by a second endpoint.
existing = EndpointConfiguration.from_endpoint_config_name(stack, "Existing", "churn-config-v7",
                                                          variant_names=["AllTraffic"])
InferenceEndpoint(stack, "Replay", endpoint_config=existing)
add_compliance_checks(app)  # AwsSolutions, HIPAA Security, NIST 800-53 R5: a finding fails the synth
app.synth()
PY
npx --yes aws-cdk@2.1148.1 synth --app "python app.py" --no-notices --quiet   # the pinned CDK CLI
grep -c '"Type": "AWS::SageMaker::Endpoint"' cdk.out/Churn.template.json      # 2: the new one and the replay
