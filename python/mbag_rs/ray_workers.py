"""Self-play workers of ``mbag train assistant --ray ADDRESS`` as Ray actors.

``mbag`` (the learner) binds its experience port, then runs

    python -m mbag_rs.ray_workers --address ADDRESS --learner HOST:PORT \\
        --workers N --mbag /path/to/mbag --cwd DIR

which connects to the Ray cluster at ADDRESS and places N actors, one CPU each,
wherever the cluster has room. Each actor runs ``mbag train assistant-worker
--learner HOST:PORT`` on its node: the worker plays AssistanceZero self-play with the
weights the learner sends each iteration (MCTS, the simulator and the network in
Rust) and sends back its fragments. The launcher exits when every worker has, with
the first failure's status; the learner treats a lost worker as an error.

The ``mbag`` binary and the run's files (the human model, house data) must be at the
same paths on every node, as on a shared file system.
"""

import argparse
import subprocess
import sys
from typing import List


def main(argv: List[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--address", required=True, help="the Ray cluster (ray.init's address)")
    parser.add_argument("--learner", required=True, help="HOST:PORT of the learner's experience port")
    parser.add_argument("--workers", type=int, required=True)
    parser.add_argument("--mbag", required=True, help="the mbag binary, at this path on every node")
    parser.add_argument("--cwd", required=True, help="the working directory of the workers")
    args = parser.parse_args(argv)
    if not 1 <= args.workers <= 4096:
        parser.error(f"--workers must be 1..=4096, not {args.workers}")

    import ray

    ray.init(address=args.address, log_to_driver=True)

    @ray.remote(num_cpus=1, max_restarts=0)
    class SelfPlayWorker:
        """One ``mbag train assistant-worker`` process on this actor's node."""

        def run(self, index: int) -> int:
            command = [
                args.mbag,
                "train",
                "assistant-worker",
                "--learner",
                args.learner,
                "--index",
                str(index),
            ]
            return subprocess.run(command, cwd=args.cwd).returncode

    actors = [SelfPlayWorker.remote() for _ in range(args.workers)]
    results = ray.get([actor.run.remote(i) for i, actor in enumerate(actors)])
    failed = [(i, code) for i, code in enumerate(results) if code != 0]
    for i, code in failed:
        print(f"[ray workers] worker {i} exited with status {code}", file=sys.stderr)
    ray.shutdown()
    return failed[0][1] if failed else 0


if __name__ == "__main__":
    sys.exit(main())
