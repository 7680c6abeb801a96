#!/usr/bin/env bash
# docs/PRESET_SCHEMA.md's generated table (the system.efficiency fields) from the binary's field
# table: `preset_schema.sh BIN` rewrites it in place; `preset_schema.sh BIN --check` exits 1 when
# the committed copy differs (a CTest test).
set -euo pipefail
bin=$1
doc="$(cd "$(dirname "$0")/.." && pwd)/docs/PRESET_SCHEMA.md"
begin='<!-- generated: scalemodel presets --schema -->'
end='<!-- end generated -->'
table=$("$bin" presets --schema)
fresh=$(awk -v b="$begin" -v e="$end" -v t="$table" '
    $0 == b { print; print t; skip = 1; next }
    $0 == e { skip = 0 }
    !skip { print }' "$doc")
if [[ ${2:-} == --check ]]; then
    if [[ "$fresh" != "$(cat "$doc")" ]]; then
        echo "docs/PRESET_SCHEMA.md is stale: run make docs (or bash scripts/preset_schema.sh build/scalemodel)"
        exit 1
    fi
    exit 0
fi
printf '%s\n' "$fresh" >"$doc"
