#!/usr/bin/env python
"""Steps per second through the mbag_rs package against the reference, in one process.

The scenarios of ../shared/reference/SPEED.md (world 11x10x10, infinite
blocks, CraftAssist train house through the human-study chain, place_wrong -1), run
three ways in the same process and hour:

- the reference's MbagEnv and its C masks (as ../shared/reference/bench/bench_env.py);
- mbag_rs.MbagEnv, the drop-in: one env, one step call and one mask call per step;
- mbag_rs.MbagVecEnv: many envs per call, masks computed with the step, the GIL
  released while Rust works.

Timed as the reference's bench times them: the env step and, where the scenario says
so, the players' masks (sampling uniformly from them is not timed) or the agents'
actions (the reference's agents against the package's, which run in Rust). Resets are
excluded (the vectorised env restarts episodes inside its step, so it pays them).

    .deps/python/bin/python python/bench/bench_env.py [--reps 3] [--steps 1000] [--json F]

Needs the reference importable (scripts/setup installs it into .deps/python) and
MBAG_REF pointing at its source (default .deps/reference).
"""

import argparse
import json
import os
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
os.environ.setdefault("MBAG_REF", str(ROOT / ".deps" / "reference"))
sys.path.insert(0, str(ROOT.parent / "shared" / "reference" / "bench"))
import refenv  # noqa: E402  (the shared bench's configs and reference set-up)

refenv.fix_hash_seed()
refenv.import_reference()

import numpy as np  # noqa: E402
import random  # noqa: E402

import mbag_rs  # noqa: E402
from mbag.agents.action_distributions import MbagActionDistribution as RefDist  # noqa: E402
from mbag.environment.mbag_env import MbagEnv as RefEnv  # noqa: E402

# scenario -> (teleportation, masks timed, line of sight)
SCENARIOS = {
    "uniform_valid_2p_walk_env_step_only": (False, False, False),
    "uniform_valid_2p_walk_with_masks": (False, True, False),
    "uniform_valid_2p_walk_with_los_masks": (False, True, True),
    "uniform_valid_2p_teleport_with_masks": (True, True, False),
}
# scenario -> (players, teleportation, agent class name): the agents act every step
# (mask, distribution and sampling timed, as in the reference's bench).
AGENT_SCENARIOS = {
    "lowest_block_agent_1p_teleport": (1, True, "LowestBlockAgent"),
    "lowest_block_agent_2p_teleport": (2, True, "LowestBlockAgent"),
    "random_agent_2p_walk": (2, False, "RandomAgent"),
}


def ours_config(teleportation, num_players=2):
    """The reference's config, with goals read by mbag from the shared houses."""
    config = refenv.env_config(num_players=num_players, teleportation=teleportation)
    config = dict(config, goal_generator="TransformedGoalGenerator")
    inner = dict(config["goal_generator_config"])
    inner["goal_generator_config"] = {
        "data_dir": str(ROOT.parent / "shared" / "data" / "houses" / "craftassist"),
        "subset": "train",
    }
    config["goal_generator_config"] = inner
    return config


def single(env_class, dist, config, masks_timed, los, seed, steps):
    """One env driven step by step; seconds of the timed parts."""
    random.seed(seed)
    np.random.seed(seed)
    rng = np.random.default_rng(seed)
    env = env_class(config)
    mapping = dist.get_action_mapping(env.config)
    obs, _ = env.reset()
    timed = 0.0
    for _ in range(steps):
        t0 = time.perf_counter()
        masks = [
            dist.get_mask_flat(env.config, (o[0][None], o[1][None], o[2][None]), line_of_sight_masking=los)[0]
            for o in obs
        ]
        t1 = time.perf_counter()
        actions = [tuple(int(v) for v in mapping[rng.choice(np.flatnonzero(m))]) for m in masks]
        t2 = time.perf_counter()
        obs, _, dones, _ = env.step(actions)
        t3 = time.perf_counter()
        timed += (t3 - t2) + ((t1 - t0) if masks_timed else 0.0)
        if dones[0]:
            obs, _ = env.reset()
    return timed


def single_agents(env, agent_classes, seed, steps):
    """One env driven by agents; seconds of their actions and the env's steps."""
    random.seed(seed)
    np.random.seed(seed)
    rng = np.random.default_rng(seed)
    agents = [cls({}, env.config) for cls in agent_classes]

    def reset():
        for agent in agents:
            agent.reset(seed=int(rng.integers(2**31)))
        return env.reset()[0]

    obs = reset()
    timed = 0.0
    for _ in range(steps):
        t0 = time.perf_counter()
        actions = [agent.get_action(o) for agent, o in zip(agents, obs)]
        obs, _, dones, _ = env.step(actions)
        timed += time.perf_counter() - t0
        if dones[0]:
            obs = reset()
    return timed


def vectorised_agents(config, agent, seed, steps, num_envs):
    """MbagVecEnv with every seat played by the package's agent; each env plays
    `steps` steps from its reset, as the reference's single env does."""
    players = config["num_players"]
    vec = mbag_rs.MbagVecEnv(config, num_envs, seed=seed, agents=[agent] * players)
    actions = np.zeros((num_envs, players, 3), dtype=np.int64)
    t0 = time.perf_counter()
    for _ in range(steps):
        vec.step(actions)
    return steps * num_envs, time.perf_counter() - t0


