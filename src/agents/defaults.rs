//! The agents mbag plays when none is named: `play`'s emulated person and
//! assistant, `record`'s and `watch`'s seats, and `evaluate`'s human. Paths are
//! relative to the checkout (run from its root, as `scripts/run` does);
//! `models/README.md` says how each model was made and how it evaluates.

/// The shipped human model: behaviour cloning with the paper's 5x5x5 filters
/// and 8 layers (`runs/human_f5/fold_0`, chosen over the all-data run by goal %
/// on the corpus' training houses; held-out cross-entropy 1.83).
pub const HUMAN: &str = "bc:models/human.json";

/// The longest stretch of NOOP rows any person of the study's 18 episodes
/// showed (in the BC stream, idle rows at the study's 0.8 s per step).
pub const STUDY_LONGEST_IDLE: u32 = 44;

/// The person `play` emulates: the shipped human model, never idle longer than
/// anyone in the study was ([`STUDY_LONGEST_IDLE`]). Beside an assistant that
/// does nothing it otherwise sometimes stalls for a minute and more.
pub const EMULATED_PERSON: &str = "bc:models/human.json?max_idle=44";

/// The assistant: `models/assistant.json`, a 16-channel AssistanceZero network
/// whose goal head is replaced by the goal model learned from the house
/// corpus (`models/assistant_goal.json.gz`), playing as its config's `play`
/// object says. It rarely acts and so rarely harms, where the reference's test
/// checkpoint (the default before) broke more than it built; it does not yet
/// help as much as the issue asks (`models/README.md` has the tables).
pub const ASSISTANT: &str = "az:models/assistant.json";

/// The person in the 6x6x6 tutorial, whose world the shipped human model was
/// not built for.
pub const TUTORIAL_HUMAN: &str = "bc:../shared/models/bc_human_tutorial.json";

/// Held-out human models: the five cross-validation folds of the shipped human
/// model's recipe (`runs/README.md`), each trained without a fifth of the study
/// episodes. `robustness run` evaluates assistants with all of them.
pub const HUMAN_POPULATION: [&str; 5] = [
    "bc:runs/human_cpu/fold_0/model.json",
    "bc:runs/human_cpu/fold_1/model.json",
    "bc:runs/human_cpu/fold_2/model.json",
    "bc:runs/human_cpu/fold_3/model.json",
    "bc:runs/human_cpu/fold_4/model.json",
];
