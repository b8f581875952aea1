smkit init chat --framework vllm          # config/chat.yaml: a base and a LoRA adapter component, cdk.json
python -m smkit.llm.tiny model_code/chat  # model_code/chat/model and .../adapter: random weights, no download
smkit package --config config/chat.yaml   # -> build/chat/adapters/chat-adapter.tar.gz (what deploy uploads)
PORT=${PORT:-8080}
smkit local-endpoint --config config/chat.yaml --port "$PORT" &   # vLLM's CPU build; the adapter from its folder
trap 'kill %1; wait' EXIT
until curl -sf "http://127.0.0.1:$PORT/ping" > /dev/null; do sleep 2; done   # up once /ping answers
python - "$PORT" <<'PY'
import json, subprocess, sys, boto3
from openai import OpenAI
url = f"http://127.0.0.1:{sys.argv[1]}"
runtime = boto3.client("sagemaker-runtime", endpoint_url=url, region_name="us-east-1",
                       aws_access_key_id="local", aws_secret_access_key="local")
def invoke(component, body, **extra):
    return runtime.invoke_endpoint(EndpointName="chat", InferenceComponentName=component,
                                   ContentType="application/json", Body=json.dumps(body), **extra)
chat = {"messages": [{"role": "user", "content": "What is deep learning?"}], "max_tokens": 16}
for component in ("chat", "chat-adapter"):   # the base model, then with the LoRA adapter applied
    answer = json.loads(invoke(component, chat)["Body"].read())
    print(component, answer["model"], answer["choices"][0]["message"]["content"])
stream = runtime.invoke_endpoint_with_response_stream(
    EndpointName="chat", InferenceComponentName="chat", ContentType="application/json",
    Body=json.dumps({"prompt": "Hello", "max_tokens": 16, "stream": True}))
for event in stream["Body"]:
    print(event["PayloadPart"]["Bytes"].decode(), end="")   # the engine's "data: {...}" events
token = subprocess.run(["smkit", "token", "--local", "--region", "us-east-1"],
                       capture_output=True, text=True, check=True).stdout.strip()
client = OpenAI(base_url=f"{url}/endpoints/chat/inference-components/chat-adapter/openai/v1", api_key=token)
answer = client.chat.completions.create(model="", messages=chat["messages"], max_tokens=16)
print("openai", answer.model, answer.choices[0].message.content)
created = invoke("chat", {"requestType": "NEW_SESSION"}, SessionId="NEW_SESSION")   # a sticky session
session = created["NewSessionId"].split("; Expires=")[0]
in_session = invoke("chat", {"prompt": "Hello", "max_tokens": 8}, SessionId=session)
print("session", session, json.loads(in_session["Body"].read())["choices"][0]["text"])
invoke("chat", {"requestType": "CLOSE"}, SessionId=session)
PY
smkit synth --config config/chat.yaml -o cdk.out   # offline: the names it deploys under, cdk-nag, cfn rules
