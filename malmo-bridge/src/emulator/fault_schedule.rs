//! Scheduled faults: the [`FaultSpec`]s of [`EmulatorConfig::faults`], each set
//! on its client's [`Faults`] when its [`FaultWhen`] arrives.
//!
//! A client publishes its [`MissionClock`] on a watch channel (the session
//! bumps it when a mission starts, at every tick, and when the mission stops);
//! a fault with an `@WHEN` gets a task of its own that waits on that clock and
//! on the emulator's shutdown, so nothing polls and nothing blocks.
//!
//! [`EmulatorConfig::faults`]: super::EmulatorConfig::faults
//! [`Faults`]: super::Faults

use std::sync::Arc;

use tokio::sync::watch;

use super::Shared;
use super::client::Client;
use super::fault_spec::{FaultSpec, FaultWhen};

/// Where a client's missions stand.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct MissionClock {
    /// Missions started so far (the running one included): tells one mission
    /// from the next.
    pub started: u64,
    /// Whether a mission runs (from its echo to its end).
    pub running: bool,
    /// Ticks of the running mission so far.
    pub ticks: u64,
}

impl MissionClock {
    /// A new mission has started.
    pub(crate) fn start(&mut self) {
        self.started += 1;
        self.running = true;
        self.ticks = 0;
    }
}

/// Sets `spec` now if it has no `@WHEN`, else spawns the task that waits for it.
pub(crate) fn arm(spec: FaultSpec, client: Arc<Client>, shared: &Shared) {
    if spec.when == FaultWhen::EmulatorStart {
        log::info!("client {}: fault {spec} armed", client.index);
        spec.kind.apply(&client.faults);
        return;
    }
    let mut shutdown = shared.shutdown.clone();
    shared.tasks.spawn(async move {
        let mut clock = client.clock.subscribe();
        tokio::select! {
            due = wait_until_due(spec.when, &mut clock) => {
                if due {
                    log::info!("client {}: fault {spec} set", client.index);
                    spec.kind.apply(&client.faults);
                }
            }
            _ = shutdown.wait_for(|stop| *stop) => {}
        }
    });
}

/// Waits for the first mission that lasts until `when`; false if the client is
/// gone first.
async fn wait_until_due(when: FaultWhen, clock: &mut watch::Receiver<MissionClock>) -> bool {
    loop {
        // Copy the value out at once: a borrowed one holds the channel's lock.
        let Ok(mission) = clock.wait_for(|c| c.running).await.map(|c| c.started) else {
            return false;
        };
        let ended = |c: &MissionClock| !c.running || c.started != mission;
        match when {
            FaultWhen::EmulatorStart => return true,
            FaultWhen::Ticks(n) => {
                let Ok(now) = clock
                    .wait_for(|c| ended(c) || c.ticks >= n)
                    .await
                    .map(|c| *c)
                else {
                    return false;
                };
                if !ended(&now) {
                    return true;
                }
            }
            FaultWhen::After(after) => {
                let slept = tokio::select! {
                    () = tokio::time::sleep(after) => Ok(true),
                    ended_first = clock.wait_for(ended) => ended_first.map(|_| false),
                };
                match slept {
                    Ok(true) if !ended(&clock.borrow()) => return true,
                    Ok(_) => {}
                    Err(_) => return false,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Runs `wait_until_due` against a clock driven by `drive`.
    async fn due_after(
        when: FaultWhen,
        drive: impl AsyncFnOnce(&watch::Sender<MissionClock>),
    ) -> Option<MissionClock> {
        let (tx, mut rx) = watch::channel(MissionClock::default());
        let waiter = tokio::spawn(async move {
            let due = wait_until_due(when, &mut rx).await;
            due.then(|| *rx.borrow())
        });
        drive(&tx).await;
        drop(tx);
        waiter.await.unwrap()
    }

    #[tokio::test]
    async fn ticks_count_in_one_mission() {
        // The first mission ends after 3 ticks; the second reaches 5.
        let got = due_after(FaultWhen::Ticks(5), async |tx| {
            for mission in 0..2 {
                tx.send_modify(MissionClock::start);
                for _ in 0..3 + 2 * mission {
                    tokio::task::yield_now().await;
                    tx.send_modify(|c| c.ticks += 1);
                }
                tokio::task::yield_now().await;
                if mission == 0 {
                    tx.send_modify(|c| c.running = false);
                }
            }
        })
        .await;
        let got = got.expect("due in the second mission");
        assert_eq!((got.started, got.ticks), (2, 5));
    }

    #[tokio::test]
    async fn a_time_counts_from_the_mission_start() {
        let ms = Duration::from_millis;
        let got = due_after(FaultWhen::After(ms(200)), async |tx| {
            // Idle time before the mission does not count, nor a mission that
            // ends before the time.
            tokio::time::sleep(ms(300)).await;
            tx.send_modify(MissionClock::start);
            tokio::time::sleep(ms(100)).await;
            tx.send_modify(|c| c.running = false);
            tx.send_modify(MissionClock::start);
            tokio::time::sleep(ms(400)).await;
        })
        .await;
        assert_eq!(got.expect("due in the second mission").started, 2);
    }

    #[tokio::test]
    async fn a_client_gone_first_is_never_due() {
        let got = due_after(FaultWhen::Ticks(1), async |tx| {
            tx.send_modify(MissionClock::start);
            tokio::task::yield_now().await;
        })
        .await;
        assert_eq!(got, None);
    }
}
