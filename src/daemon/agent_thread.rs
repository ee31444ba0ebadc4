//! An agent on its own thread, asked for actions from async code without ever
//! blocking it: the request goes over a bounded channel with `try_send`, and the
//! answer comes back on a oneshot the caller awaits.
//!
//! The channel is tokio's: when the thread ends (even by a panic) its receiver
//! drops every queued request, and with it the reply sender, so no caller waits
//! on a request that will never be served. (A crossbeam channel keeps queued
//! messages alive for as long as a sender exists.)
//!
//! The daemon's network tasks must keep reading Minecraft while an assistant
//! searches for hundreds of milliseconds; this is how they ask.
//!
//! Chat rides on the same request: the messages heard since the last move are
//! handed to [`Agent::hear`] just before the agent acts, and what it says
//! ([`Agent::speak`], asked after each move) comes back with its action. The
//! agent is thus only ever touched on its own thread, and no second queue can
//! fill up while it thinks.

use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::mpsc::{Receiver, Sender, channel};
use tokio::sync::oneshot;

use crate::agents::explain::Explanation;
use crate::agents::{Agent, AgentError};
use crate::chat::conversation::Heard;
use crate::sim::action::Action;
use crate::sim::obs::Observation;

/// Why an agent thread could not answer.
#[derive(Debug, thiserror::Error)]
pub enum AgentThreadError {
    /// A request is still being worked on (the caller asked again too early).
    #[error("agent {0} is still busy with the previous request")]
    Busy(String),
    /// The thread has stopped (shut down or panicked).
    #[error("agent {0} has stopped")]
    Stopped(String),
    /// The agent itself failed.
    #[error(transparent)]
    Agent(#[from] AgentError),
}

/// An action, how long the agent took to choose it, and what it said after.
#[derive(Clone, Debug, PartialEq)]
pub struct Timed {
    /// The action.
    pub action: Action,
    /// Time from the thread picking the request up to the answer.
    pub took: Duration,
    /// What the agent wants to say in chat after this move.
    pub said: Option<String>,
    /// Its account of the move (for the recording's overlays).
    pub explained: Option<Explanation>,
}

enum Request {
    Act {
        observation: Box<Observation>,
        heard: Vec<Heard>,
        reply: oneshot::Sender<Result<Timed, AgentError>>,
    },
    Reset {
        seed: u64,
    },
}

/// An action asked of an agent thread and not yet answered.
#[derive(Debug)]
pub struct PendingAct {
    name: String,
    answer: oneshot::Receiver<Result<Timed, AgentError>>,
}

impl PendingAct {
    /// Waits for the answer.
    pub async fn wait(self) -> Result<Timed, AgentThreadError> {
        match self.answer.await {
            Ok(result) => Ok(result?),
            // The thread dropped the reply: it panicked or was shut down.
            Err(_) => Err(AgentThreadError::Stopped(self.name)),
        }
    }
}

/// A thread owning one agent.
#[derive(Debug)]
pub struct AgentThread {
    name: String,
    requests: Option<Sender<Request>>,
    thread: Option<JoinHandle<()>>,
}

impl AgentThread {
    /// Starts the thread; `name` names it in errors and in the thread list.
    pub fn spawn(name: impl Into<String>, agent: Box<dyn Agent>) -> std::io::Result<Self> {
        let name = name.into();
        // One request in flight plus a reset queued behind it.
        let (requests, inbox) = channel(2);
        let thread = thread::Builder::new()
            .name(format!("agent-{name}"))
            .spawn(move || serve(agent, inbox))?;
        Ok(Self {
            name,
            requests: Some(requests),
            thread: Some(thread),
        })
    }

    /// Asks for the action for `observation`, the agent having first heard
    /// `heard`, without blocking the caller's executor.
    pub async fn act(
        &self,
        observation: Observation,
        heard: Vec<Heard>,
    ) -> Result<Timed, AgentThreadError> {
        self.ask(observation, heard)?.wait().await
    }

    /// Sends the request for `observation` (the agent hears `heard` first) and
    /// returns at once; the answer is awaited with [`PendingAct::wait`]. The
    /// pending answer does not borrow the thread, so the caller can go on
    /// handling other events meanwhile.
    pub fn ask(
        &self,
        observation: Observation,
        heard: Vec<Heard>,
    ) -> Result<PendingAct, AgentThreadError> {
        let (reply, answer) = oneshot::channel();
        self.send(Request::Act {
            observation: Box::new(observation),
            heard,
            reply,
        })?;
        Ok(PendingAct {
            name: self.name.clone(),
            answer,
        })
    }

    /// Starts a new episode on the agent (after any request in flight).
    pub fn reset(&self, seed: u64) -> Result<(), AgentThreadError> {
        self.send(Request::Reset { seed })
    }

    fn send(&self, request: Request) -> Result<(), AgentThreadError> {
        let requests = self
            .requests
            .as_ref()
            .ok_or_else(|| AgentThreadError::Stopped(self.name.clone()))?;
        requests.try_send(request).map_err(|e| match e {
            TrySendError::Full(_) => AgentThreadError::Busy(self.name.clone()),
            TrySendError::Closed(_) => AgentThreadError::Stopped(self.name.clone()),
        })
    }

    /// Stops the thread after the request in flight and waits for it. Blocking:
    /// call it from a blocking context (it is also what `Drop` does).
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.requests = None;
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            log::error!("agent thread {} panicked", self.name);
        }
    }
}

impl Drop for AgentThread {
    fn drop(&mut self) {
        self.stop();
    }
}

