#!/usr/bin/env python3
"""Writes a large PodList to stdout: N copies of an example's first pod with
unique names and uids, indented as `kubectl get pods -o json` prints them.

    tools/big-pod-list.py 100000 examples/kep-3329-failjob-exit-code-42/pods.json > big.json
"""
import json
import sys


def main():
    count = int(sys.argv[1])
    with open(sys.argv[2]) as f:
        pod = json.load(f)["items"][0]
    out = sys.stdout
    out.write('{"apiVersion": "v1", "items": [')
    for i in range(count):
        pod["metadata"]["name"] = "pod-%d" % i
        pod["metadata"]["uid"] = "uid-%d" % i
        if i:
            out.write(",")
        out.write(json.dumps(pod, indent=4))
    out.write('], "kind": "List", "metadata": {"resourceVersion": ""}}\n')


if __name__ == "__main__":
    main()
