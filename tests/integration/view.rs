//! `mbag view` in a real browser: headless Chromium renders the served page,
//! and the screenshot shows each column's top block in its colour at the
//! pixel the top-down camera puts it; a later step draws a different world.
//! Without Chromium (scripts/setup installs Debian's) the tests print SKIPPED.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use mbag::recording::Recording;
use mbag::view::scene::Scene;

const SAMPLE: &str = "recordings/samples/simulated_lowest_block_pair_seed3.jsonl";
/// The canvas's size (src/view/assets/index.html).
const CANVAS: (u32, u32) = (800, 600);

use super::browser::chromium;

/// A running `mbag view` and its address; killed on drop.
struct Viewer {
    child: Child,
    url: String,
}

impl Drop for Viewer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(recording: &str) -> Viewer {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mbag"))
        .args(["view", recording, "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("starting mbag view");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| {
            l.strip_prefix("viewing at ")
                .map(|rest| rest.split_whitespace().next().unwrap().to_owned())
        })
        .expect("mbag view prints its address");
    Viewer { child, url }
}

/// The page at `query` as RGB pixels of the canvas.
fn screenshot(browser: &Path, url: &str, out: &Path) -> Vec<u8> {
    let status = Command::new(browser)
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--use-angle=swiftshader",
            "--enable-unsafe-swiftshader",
            "--hide-scrollbars",
            "--window-size=800,600",
            "--virtual-time-budget=4000",
        ])
        .arg(format!("--screenshot={}", out.display()))
        .arg(url)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("running chromium");
    assert!(status.success(), "chromium failed on {url}");
    let decoder = png::Decoder::new(std::fs::File::open(out).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert!(info.width >= CANVAS.0 && info.height >= CANVAS.1);
    let channels = info.color_type.samples();
    let mut rgb = Vec::with_capacity((CANVAS.0 * CANVAS.1 * 3) as usize);
    for y in 0..CANVAS.1 {
        for x in 0..CANVAS.0 {
            let i = (y as usize * info.width as usize + x as usize) * channels;
            rgb.extend_from_slice(&buf[i..i + 3]);
        }
    }
    rgb
}

/// The colour the page gives a block's top face (viewer.js: the colour table
/// times the top face's light).
fn top_colour(block: u8) -> [f64; 3] {
    let base = match block {
        1 => [0.25, 0.25, 0.25],
        2 => [0.47, 0.33, 0.2],
        3 => [0.5, 0.5, 0.5],
        4 => [0.75, 0.9, 0.95],
        5 => [0.4, 0.28, 0.15],
        6 => [0.75, 0.6, 0.35],
        7 => [0.6, 0.6, 0.6],
        8 => [0.45, 0.45, 0.5],
        9 => [0.95, 0.95, 0.95],
        _ => panic!("no colour for {block}"),
    };
    let light = 0.55 + 0.45 / (0.4f64 * 0.4 + 1.0 + 0.3 * 0.3).sqrt();
    base.map(|c| c * light * 255.0)
}

/// Per column (x, z), the top block after `steps` steps, unless a player
/// stands over it (drawn on top) or it is glass (see-through).
fn top_blocks(scene: &Scene, steps: usize) -> Vec<((usize, usize), u8)> {
    let [w, h, d] = scene.size;
    let blocks = scene.blocks_at(steps);
    let pos = if steps == 0 {
        &scene.initial_pos
    } else {
        &scene.frames[steps - 1].pos
    };
    let mut out = Vec::new();
    for x in 0..w {
        for z in 0..d {
            let near_player = pos.iter().any(|p| {
                (p[0] - (x as f64 + 0.5)).abs() < 1.0 && (p[2] - (z as f64 + 0.5)).abs() < 1.0
            });
            let top = (0..h)
                .rev()
                .map(|y| blocks[(x * h + y) * d + z])
                .find(|&b| b != 0);
            if let Some(b) = top.filter(|&b| b != 4 && !near_player) {
                out.push(((x, z), b));
            }
        }
    }
    out
}

fn pixel(rgb: &[u8], scene: &Scene, (x, z): (usize, usize)) -> [f64; 3] {
    let side = scene.size[0].max(scene.size[2]) as f64;
    let px = ((x as f64 + 0.5) / side * f64::from(CANVAS.0)) as usize;
    let py = ((z as f64 + 0.5) / side * f64::from(CANVAS.1)) as usize;
    let i = (py * CANVAS.0 as usize + px) * 3;
    [rgb[i], rgb[i + 1], rgb[i + 2]].map(f64::from)
}

