#!/usr/bin/env bash
# `make run`: the service with its shipped defaults, plus what those defaults point at on this box:
# the built-in echo voice server on 127.0.0.1:5050 and, when nothing listens on 1883 yet, a local
# mosquitto broker. Both stop with the service.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT="${PORT:-5000}"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
trap 'exit 0' INT TERM

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

if port_open 5050; then
  echo "run: something already listens on 127.0.0.1:5050; using it as the upstream voice server"
else
  node dist/voice-hub.cjs echo-server --port 5050 & pids+=($!)
fi
if port_open 1883; then
  echo "run: an MQTT broker already listens on 127.0.0.1:1883"
elif command -v mosquitto >/dev/null || [ -x /usr/sbin/mosquitto ]; then
  PATH="$PATH:/usr/sbin" mosquitto -p 1883 & pids+=($!)
else
  echo "run: no MQTT broker on 1883 and mosquitto is not installed: /health will say mqtt Degraded"
fi
# Node's options for the service (src/runtime/node-options.mjs), as the unit and the executables have them.
node_flags=$(node --input-type=module -e "import { NODE_OPTIONS_TEXT } from './src/runtime/node-options.mjs'; process.stdout.write(NODE_OPTIONS_TEXT)")
# shellcheck disable=SC2086 # the flags are words
node $node_flags dist/voice-hub.cjs --port "$PORT" --data-dir ./data & pids+=($!)
wait "${pids[-1]}"
