//! Chat through the daemon, in MBAG's terms: who said what, read once with an
//! intent parser, passed to every other seat's agent, recorded in the next step
//! line and published for emulated persons.
//!
//! Messages reach the relay two ways, and each message exactly one of them:
//! a person's is read back from Minecraft's chat (the seam reads the lines),
//! an agent's is taken when it is said, as the daemon sends it. An agent seat's
//! line coming back from Minecraft is therefore not a message again (the loop
//! drops it): that way an agent's words are recorded and heard even when no
//! client observes chat, and in the step the agent said them.
//!
//! Every queue here is bounded: an agent seat's inbox and the published log
//! keep their newest [`MAX_INBOX`] and [`MAX_LOG`] messages; the step's records
//! are taken by every step line.

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use log::warn;

use crate::chat::conversation::Heard;
use crate::chat::intent::{IntentParser, RuleParser};
use crate::recording::step::ChatRecord;

/// The most messages waiting for one agent seat between two of its moves.
pub const MAX_INBOX: usize = 64;

/// The most messages an emulated person can catch up on.
pub const MAX_LOG: usize = 256;

/// An intent parser shared by the loop and whoever configured it.
#[derive(Clone)]
pub struct SharedParser(pub Arc<dyn IntentParser + Send + Sync>);

impl Default for SharedParser {
    /// The rule-based parser.
    fn default() -> Self {
        Self(Arc::new(RuleParser))
    }
}

impl fmt::Debug for SharedParser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SharedParser")
    }
}

/// Whether and how the daemon relays chat.
#[derive(Clone, Debug)]
pub struct ChatSettings {
    /// Chat on: AI seats' missions observe chat, people's messages are read
    /// and passed to the agents, and agents' words are said in Minecraft. Off:
    /// the reference's missions, and nothing is read or said. On by default:
    /// a message changes nothing in the game unless an agent listens.
    pub enabled: bool,
    /// Reads each message's intent flag (and what it refers to).
    pub parser: SharedParser,
}

impl Default for ChatSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            parser: SharedParser::default(),
        }
    }
}

/// The messages said so far in an episode, for emulated persons: the newest
/// [`MAX_LOG`], numbered from the first of the episode.
#[derive(Clone, Debug, Default)]
pub struct ChatLog {
    /// The number of `messages[0]` in the episode.
    pub first: u64,
    /// The messages, oldest first.
    pub messages: Arc<[Heard]>,
}

impl ChatLog {
    /// The messages numbered `from` on, with the number after the last; a
    /// reader that fell further behind than the log reaches gets what is left.
    pub fn since(&self, from: u64) -> (&[Heard], u64) {
        let skip = from.saturating_sub(self.first) as usize;
        let next = self.first + self.messages.len() as u64;
        (self.messages.get(skip..).unwrap_or_default(), next)
    }
}

/// One episode's chat: inboxes of the agent seats, the records of the step in
/// progress, and the log.
#[derive(Debug)]
pub struct ChatRelay {
    parser: SharedParser,
    /// Per player: the messages its agent has not heard yet (`None` for a
    /// person, who reads chat in Minecraft).
    inboxes: Vec<Option<Vec<Heard>>>,
    records: Vec<ChatRecord>,
    log: Vec<Heard>,
    first: u64,
    published: ChatLog,
    dropped: u64,
}

impl ChatRelay {
    /// A relay for players whose seats are agents where `agents[p]`.
    pub fn new(parser: SharedParser, agents: &[bool]) -> Self {
        Self {
            parser,
            inboxes: agents.iter().map(|&a| a.then(Vec::new)).collect(),
            records: Vec::new(),
            log: Vec::new(),
            first: 0,
            published: ChatLog::default(),
            dropped: 0,
        }
    }