def vectorised(config, masks_timed, los, seed, steps, num_envs):
    """MbagVecEnv; env-steps and the seconds of its step calls.

    Each env plays `steps` steps from its reset, as the reference's single env does:
    the steps of an episode differ in cost (early ones, with the world open and
    every place action valid, cost most), so timing fewer steps per env would
    weigh the mix towards the dear ones."""
    mode = ("los" if los else "no_los") if masks_timed else "no_los"
    vec = mbag_rs.MbagVecEnv(config, num_envs, seed=seed, masks=mode)
    mapping = mbag_rs.MbagActionDistribution.get_action_mapping(vec.config)
    rng = np.random.default_rng(seed)
    out = vec.observe()
    rounds = steps
    timed = 0.0
    played = []
    for _ in range(rounds):
        # Uniform over each player's valid actions (untimed, as in the reference),
        # drawn row by row as the reference's bench draws them: a whole-batch
        # random array of the masks' size would be tens of megabytes, evicting
        # the caches the timed step then runs from.
        masks = out["masks"]
        actions = np.stack(
            [
                mapping[[rng.choice(np.flatnonzero(row)) for row in env_masks]]
                for env_masks in masks
            ]
        )
        played.append(actions)
        t0 = time.perf_counter()
        out = vec.step(actions)
        timed += time.perf_counter() - t0
    if not masks_timed:
        # Step-only scenario: the masks were needed to pick valid actions but the
        # reference does not time them. Replay the same actions on a mask-free
        # env of the same seed: it passes through the same states, so the steps
        # timed are the ones drawn, without the masks.
        vec = mbag_rs.MbagVecEnv(config, num_envs, seed=seed, masks="none")
        timed = 0.0
        for actions in played:
            t0 = time.perf_counter()
            vec.step(actions)
            timed += time.perf_counter() - t0
    return rounds * num_envs, timed


def summary(rates):
    """Medians over the repetitions, and the package's ratios to the reference."""
    med = {k: statistics.median(v) for k, v in rates.items()}
    return {
        "reference_median": med["reference"],
        "mbag_rs_env_median": med["mbag_rs_env"],
        "mbag_rs_vec_env_median": med["mbag_rs_vec_env"],
        "mbag_rs_env_ratio": med["mbag_rs_env"] / med["reference"],
        "mbag_rs_vec_env_ratio": med["mbag_rs_vec_env"] / med["reference"],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--steps", type=int, default=1000, help="env steps per repetition")
    parser.add_argument("--vec-envs", type=int, default=64)
    parser.add_argument("--json", help="write the results here")
    parser.add_argument(
        "--scenarios",
        nargs="+",
        choices=[*SCENARIOS, *AGENT_SCENARIOS],
        help="run only these scenarios (default: all)",
    )
    args = parser.parse_args()
    chosen = set(args.scenarios or [*SCENARIOS, *AGENT_SCENARIOS])
    results = {}
    for scenario, (teleportation, masks_timed, los) in SCENARIOS.items():
        if scenario not in chosen:
            continue
        ref_config = refenv.env_config(num_players=2, teleportation=teleportation)
        our_config = ours_config(teleportation)
        rates = {"reference": [], "mbag_rs_env": [], "mbag_rs_vec_env": []}
        for rep in range(args.reps):
            seed = rep
            t = single(RefEnv, RefDist, ref_config, masks_timed, los, seed, args.steps)
            rates["reference"].append(args.steps / t)
            t = single(mbag_rs.MbagEnv, mbag_rs.MbagActionDistribution, our_config, masks_timed, los, seed, args.steps)
            rates["mbag_rs_env"].append(args.steps / t)
            n, t = vectorised(our_config, masks_timed, los, seed, args.steps, args.vec_envs)
            rates["mbag_rs_vec_env"].append(n / t)
        results[scenario] = summary(rates)
        print(f"[python bench] {scenario} done", file=sys.stderr, flush=True)
    from mbag.agents import heuristic_agents

    for scenario, (players, teleportation, agent) in AGENT_SCENARIOS.items():
        if scenario not in chosen:
            continue
        ref_config = refenv.env_config(num_players=players, teleportation=teleportation)
        our_config = ours_config(teleportation, players)
        rates = {"reference": [], "mbag_rs_env": [], "mbag_rs_vec_env": []}
        for rep in range(args.reps):
            t = single_agents(RefEnv(ref_config), [getattr(heuristic_agents, agent)] * players, rep, args.steps)
            rates["reference"].append(args.steps / t)
            ours = [getattr(mbag_rs, agent)] * players
            t = single_agents(mbag_rs.MbagEnv(our_config), ours, rep, args.steps)
            rates["mbag_rs_env"].append(args.steps / t)
            n, t = vectorised_agents(our_config, agent, rep, args.steps, args.vec_envs)
            rates["mbag_rs_vec_env"].append(n / t)
        results[scenario] = summary(rates)
        print(f"[python bench] {scenario} done", file=sys.stderr, flush=True)
    out = {
        "what": "env-steps/s through the mbag_rs package and the reference in one process",
        "machine": refenv.machine(),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "reps": args.reps,
        "steps": args.steps,
        "vec_envs": args.vec_envs,
        "results": results,
    }
    print(f"mbag_rs from Python {out['python']} (numpy {out['numpy']}), {args.reps} x {args.steps} steps, {out['machine']}")
    print(f"| {'scenario':<40} | {'reference':>10} | {'MbagEnv':>10} | {'ratio':>6} | {'MbagVecEnv':>10} | {'ratio':>6} |")
    print(f"|{'-' * 42}|{'-' * 11}:|{'-' * 11}:|{'-' * 7}:|{'-' * 11}:|{'-' * 7}:|")
    for s, r in results.items():
        print(
            f"| {s:<40} | {r['reference_median']:>10,.0f} | {r['mbag_rs_env_median']:>10,.0f} | "
            f"{r['mbag_rs_env_ratio']:>5.0f}x | {r['mbag_rs_vec_env_median']:>10,.0f} | {r['mbag_rs_vec_env_ratio']:>5.0f}x |"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
