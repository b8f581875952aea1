smkit init scores                      # config/scores.yaml, model_code/scores/ (scikit-learn)
smkit train scores
cat >> model_code/scores/code/inference.py <<'PY'


def output_fn(prediction, accept):
    """Streamed: one JSON line per row, each sent as soon as it is ready (replaces the output_fn above)."""
    return ({"score": row} for row in prediction.tolist()), "application/jsonlines"
PY
smkit package --config config/scores.yaml          # checks the handler, -> build/scores/model.tar.gz
PORT=${PORT:-8080}
smkit local-endpoint --config config/scores.yaml --port "$PORT" &
trap 'kill %1; wait' EXIT
until curl -sf "http://127.0.0.1:$PORT/ping" > /dev/null; do sleep 1; done   # up once /ping answers
python - "$PORT" <<'PY'
import sys, boto3
runtime = boto3.client("sagemaker-runtime", endpoint_url=f"http://127.0.0.1:{sys.argv[1]}",
                       region_name="us-east-1", aws_access_key_id="local", aws_secret_access_key="local")
response = runtime.invoke_endpoint_with_response_stream(
    EndpointName="scores", ContentType="text/csv",
    Body=open("model_code/scores/samples/request.csv", "rb").read())
for event in response["Body"]:   # each PayloadPart as soon as the container wrote it
    print(event["PayloadPart"]["Bytes"].decode(), end="", flush=True)
PY
smkit invoke --stream --endpoint-url "http://127.0.0.1:$PORT" --endpoint scores \
    --content-type text/csv --data "$(head -1 model_code/scores/samples/request.csv)"
smkit synth --config config/scores.yaml -o cdk.out
