#!/usr/bin/env python3
"""Set calibration values in system presets, editing only the named lines (keeps the rest of
the file, including keys added by others, byte for byte).
usage: set-efficiency.py PRESET[,PRESET...] key=value [key=value ...]"""
import re
import sys

presets = sys.argv[1].split(",")
pairs = [a.split("=", 1) for a in sys.argv[2:]]
for name in presets:
    path = f"presets/systems/{name}.json"
    text = open(path).read()
    start = text.index('"efficiency"')
    end = text.index("}", start)
    block = text[start:end]
    for key, value in pairs:
        pat = re.compile(r'("%s"\s*:\s*)([-+0-9.eE]+)' % re.escape(key))
        if pat.search(block):
            block = pat.sub(lambda m: m.group(1) + value, block)
        else:
            block = block.rstrip() + f',\n    "{key}": {value}\n  '
    text = text[:start] + block + text[end:]
    open(path, "w").write(text)