fn matches(got: [f64; 3], want: [f64; 3]) -> bool {
    got.iter().zip(want).all(|(g, w)| (g - w).abs() <= 6.0)
}

#[test]
fn the_served_page_draws_the_world_and_scrubbing_redraws_it() {
    let Some(browser) = chromium() else {
        eprintln!("SKIPPED: chromium not found; scripts/setup installs Debian's chromium");
        return;
    };
    let scene = Scene::of_recording(&Recording::read(Path::new(SAMPLE)).unwrap()).unwrap();
    let end = scene.frames.len();
    let viewer = serve(SAMPLE);
    let dir = tempfile::tempdir().unwrap();
    let shot = |steps: usize| {
        screenshot(
            &browser,
            &format!("{}?camera=top&bare=1&step={steps}", viewer.url),
            &dir.path().join(format!("step{steps}.png")),
        )
    };
    let (first, last) = (shot(0), shot(end));
    for (steps, rgb) in [(0, &first), (end, &last)] {
        let columns = top_blocks(&scene, steps);
        assert!(columns.len() >= 10, "{} columns to check", columns.len());
        let wrong: Vec<String> = columns
            .iter()
            .filter(|&&(cell, b)| !matches(pixel(rgb, &scene, cell), top_colour(b)))
            .map(|&(cell, b)| {
                format!(
                    "{cell:?}: block {b} wants {:?}, drawn {:?}",
                    top_colour(b),
                    pixel(rgb, &scene, cell)
                )
            })
            .collect();
        assert!(wrong.is_empty(), "step {steps}: {}", wrong.join("; "));
    }
    // Scrubbing to the end drew the built house: columns whose top changed
    // look different.
    let before: std::collections::HashMap<_, _> = top_blocks(&scene, 0).into_iter().collect();
    let changed: Vec<_> = top_blocks(&scene, end)
        .into_iter()
        .filter(|(cell, b)| before.get(cell).is_some_and(|was| was != b))
        .collect();
    assert!(!changed.is_empty(), "the sample builds nothing visible");
    for (cell, _) in changed {
        assert_ne!(pixel(&first, &scene, cell), pixel(&last, &scene, cell));
    }
}

#[test]
fn the_viewer_answers_only_what_it_serves() {
    let viewer = serve(SAMPLE);
    let get = |path: &str| {
        let addr = viewer
            .url
            .trim_start_matches("http://")
            .trim_end_matches('/');
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        use std::io::{Read, Write};
        write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        text
    };
    assert!(get("/").starts_with("HTTP/1.1 200"));
    assert!(get("/viewer.js").contains("WebGL"));
    let scene = get("/scene.json");
    assert!(
        scene.contains("\"episode_id\":\"simulated_seed3\""),
        "{scene}"
    );
    assert!(get("/../../etc/passwd").starts_with("HTTP/1.1 404"));
    // A peer that connects and says nothing costs only its own connection.
    let addr = viewer
        .url
        .trim_start_matches("http://")
        .trim_end_matches('/');
    let _silent = std::net::TcpStream::connect(addr).unwrap();
    assert!(get("/").starts_with("HTTP/1.1 200"));
}

#[test]
fn recorded_plans_show_beside_the_world() {
    let Some(browser) = chromium() else {
        eprintln!("SKIPPED: chromium not found; scripts/setup installs Debian's chromium");
        return;
    };
    // The sample with an assistant's account of its move at step 6.
    let text = std::fs::read_to_string(SAMPLE).unwrap();
    let mut lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let step = lines
        .iter_mut()
        .find(|l| l["kind"] == "step" && l["t"] == 5)
        .unwrap();
    step["explain"] = serde_json::json!([null, {
        "top": [[1, 2, 2, 2, 6, 12, 450], [2, 3, 1, 3, 0, 5, 200]],
        "other_next": [1, 1, 2, 1, 3],
    }]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("explained.jsonl");
    let body: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    std::fs::write(&path, body.join("\n") + "\n").unwrap();
    let viewer = serve(path.to_str().unwrap());
    let dom = |steps: usize| {
        let out = Command::new(&browser)
            .args([
                "--headless=new",
                "--no-sandbox",
                "--use-angle=swiftshader",
                "--enable-unsafe-swiftshader",
                "--virtual-time-budget=4000",
                "--dump-dom",
            ])
            .arg(format!("{}?step={steps}", viewer.url))
            .stderr(Stdio::null())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let at = dom(6);
    assert!(
        at.contains("place planks at (2, 2, 2): 12 visits, p 0.45"),
        "{at}"
    );
    assert!(at.contains("expects the other player to place cobblestone at (1, 2, 1)"));
    assert!(dom(7).contains("none recorded at this step"));
}