fn serve(mut agent: Box<dyn Agent>, mut inbox: Receiver<Request>) {
    while let Some(request) = inbox.blocking_recv() {
        match request {
            Request::Act {
                observation,
                heard,
                reply,
            } => {
                for h in &heard {
                    agent.hear(h);
                }
                let started = Instant::now();
                let result = agent.try_act(&observation).map(|action| {
                    let took = started.elapsed();
                    Timed {
                        action,
                        took,
                        said: agent.speak(),
                        explained: agent.explain(),
                    }
                });
                // A caller that gave up is no error.
                let _ = reply.send(result);
            }
            Request::Reset { seed } => agent.reset(seed),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::sync::Notify;

    use super::*;
    use crate::agents::Internals;
    use crate::sim::coords::WorldSize;

    /// Says when it starts, takes its time, then NOOPs; panics when asked at
    /// timestep 99.
    #[derive(Debug)]
    struct Slow {
        delay: Duration,
        resets: u64,
        started: Arc<Notify>,
    }

    fn slow(delay_ms: u64) -> (Box<Slow>, Arc<Notify>) {
        let started = Arc::new(Notify::new());
        let agent = Slow {
            delay: Duration::from_millis(delay_ms),
            resets: 0,
            started: started.clone(),
        };
        (Box::new(agent), started)
    }

    impl Agent for Slow {
        fn name(&self) -> &'static str {
            "Slow"
        }
        fn reset(&mut self, _seed: u64) {
            self.resets += 1;
        }
        fn act(&mut self, obs: &Observation) -> Action {
            self.started.notify_one();
            assert_ne!(obs.timestep, 99, "asked to fail");
            thread::sleep(self.delay);
            Action::NOOP
        }
        fn internals(&self) -> Internals<'_> {
            Internals::None
        }
    }

    fn obs(t: i32) -> Observation {
        let mut o = Observation::new(WorldSize::new(3, 3, 3), 1);
        o.timestep = t;
        o
    }

    /// Acts with how many messages it has heard, and says the last one back.
    #[derive(Debug, Default)]
    struct Parrot {
        heard: Vec<Heard>,
        acted: bool,
    }

    impl Agent for Parrot {
        fn name(&self) -> &'static str {
            "Parrot"
        }
        fn reset(&mut self, _seed: u64) {}
        fn act(&mut self, _obs: &Observation) -> Action {
            self.acted = true;
            Action::new(
                crate::sim::action::ActionType::Noop,
                crate::sim::coords::CellIndex(self.heard.len() as u32),
                crate::sim::block::BlockId::AIR,
            )
        }
        fn internals(&self) -> Internals<'_> {
            Internals::None
        }
        fn hear(&mut self, heard: &Heard) {
            self.heard.push(heard.clone());
        }
        fn speak(&mut self) -> Option<String> {
            // Only ever asked after a move.
            assert!(
                std::mem::take(&mut self.acted),
                "asked to speak before acting"
            );
            self.heard.last().map(|h| format!("you said {:?}", h.text))
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn messages_are_heard_before_the_move_and_words_come_back_with_it() {
        use crate::chat::intent::{IntentParser, RuleParser};
        let agent = AgentThread::spawn("parrot", Box::new(Parrot::default())).unwrap();
        let quiet = agent.act(obs(0), Vec::new()).await.unwrap();
        assert_eq!((quiet.action.location.0, quiet.said), (0, None));
        let heard = ["stop", "why?"].map(|text| Heard {
            speaker: 0,
            text: text.into(),
            flags: RuleParser.read(text),
        });
        let answer = agent.act(obs(1), heard.to_vec()).await.unwrap();
        assert_eq!(answer.action.location.0, 2, "heard both before acting");
        assert_eq!(answer.said.as_deref(), Some("you said \"why?\""));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_slow_agent_never_blocks_the_executor() {
        let agent = AgentThread::spawn("slow", slow(150).0).unwrap();
        // On a single-threaded runtime, a ticker keeps running while the agent
        // thinks: the await yields instead of blocking.
        let ticks = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        let counter = ticks.clone();
        let ticker = tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(10)).await;
                counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        });
        let answer = agent.act(obs(0), Vec::new()).await.unwrap();
        assert_eq!(answer.action, Action::NOOP);
        assert!(answer.took >= Duration::from_millis(150));
        assert!(ticks.load(std::sync::atomic::Ordering::Relaxed) >= 5);
        ticker.abort();
    }

    #[tokio::test(flavor = "current_thread")]
    async fn asking_twice_at_once_is_busy_and_a_panic_is_stopped() {
        let (agent, started) = slow(100);
        let agent = AgentThread::spawn("slow", agent).unwrap();
        // While the first request is being worked on, two more fit in the queue
        // and a fourth finds it full.
        let (first, (second, third, fourth)) = tokio::join!(agent.act(obs(0), Vec::new()), async {
            started.notified().await;
            tokio::join!(
                agent.act(obs(1), Vec::new()),
                agent.act(obs(2), Vec::new()),
                agent.act(obs(3), Vec::new())
            )
        });
        assert!(first.is_ok() && second.is_ok() && third.is_ok());
        assert!(
            matches!(fourth, Err(AgentThreadError::Busy(_))),
            "{fourth:?}"
        );
        let failed = agent.act(obs(99), Vec::new()).await;
        assert!(
            matches!(failed, Err(AgentThreadError::Stopped(_))),
            "{failed:?}"
        );
        // However soon after the panic it asks, a caller is told, never left
        // waiting.
        assert!(matches!(
            agent.act(obs(4), Vec::new()).await,
            Err(AgentThreadError::Stopped(_))
        ));
        // Dropping a panicked thread logs instead of panicking again.
        drop(agent);
    }
}
