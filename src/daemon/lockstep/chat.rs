//! The loop's side of chat: people's messages read from Minecraft passed on,
//! and agents' words said in Minecraft, each recorded once
//! ([`ChatRelay`](crate::daemon::chat::ChatRelay)).

use std::time::SystemTime;

use log::{debug, info};

use super::{Controller, Lockstep, LockstepError};
use crate::daemon::executor::{Job, JobKind};
use crate::daemon::seam;

impl Lockstep {
    /// Passes on the messages the last observation showed. An agent seat's
    /// line is its own words coming back: they were passed on and recorded
    /// when sent ([`Lockstep::agent_says`]), so it is not a message again.
    pub(super) fn relay_minecraft_chat(&mut self) {
        let lines = self.view.take_chat();
        let Some(relay) = &mut self.chat else {
            return;
        };
        for (line, received) in lines {
            if matches!(
                self.controllers.get(line.speaker),
                Some(Controller::Agent(_))
            ) {
                debug!("player {}'s words came back: {:?}", line.speaker, line.text);
                continue;
            }
            let heard = relay.said(line.speaker, line.text, received);
            info!(
                "player {} says {:?} ({})",
                heard.speaker,
                heard.text,
                heard.flags.intent.name()
            );
        }
    }

    /// Agent seat `p` says `text`: as its Malmo `chat` command on its own
    /// connection, queued on the executor (the loop never waits for a
    /// socket), and passed on and recorded now, as Minecraft will show it.
    pub(super) fn agent_says(&mut self, p: usize, text: &str) -> Result<(), LockstepError> {
        let Some(relay) = &mut self.chat else {
            return Ok(());
        };
        let Some((instruction, words)) = seam::chat::say(p, text) else {
            return Ok(());
        };
        self.executor.submit(Job {
            kind: JobKind::Upkeep,
            instructions: vec![instruction],
        })?;
        let heard = relay.said(p, words, SystemTime::now());
        info!(
            "player {p} says {:?} ({})",
            heard.text,
            heard.flags.intent.name()
        );
        Ok(())
    }
}