    /// Player `speaker` said `text` at `wall`: it is parsed, queued for every
    /// other agent seat and kept for the step's record and the log.
    pub fn said(&mut self, speaker: usize, text: String, wall: SystemTime) -> &Heard {
        let flags = self.parser.0.read(&text);
        let heard = Heard {
            speaker,
            text,
            flags,
        };
        for (p, inbox) in self.inboxes.iter_mut().enumerate() {
            let Some(inbox) = inbox.as_mut().filter(|_| p != speaker) else {
                continue;
            };
            if inbox.len() == MAX_INBOX {
                inbox.remove(0);
                self.dropped += 1;
                warn!("player {p}'s agent has {MAX_INBOX} messages waiting; the oldest is dropped");
            }
            inbox.push(heard.clone());
        }
        self.records.push(ChatRecord {
            speaker,
            text: heard.text.clone(),
            intent: flags.intent,
            wall: wall
                .duration_since(SystemTime::UNIX_EPOCH)
                .ok()
                .map(|d| d.as_secs_f64()),
        });
        if self.log.len() == MAX_LOG {
            self.log.remove(0);
            self.first += 1;
        }
        self.log.push(heard);
        self.published = ChatLog {
            first: self.first,
            messages: self.log.as_slice().into(),
        };
        self.log.last().expect("just pushed")
    }

    /// The messages player `p`'s agent has not heard yet (none for a person).
    pub fn take_heard(&mut self, p: usize) -> Vec<Heard> {
        self.inboxes
            .get_mut(p)
            .and_then(Option::as_mut)
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// The messages said since the last call, for the step line (`None` if
    /// none).
    pub fn take_records(&mut self) -> Option<Vec<ChatRecord>> {
        (!self.records.is_empty()).then(|| std::mem::take(&mut self.records))
    }

    /// The log as published after each step.
    pub fn log(&self) -> ChatLog {
        self.published.clone()
    }

    /// Messages dropped from full inboxes.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::intent::Intent;

    #[test]
    fn messages_go_to_every_other_agent_once_and_into_the_step_record() {
        // A person (0) and two agents (1, 2).
        let mut relay = ChatRelay::new(SharedParser::default(), &[false, true, true]);
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(1500);
        assert_eq!(
            relay.said(0, "no, not there".into(), t).flags.intent,
            Intent::Reject
        );
        relay.said(1, "Sorry, no more glass.".into(), t);
        assert!(relay.take_heard(0).is_empty(), "a person reads Minecraft");
        let heard: Vec<_> = relay.take_heard(1).into_iter().map(|h| h.speaker).collect();
        assert_eq!(heard, [0], "nobody hears themselves");
        let heard: Vec<_> = relay.take_heard(2).into_iter().map(|h| h.text).collect();
        assert_eq!(heard, ["no, not there", "Sorry, no more glass."]);
        assert!(relay.take_heard(2).is_empty(), "heard once");
        let records = relay.take_records().unwrap();
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].speaker, 0);
        assert_eq!(records[0].intent, Intent::Reject);
        assert_eq!(records[0].wall, Some(1.5));
        assert_eq!(records[1].text, "Sorry, no more glass.");
        assert_eq!(relay.take_records(), None);
        let log = relay.log();
        let (messages, next) = log.since(0);
        assert_eq!((messages.len(), next), (2, 2));
        assert!(relay.log().since(2).0.is_empty());
    }

    #[test]
    fn queues_keep_their_newest_messages() {
        let mut relay = ChatRelay::new(SharedParser::default(), &[false, true]);
        let n = MAX_LOG + 10;
        for k in 0..n {
            relay.said(0, format!("message {k}"), SystemTime::now());
        }
        let inbox = relay.take_heard(1);
        assert_eq!(inbox.len(), MAX_INBOX);
        assert_eq!(inbox[0].text, format!("message {}", n - MAX_INBOX));
        assert_eq!(relay.dropped(), (n - MAX_INBOX) as u64);
        let log = relay.log();
        assert_eq!(log.first, 10);
        let (messages, next) = log.since(3);
        assert_eq!(messages.len(), MAX_LOG);
        assert_eq!(messages[0].text, "message 10");
        assert_eq!(next, n as u64);
        assert_eq!(relay.take_records().unwrap().len(), n);
    }
}
