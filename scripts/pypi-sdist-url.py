#!/usr/bin/env python3
"""Prints the URL of a PyPI project's source distribution for one version (nothing if none).

Usage: scripts/pypi-sdist-url.py PROJECT VERSION
The JSON API names the sdist's URL (relative on mirrors); `pip download --no-binary :all:` would
first build the package's metadata, which needs its whole Python build toolchain.
"""
import json
import sys
import urllib.parse
import urllib.request

project, version = sys.argv[1], sys.argv[2]
api = f"https://pypi.org/pypi/{project}/json"
with urllib.request.urlopen(api, timeout=60) as r:
    meta = json.load(r)
for f in meta["releases"].get(version, []):
    if f["packagetype"] == "sdist":
        print(urllib.parse.urljoin(api, f["url"]))
        break
