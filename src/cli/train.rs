//! `mbag train ...`: training networks.

use clap::Subcommand;

use super::train_assistant::{self, AssistantArgs};

/// Training subcommands.
#[derive(Debug, Subcommand)]
pub enum TrainCommand {
    /// Train an AssistanceZero assistant by self-play (section 4.2 and appendix A
    /// of the paper).
    ///
    /// Each iteration plays `training.rollout_len` moves in each of
    /// `training.num_envs` environments: the human model (--human) as player 0,
    /// the assistant as player 1 choosing every move by MCTS on the current
    /// network (leaves of all environments batched on an inference thread). The
    /// samples (observation, MCTS policy, discounted return, the true goal, the
    /// human's action, the goal predicted at play time) go to a replay buffer;
    /// then Adam minimises the paper's loss (policy towards the MCTS policy,
    /// value, goal prediction, KL to the played goal predictions, the human's
    /// action) on `training.samples_per_iteration` samples drawn from it.
    ///
    /// The config file (JSON; configs/train/assistant_small.json learns in
    /// minutes on a CPU, assistant_paper.json is the paper's Table 14 for a GPU)
    /// holds the env and its goals, the network, the search, the loop and the
    /// loss weights; unknown keys are errors naming the key.
    ///
    /// OUT gets metrics.jsonl (every metric of every iteration: losses, goal %,
    /// env steps/s, MCTS simulations/s, SGD samples/s; draw it with `mbag plot`),
    /// checkpoints/ (every `training.checkpoint_every` iterations; --resume
    /// continues from the latest, losing at most that interval), and at the end
    /// model.json + model.safetensors, usable as `az:OUT/model.json`.
    ///
    /// Examples:
    ///
    /// mbag train assistant --human heuristic:lowest_block --config configs/train/assistant_small.json --out runs/az
    ///
    /// mbag train assistant --human heuristic:lowest_block --config configs/train/assistant_small.json --out runs/az --resume
    ///
    /// mbag plot runs/az/metrics.jsonl --out runs/az/curves.png
    ///
    /// mbag evaluate --human heuristic:lowest_block --assistant az:runs/az/model.json --goals tutorial --world-size 6x6x6 --horizon 100
    Assistant(AssistantArgs),
}

/// Runs a training subcommand; returns the exit code.
pub fn run(command: TrainCommand) -> anyhow::Result<u8> {
    match command {
        TrainCommand::Assistant(args) => train_assistant::run(args),
    }
}
