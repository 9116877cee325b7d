#!/bin/sh
# onStartup: default the exporter port unless the config values set one.
if [ "$1" = "--config" ]; then
  echo '{"configVersion":"v1","onStartup":1}'
  exit 0
fi
if ! grep -q '"port"' "$CONFIG_VALUES_PATH"; then
  echo '[{"op":"add","path":"/nodeExporter/port","value":9100}]' > "$VALUES_JSON_PATCH_PATH"
fi
