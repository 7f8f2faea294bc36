#!/usr/bin/env python3
"""CPU seconds (user + system) used so far by each node of a local Citus cluster
(local-cluster.sh's DIR/node*): its postmaster and every process it started, living or
recently ended (a backend's time is added to the postmaster's when it exits). `just
bench-citus` prints the difference around each run, so a cluster's CPU per event can be split
into the coordinator's and the workers'.

Usage: cpu-by-node.py DIR  ->  one line per node: `node0 12.34`
"""
import os
import sys

TICKS = os.sysconf("SC_CLK_TCK")


def stat(pid):
    with open(f"/proc/{pid}/stat") as f:
        text = f.read()
    fields = text[text.rindex(")") + 2 :].split()
    # ppid is field 4; utime, stime, cutime, cstime are fields 14-17 (1-based, from pid).
    return int(fields[1]), sum(int(x) for x in fields[11:15]), sum(int(x) for x in fields[11:13])


def main(directory):
    by_parent = {}
    own = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            ppid, with_children, alone = stat(pid)
        except (OSError, ValueError):
            continue
        by_parent.setdefault(ppid, []).append(alone)
        own[int(pid)] = with_children
    for node in sorted(n for n in os.listdir(directory) if n.startswith("node")):
        try:
            with open(os.path.join(directory, node, "postmaster.pid")) as f:
                postmaster = int(f.readline())
        except OSError:
            continue
        ticks = own.get(postmaster, 0) + sum(by_parent.get(postmaster, []))
        print(f"{node} {ticks / TICKS:.2f}")


if __name__ == "__main__":
    main(sys.argv[1])
