#!/usr/bin/env bash
# Regenerates the plot gallery (docs/img/*.png) shown in the README, each image by the command
# beside it there (a test checks the two lists agree). Usage: scripts/gallery.sh BUILD_DIR/scalemodel
set -euo pipefail
scalemodel() { "$BIN" "$@" >/dev/null; }
BIN=${1:?usage: gallery.sh SCALEMODEL}
mkdir -p docs/img
# gallery: begin
scalemodel plot breakdown examples/gpt3-175b-64xa100.json --systems dgx-a100-80gb,dgx-h100,dgx-b200,gb200-nvl72 -o docs/img/breakdown.png
scalemodel plot memory examples/search-gpt3-175b.json --gpus 1024 --top 5 -o docs/img/memory.png
scalemodel plot roofline examples/infer-llama2-70b-h100.json --systems dgx-a100-80gb,dgx-h100,gb200-nvl72 -o docs/img/roofline.png
scalemodel plot scaling examples/search-gpt3-175b.json --gpus 256:8192:x2 --tokens 300e9 -o docs/img/scaling.png
scalemodel plot sweep examples/search-gpt3-175b.json --mode search --gpus 1024 --vary system.scale_out.bw_bytes_per_s=12.5e9:200e9:x2 --vary system.preset=dgx-a100-80gb,dgx-h100,dgx-b200 -o docs/img/sweep.png
scalemodel plot waterfall examples/studies/gpt3-175b-a100-bf16.json --to examples/studies/gpt3-175b-gb200-fp8.json --mode search --gpus 4096 -o docs/img/waterfall.png
scalemodel plot pareto examples/infer-llama2-70b-h100.json --gpus 8 -o docs/img/pareto.png
# gallery: end
# The explorer's screenshots (desktop and phone width), taken by its browser test where Chromium and Selenium are installed.
if [[ -x /usr/bin/chromium && -x /usr/bin/chromedriver ]] && /usr/bin/python3 -c "import selenium" 2>/dev/null; then
    /usr/bin/python3 tests/browser/explorer_test.py "$BIN" docs/img/explorer-desktop.png >/dev/null &&
        mv docs/img/explorer-desktop-narrow.png docs/img/explorer-phone.png
fi
