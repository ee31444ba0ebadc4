//! Integration tests of the mbag crate. They read the reference data in
//! `../shared` by relative path, as CI does.

// The daemon's human-action detection against the recorded tutorial episodes.
mod detect_parity;
// The daemon end to end in play, record and watch against the emulator.
mod daemon_modes;
// Emulated play in exact lockstep: no divergence, every person's edit an action.
mod daemon_lockstep;
// Faults during a daemon episode: clear errors, readable recordings, no hangs.
mod daemon_faults;
// Chat through the daemon: a person's rejection heard, an assistant's answer said.
mod daemon_chat;
// Datasets of recordings: manifest, problems by file, stats, datasheet.
mod dataset_cli;
// Strangers on the daemon's listeners: refused, survived, never recorded.
mod daemon_hostile;
mod evaluate_cli;
// The robustness suite: the oracle passes it, noop does not; bad files named.
mod goal_transforms;
// The goal model: the corpus split kept, baselines beaten on unseen styles, defaults load.
mod goal_model;
mod golden_episodes;
mod malmo_cli;
mod malmo_emulator_cli;
mod robustness_cli;
// The real MalmoPython against the emulator, and the differential test of our
// agent side against it.
mod malmopython_peer;
// Numeric options: extreme and malformed values are usage errors, not panics.
mod numeric_cli;
// Pairwise rating: a rating in headless Chromium survives a killed server; TrueSkill ranks.
mod rate;
// The networks: golden parity, weight loading, checkpoints.
mod nn;
// The inference service, under the same libtorch lock.
mod nn_service;
// The web pages against other sites and hostile local peers (issue 40's findings).
mod web_security;
// Studies: a simulated study run, surveyed (in headless Chromium too) and reported.
mod study;
// Recordings: durability, verification, the human data converted.
mod recording;
// Training: behaviour cloning learns and resumes; plots of its metrics.
mod train;
// AssistanceZero training: learning, resume, trained models as az: agents.
mod train_assistant;
mod vecenv;
// Finding Chromium for the browser tests.
mod browser;
// mbag view in headless Chromium: the world drawn, scrubbing redraws it.
mod view;
