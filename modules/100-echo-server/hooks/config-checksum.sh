#!/bin/sh
# beforeHelm: store a checksum of the config values in
# /echoServer/internal/configChecksum (pods roll when the config changes).
if [ "$1" = "--config" ]; then
  cat <<'YAML'
configVersion: v1
beforeHelm: 10
YAML
  exit 0
fi
sum=$(cksum < "$CONFIG_VALUES_PATH" | cut -d' ' -f1)
echo "config checksum $sum" >&2
printf '[{"op":"add","path":"/echoServer/internal/configChecksum","value":"%s"}]\n' "$sum" \
  > "$VALUES_JSON_PATCH_PATH"
