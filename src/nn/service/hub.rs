//! The one thread that runs every inference service of the process.
//!
//! libtorch's CPU kernels run on an OpenMP team that belongs to the OS thread
//! calling them. With a thread per service, a process serving two models (a
//! human and an assistant, as every `play` and `evaluate` does) had two teams
//! on two cores, each one's workers spinning and sleeping in the other's way:
//! the assistant's batch-1 forward took 6.4 ms beside a human model against
//! 2.5 ms alone, a quarter of the profile in futex wake-ups (SPEED.md). Here
//! every service's worker lives on one thread, so there is one team and each
//! batch gets it whole; and the batches are answered from the thread that ran
//! them, with no hop in between (handing each batch to a shared thread instead
//! cost about 1 ms a call).
//!
//! The thread waits on every worker's queue at once and gives a turn to
//! whichever has a message. A worker gathering a batch may wait up to its
//! `max_wait` for more jobs, and the other services wait meanwhile: the cores
//! are shared anyway.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Mutex, OnceLock};

use crossbeam_channel::{Receiver, Select, Sender, bounded};

use super::{Model, ServiceStats, Worker, panic_message};

/// What a worker leaves behind when it ends: its model and statistics, or the
/// message of the panic that ended it.
pub(super) type Finished = Result<(Model, ServiceStats), String>;

/// A worker handed to the thread, and where its end is reported.
pub(super) struct Entry {
    pub worker: Worker,
    pub finished: Sender<Finished>,
    /// Dropped when the worker ends, which wakes every `Pending` still waiting.
    pub _done: Sender<()>,
}

/// Whether a worker's turn left it with more to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Turn {
    /// It handled a message.
    Worked,
    /// Its queue was empty.
    Idle,
    /// It was told to stop and has answered everything queued, or every
    /// sender is gone.
    Finished,
}

static HUB: OnceLock<Mutex<Option<Sender<Entry>>>> = OnceLock::new();

/// Hands `entry` to the thread, starting it the first time.
pub(super) fn add(entry: Entry) -> Result<(), String> {
    let hub = HUB.get_or_init(|| Mutex::new(None));
    let mut sender = hub.lock().unwrap_or_else(|e| e.into_inner());
    if sender.is_none() {
        *sender = Some(start()?);
    }
    let Some(tx) = sender.as_ref() else {
        return Err("the inference thread is not running".into());
    };
    match tx.send(entry) {
        Ok(()) => Ok(()),
        Err(_) => {
            // The thread died (a bug panicked outside any worker); the next
            // service starts a new one.
            *sender = None;
            Err("the inference thread has stopped".into())
        }
    }
}

fn start() -> Result<Sender<Entry>, String> {
    let (tx, rx) = bounded::<Entry>(16);
    std::thread::Builder::new()
        .name("mbag-inference".into())
        .spawn(move || serve(&rx))
        .map_err(|e| e.to_string())?;
    Ok(tx)
}

/// The thread's loop: new workers from `entries`, turns for workers with mail.
fn serve(entries: &Receiver<Entry>) {
    let mut workers: Vec<Entry> = Vec::new();
    loop {
        let ready = {
            let mut select = Select::new();
            select.recv(entries);
            for entry in &workers {
                select.recv(&entry.worker.rx);
            }
            select.ready()
        };
        if ready == 0 {
            match entries.try_recv() {
                Ok(entry) => workers.push(entry),
                // Only `add` sends, from a static that never drops the
                // sender; a spurious wake-up finds the queue empty.
                Err(crossbeam_channel::TryRecvError::Empty) => {}
                Err(crossbeam_channel::TryRecvError::Disconnected) => break,
            }
            continue;
        }
        let i = ready - 1;
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let worker = &mut workers[i].worker;
            if tch::get_num_threads() != worker.threads {
                tch::set_num_threads(worker.threads);
            }
            // A control message carried out of the last batch, and a stopping
            // worker's queue, are handled now rather than at the next wake-up.
            loop {
                let turn = worker.turn();
                if turn != Turn::Worked || !(worker.has_carry() || worker.is_stopping()) {
                    return turn;
                }
            }
        }));
        match outcome {
            Ok(Turn::Worked | Turn::Idle) => {}
            Ok(Turn::Finished) => {
                let entry = workers.swap_remove(i);
                let stats = entry.worker.into_parts();
                let _ = entry.finished.send(Ok(stats));
            }
            Err(panic) => {
                let entry = workers.swap_remove(i);
                let message = panic_message(panic.as_ref());
                log::error!("inference service panicked: {message}");
                let _ = entry.finished.send(Err(message));
            }
        }
    }
}
