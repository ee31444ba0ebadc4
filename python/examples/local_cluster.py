#!/usr/bin/env python
"""Runs a command against a local Ray cluster of two nodes, then takes the cluster down.

    python python/examples/local_cluster.py COMMAND ... {address} ...

Starts a head node and one worker node (each its own raylet process, one CPU each,
``ray.cluster_utils.Cluster``), replaces ``{address}`` in the command with the
cluster's address, runs it and returns its exit status. Used by
``scripts/ray-selfplay`` to test ``mbag train assistant --ray`` on one machine.
"""

import subprocess
import sys


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    print(f"[local cluster] 2 nodes at {cluster.address}", flush=True)
    try:
        command = [arg.replace("{address}", cluster.address) for arg in sys.argv[1:]]
        return subprocess.run(command).returncode
    finally:
        cluster.shutdown()


if __name__ == "__main__":
    sys.exit(main())
