//! `mbag view`: an episode in the browser, from a recording or live.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;
use clap::Args;

use crate::recording::Recording;
use crate::view::scene::Scene;
use crate::view::server::{self, Shown};
use crate::view::tail;

/// Arguments of `mbag view`.
#[derive(Debug, Args)]
#[command(after_help = "\
The page draws the world in 3-D (drag to turn, wheel to zoom, or a top-down view), with
a timeline to scrub, play/pause and speed, the goal as a translucent overlay (toggle),
the players, and the chat. Everything is served by mbag: no internet needed.

URL parameters: ?step=N opens at step N, ?camera=top the top-down view, ?goal=1 the
overlay, ?play=1 starts playing.

Examples:
  mbag view recordings/samples/simulated_lowest_block_pair_seed3.jsonl
  mbag view --live mbag-recordings        (follows the newest recording a running
                                           play/record/watch writes there)
  mbag view FILE --listen 0.0.0.0:8080    (other machines may look: you ask for it)")]
pub struct ViewArgs {
    /// The recording to show (`.jsonl` or `.jsonl.gz`); with --live, a
    /// recording being written or a folder whose newest recording to follow.
    #[arg(value_name = "RECORDING", required_unless_present = "live")]
    pub recording: Option<PathBuf>,
    /// Follow a recording as the daemon writes it [default folder:
    /// mbag-recordings].
    #[arg(long)]
    pub live: bool,
    /// Where to listen; loopback unless you name another interface.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8765")]
    pub listen: SocketAddr,
}

/// Runs `mbag view`.
pub fn run(args: ViewArgs) -> anyhow::Result<u8> {
    let shown = if args.live {
        let place = args
            .recording
            .clone()
            .unwrap_or_else(|| PathBuf::from("mbag-recordings"));
        let file = tail::newest_recording(&place).with_context(|| {
            format!(
                "no recording (*.jsonl) to follow at {}; start play, record or watch first",
                place.display()
            )
        })?;
        let rec = Recording::read(&file).ok();
        let scene = match &rec {
            Some(r) => Scene::of_recording(r)?,
            None => anyhow::bail!(
                "{} has no complete header yet; try again in a moment",
                file.display()
            ),
        };
        let shown = Shown::live(Scene {
            frames: Vec::new(),
            ..scene
        });
        println!("following {}", file.display());
        let follower = shown.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let stop_thread = stop.clone();
        std::thread::Builder::new()
            .name("mbag-view-tail".into())
            .spawn(move || {
                if let Err(e) =
                    tail::follow(&file, &follower, &|| stop_thread.load(Ordering::Relaxed))
                {
                    log::error!("view: {e}");
                }
            })
            .context("starting the follower thread")?;
        shown
    } else {
        let path = args.recording.clone().context("name a recording")?;
        let rec = Recording::read(&path)?;
        Shown::finished(Scene::of_recording(&rec)?)
    };
    super::local_server::serve_until_ctrl_c(
        args.listen,
        "other machines can see this episode",
        server::bind(args.listen),
        |addr| format!("viewing at http://{addr}/  (Ctrl-C to stop)"),
        move |listener, stop| server::serve(listener, shown, stop),
    )
}
