smkit init churn --framework sklearn   # config/churn.yaml, model_code/churn/, cdk.json, .gitignore
smkit train churn                      # model_code/churn/train.py in the model's own environment
smkit package --config config/churn.yaml          # -> build/churn/model.tar.gz
PORT=${PORT:-8080}
smkit local-endpoint --config config/churn.yaml --port "$PORT" &   # behind the boto3 API
trap 'kill %1; wait' EXIT
until curl -sf "http://127.0.0.1:$PORT/ping" > /dev/null; do sleep 1; done   # up once /ping answers
python - "$PORT" <<'PY'
import sys, boto3
runtime = boto3.client("sagemaker-runtime", endpoint_url=f"http://127.0.0.1:{sys.argv[1]}",
                       region_name="us-east-1", aws_access_key_id="local", aws_secret_access_key="local")
answer = runtime.invoke_endpoint(EndpointName="churn", ContentType="text/csv", Accept="application/json",
                                 Body=open("model_code/churn/samples/request.csv", "rb").read())
print(answer["Body"].read().decode())
PY
smkit smoke-test --config config/churn.yaml --endpoint-url "http://127.0.0.1:$PORT"
smkit synth --config config/churn.yaml -o cdk.out   # offline: templates, cdk-nag and cfn rules, no AWS account
