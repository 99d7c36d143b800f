#!/usr/bin/env python3
"""Python side of scripts/bench.sh.

    python3 scripts/bench-python.py FILE

Reads FILE as a Python SDK reads an agent's stdout: line by line, json.loads
on each line. It does nothing with the objects, so it is a lower bound on
what such an SDK costs. Prints the number of events on stderr.
"""
import json
import sys


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: bench-python.py FILE", file=sys.stderr)
        return 2
    events = 0
    with open(sys.argv[1], "rb") as f:
        for line in f:
            if not line.strip():
                continue
            ev = json.loads(line)
            if isinstance(ev, dict) and "type" in ev:
                events += 1
    print(f"{events} events", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
