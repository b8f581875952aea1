smkit init churn --multi-model tenants                      # model_code/churn/, config/tenants.yaml (the set)
smkit init fraud --framework lightgbm --multi-model tenants  # model_code/fraud/, added to the set's models
smkit train churn
smkit train fraud
smkit package --config config/tenants.yaml   # -> build/tenants/churn.tar.gz, build/tenants/fraud.tar.gz
PORT=${PORT:-8080}
smkit local-endpoint --config config/tenants.yaml --port "$PORT" &
trap 'kill %1; wait' EXIT
until curl -sf "http://127.0.0.1:$PORT/ping" > /dev/null; do sleep 1; done   # up once /ping answers
python - "$PORT" <<'PY'
import sys, boto3
runtime = boto3.client("sagemaker-runtime", endpoint_url=f"http://127.0.0.1:{sys.argv[1]}",
                       region_name="us-east-1", aws_access_key_id="local", aws_secret_access_key="local")
for model in ("churn", "fraud"):   # the first request for a model loads it
    answer = runtime.invoke_endpoint(EndpointName="tenants", TargetModel=f"{model}.tar.gz",
                                     ContentType="text/csv", Accept="application/json",
                                     Body=open(f"model_code/{model}/samples/request.csv", "rb").read())
    print(model, answer["Body"].read().decode())
PY
smkit smoke-test --config config/tenants.yaml --endpoint-url "http://127.0.0.1:$PORT"   # each model's samples
smkit synth --config config/tenants.yaml -o cdk.out   # Mode: MultiModel over the uploaded build/tenants/
