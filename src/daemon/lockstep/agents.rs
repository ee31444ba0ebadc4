//! Asking the agents for their actions (and what they say) and sending the
//! actions that took effect to Minecraft.

use std::time::Instant;

use log::{debug, info, warn};

use super::pump::{Pumped, Until};
use super::{Controller, Lockstep, LockstepError};
use crate::daemon::agent_thread::PendingAct;
use crate::daemon::executor::{Job, JobKind};
use crate::daemon::translate::{Executed, NotSent, View, translate};
use crate::sim::action::Action;
use crate::sim::coords::PlayerId;
use crate::sim::env::StepOutcome;
use crate::sim::inventory::Inventory;

impl Lockstep {
    /// Each player's action for this step: humans' detected actions, agents'
    /// decisions (asked of their threads at once, observations read meanwhile).
    pub(super) async fn decide(&mut self) -> Result<Vec<Action>, LockstepError> {
        let n = self.env.num_players();
        let mut actions = vec![Action::NOOP; n];
        let mut pending: Vec<(usize, PendingAct)> = Vec::new();
        for (p, controller) in self.controllers.iter().enumerate() {
            match controller {
                Controller::Minecraft => {
                    if let Some(a) = self.view.next_action(p) {
                        actions[p] = a;
                    }
                }
                Controller::Agent(agent) => {
                    let mut obs = self.env.new_observation();
                    if let Err(e) = self.env.observe(p, &mut obs) {
                        warn!("player {p}: {e}; it does nothing this step");
                        continue;
                    }
                    // What was said since its last move, heard before this one.
                    let heard = self
                        .chat
                        .as_mut()
                        .map(|c| c.take_heard(p))
                        .unwrap_or_default();
                    let ask = agent
                        .ask(obs, heard)
                        .map_err(|error| LockstepError::Agent { player: p, error })?;
                    pending.push((p, ask));
                }
            }
        }
        // The agents think on their threads at once; their answers are
        // awaited in turn while the pump keeps reading.
        let answers = async move {
            let mut out = Vec::with_capacity(pending.len());
            for (p, ask) in pending {
                out.push((p, ask.wait().await));
            }
            out
        };
        let Pumped::Answered(answers) = self.pump(Until::Deadline, None, answers).await? else {
            unreachable!("a pump with no deadline ends only with its answer");
        };
        for (p, timed) in answers {
            let timed = timed.map_err(|error| LockstepError::Agent { player: p, error })?;
            self.stats.inference.push(timed.took);
            actions[p] = timed.action;
            self.explained[p] = timed.explained;
            if let Some(text) = timed.said {
                self.agent_says(p, &text)?;
            }
        }
        Ok(actions)
    }

    /// Sends each AI action that took effect to Minecraft ([`translate`]) and
    /// tells the detector what it will change.
    pub(super) fn dispatch_ai_actions(
        &mut self,
        actions: &[Action],
        outcome: &StepOutcome,
        inventories_before: &[Inventory],
        decided: Instant,
    ) -> Result<(), LockstepError> {
        let state = self.env.state();
        for (p, controller) in self.controllers.iter().enumerate() {
            if !matches!(controller, Controller::Agent(_)) {
                continue;
            }
            let action = outcome.infos[p].action;
            debug!("player {p}: chose {:?}, took {action:?}", actions[p]);
            let received = |r: usize| {
                let n = state.inventories[r].count(action.block)
                    - inventories_before[r].count(action.block);
                (r != p && n > 0).then_some((r, n))
            };
            let executed = Executed {
                player: p,
                action,
                attempt: self
                    .env
                    .place_break_attempts()
                    .iter()
                    .find(|a| a.player == PlayerId(p) && a.chosen.is_some()),
                given: (0..state.inventories.len()).find_map(received),
                position: state.player_positions[p],
            };
            let predicted = self.view.detector().predicted_state();
            let view = View {
                now: self.view.state(),
                predicted: &predicted,
                settled: self.running_ai == 0,
            };
            let config = self.env.config();
            match translate(config, self.view.config(), &executed, view, &mut self.rng) {
                Ok(sent) => {
                    if sent.reordered_slots {
                        warn!("player {p}'s block slots are out of order; repairing them");
                    }
                    self.view.detector_mut().expect(sent.expected);
                    self.executor.submit(Job {
                        kind: JobKind::AiAction { player: p, decided },
                        instructions: sent.instructions,
                    })?;
                    self.running_ai += 1;
                }
                Err(NotSent::Noop) => {}
                Err(why @ (NotSent::Overtaken { .. } | NotSent::Unaimable { .. })) => {
                    info!("player {p}: {why}");
                }
                Err(why) => warn!("player {p}: {why}"),
            }
        }
        Ok(())
    }
}
