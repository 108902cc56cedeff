#!/usr/bin/env bash
# Runs the ingest function under `cargo lambda watch` (the local Lambda runtime emulator), with
# SQS and DynamoDB in moto_server and Argo CD in the simulator, all on 127.0.0.1; invokes it with
# events/lambda/ingest/webhook-sync-failed.json and checks it answers 202 and the work item is on
# the queue. Then the docs, executed: docs/deploy.md's smoke test block as written (only the stack
# output's value comes from here: ingest's local Function URL with the path template.yaml's
# IngestUrl output gives it) and the URL of argocd-notifications-secret.example.yaml must each get
# 202. Everything it starts is stopped on exit.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/python-env.sh >/dev/null
bash scripts/cargo-lambda-env.sh >/dev/null
export PATH="${root}/.venv-lambda/bin:${PATH}"
work="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
free_port() { .venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 1 300); do (echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.2; done; echo "lambda-smoke: nothing answered on port $1" >&2; return 1; }

moto_port="$(free_port)"
.venv/bin/moto_server -H 127.0.0.1 -p "$moto_port" >"$work/moto.log" 2>&1 & pids+=($!)
wait_port "$moto_port"
export AWS_ENDPOINT_URL="http://127.0.0.1:${moto_port}" AWS_DEFAULT_REGION=us-east-1 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
queue_url="$(.venv/bin/python - <<'PY'
import boto3
sqs = boto3.client("sqs")
print(sqs.create_queue(QueueName="smoke-work")["QueueUrl"])
boto3.client("dynamodb").create_table(TableName="smoke-state", BillingMode="PAY_PER_REQUEST",
    AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "S"}],
    KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}])
PY
)"

cargo build -q -p medic -p ingest
"${CARGO_TARGET_DIR:-target}/debug/medic" sim >"$work/sim.env" 2>"$work/sim.log" & pids+=($!)
for _ in $(seq 1 100); do grep -q ARGOCD_AUTH_TOKEN "$work/sim.env" 2>/dev/null && break; sleep 0.1; done
cat >"$work/lambda.env" <<ENV
MEDIC_INSTANCE_ID=smoke
QUEUE_URL=${queue_url}
TABLE_NAME=smoke-state
MEDIC_WEBHOOK_SECRET=local-test-secret-not-for-production
MEDIC_WORK_ITEM_KEY=local-test-work-item-key-not-for-production
ARGOCD_PLAINTEXT=true
AWS_ENDPOINT_URL=${AWS_ENDPOINT_URL}
AWS_REGION=us-east-1
AWS_ACCESS_KEY_ID=test
AWS_SECRET_ACCESS_KEY=test
$(cat "$work/sim.env")
ENV

lambda_port="$(free_port)"
cargo lambda watch -A 127.0.0.1 -P "$lambda_port" --env-file "$work/lambda.env" --ignore-changes >"$work/watch.log" 2>&1 & pids+=($!)
wait_port "$lambda_port"
# A function that cannot start makes `invoke` wait for ever: bound it.
response="$(timeout 180 cargo lambda invoke ingest --data-file events/lambda/ingest/webhook-sync-failed.json --invoke-address 127.0.0.1 --invoke-port "$lambda_port" --output-format json)"
status="$(echo "$response" | .venv/bin/python -c 'import json,sys; print(json.load(sys.stdin).get("statusCode"))')"
echo "lambda-smoke: ingest answered HTTP ${status}"
[[ "$status" == "202" ]] || { echo "lambda-smoke: expected statusCode 202: ${response}" >&2; tail -20 "$work/watch.log" >&2; exit 1; }
depth="$(.venv/bin/python -c "import boto3; print(boto3.client('sqs').get_queue_attributes(QueueUrl='${queue_url}', AttributeNames=['ApproximateNumberOfMessages'])['Attributes']['ApproximateNumberOfMessages'])")"
[[ "$depth" == "1" ]] || { echo "lambda-smoke: expected 1 message on the queue, found ${depth}" >&2; exit 1; }
echo "lambda-smoke: ok: 202 and one work item on the queue"

# --- the docs, executed ----------------------------------------------------------------------
token=local-test-secret-not-for-production
base="http://127.0.0.1:${lambda_port}/lambda-url/ingest/"
# The path IngestUrl adds to the Function URL (`!Sub "${IngestFunctionUrl.FunctionUrl}v1/events"`).
output_path="$(sed -n '/^  IngestUrl:/,/^  [A-Za-z]*:$/p' template.yaml | grep -o 'FunctionUrl}[^"]*' | head -1 | sed 's/^FunctionUrl}//')"
[[ -n "$output_path" ]] || { echo "lambda-smoke: template.yaml's IngestUrl output has no path after the Function URL" >&2; exit 1; }
# docs/deploy.md's block, as written.
block="$(awk '/<!-- smoke test:/{found=1; next} found && /^```sh/{inside=1; next} inside && /^```/{exit} inside{print}' docs/deploy.md)"
[[ "$block" == *"OutputKey=='IngestUrl'"* && "$block" == *curl* ]] || { echo "lambda-smoke: no smoke test block in docs/deploy.md" >&2; exit 1; }
answer="$(TOKEN="$token" STACK_URL="${base}${output_path}" bash -euo pipefail -c '
  # The stack: describe-stacks answers with the local URL; any other aws call is a mistake here.
  aws() { [[ "$*" == *"describe-stacks"*"IngestUrl"* ]] && { echo "$STACK_URL"; return; }; echo "unexpected: aws $*" >&2; return 1; }
  '"$block")"
echo "lambda-smoke: docs/deploy.md's smoke test printed: ${answer//$'\n'/ }"
[[ "$(echo "$answer" | tail -1)" == "202" ]] || { echo "lambda-smoke: docs/deploy.md's smoke test did not get 202" >&2; tail -20 "$work/watch.log" >&2; exit 1; }
# The example secret's URL: its path, on the local endpoint.
example_path="$(grep -o 'argo-medic-ingest-url: https://[^ ]*' infra/argocd-notifications/argocd-notifications-secret.example.yaml | sed 's|^argo-medic-ingest-url: https://[^/]*/||')"
status="$(curl -sS -o /dev/null -w '%{http_code}' -X POST "${base}${example_path}" -H "Authorization: Bearer ${token}" -H 'Content-Type: application/json' --data @events/webhook/hook-failed.json)"
[[ "$status" == "202" ]] || { echo "lambda-smoke: the example secret's URL (path /${example_path}) got ${status}, not 202" >&2; exit 1; }
echo "lambda-smoke: ok: the docs' smoke test and the example secret's URL get 202"
