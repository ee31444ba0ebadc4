//! `mbag rate`: a rating driven through headless Chromium over the DevTools
//! protocol and read back from SQLite, across a killed and restarted server
//! (nothing lost, nothing doubled); the server's checks over plain HTTP; and
//! the leaderboard ranking a strong agent above a weak one. Without Chromium
//! (scripts/setup installs Debian's) the browser test prints SKIPPED.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use mbag::rate::answer::{Answer, AnswerForm, Choice, Rater, Verdict};
use mbag::rate::db::Db;
use mbag::rate::episode::EpisodeInfo;
use serde_json::{Value, json};

fn mbag(args: &[&str]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_mbag"))
        .args(args)
        .output()
        .expect("running mbag");
    assert!(
        out.status.success(),
        "mbag {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Three episodes of the tutorial house with different assistants, paired.
pub fn rated_folder(dir: &Path, pairs: usize) -> (PathBuf, PathBuf) {
    let recordings = dir.join("recordings");
    std::fs::create_dir_all(&recordings).unwrap();
    for assistant in ["lowest_block", "random", "noop"] {
        let out = recordings.join(format!("{assistant}.jsonl"));
        mbag(&[
            "recording",
            "simulate",
            "--out",
            out.to_str().unwrap(),
            "--agents",
            &format!("heuristic:lowest_block,heuristic:{assistant}"),
            "--seed",
            "3",
            "--steps",
            "30",
        ]);
    }
    let db = dir.join("ratings.sqlite");
    let out = mbag(&[
        "rate",
        "pairs",
        "--recordings",
        recordings.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
        "--count",
        &pairs.to_string(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("added {pairs} comparisons")),
        "{text}"
    );
    (recordings, db)
}

/// A running `mbag rate serve`; killed (as `kill -9` would) on drop.
pub struct Server {
    child: Child,
    pub addr: String,
    /// The page's session token (`GET /session`), sent with each post.
    pub token: String,
}

impl Server {
    pub fn start(db: &Path, recordings: &Path, listen: &str) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mbag"))
            .args(["rate", "serve", "--db"])
            .arg(db)
            .arg("--recordings")
            .arg(recordings)
            .args(["--listen", listen])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting mbag rate serve");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let addr = lines
            .by_ref()
            .map_while(Result::ok)
            .find_map(|l| {
                l.strip_prefix("rating at http://")
                    .map(|rest| rest.split('/').next().unwrap().to_owned())
            })
            .expect("mbag rate serve prints its address");
        let mut server = Self {
            child,
            addr,
            token: String::new(),
        };
        let (status, body) = server.request("GET", "/session", &[], "");
        assert_eq!(status, 200, "{body}");
        let session: Value = serde_json::from_str(&body).unwrap();
        server.token = session["token"].as_str().unwrap().to_owned();
        server
    }

    fn kill(mut self) -> String {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        self.addr.clone()
    }

    /// One HTTP request; the status code and the body.
    pub fn request(&self, method: &str, path: &str, headers: &[&str], body: &str) -> (u16, String) {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nhost: {}\r\ncontent-length: {}\r\n",
            self.addr,
            body.len()
        );
        for h in headers {
            head.push_str(h);
            head.push_str("\r\n");
        }
        write!(stream, "{head}\r\n{body}").unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        let status = text[9..12].parse().unwrap();
        let body = text.split_once("\r\n\r\n").unwrap().1.to_owned();
        (status, body)
    }

    pub fn post_json(&self, path: &str, value: &Value) -> (u16, String) {
        let token = format!("x-mbag-token: {}", self.token);
        self.request(
            "POST",
            path,
            &["content-type: application/json", &token],
            &value.to_string(),
        )
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

use super::browser::{Browser, Cdp, chromium};

/// Fills in the rating form as a person would: clicks each choice, types the
/// justification into the text box, presses Submit.
fn answer(page: &mut Cdp, choices: &[(&str, &str)], justification: &str) {
    for (name, value) in choices {
        let selector = format!("input[name=\"{name}\"][value=\"{value}\"]");
        page.click(&selector);
        let checked = page.eval(&format!(
            "document.querySelector({}).checked",
            json!(selector)
        ));
        assert_eq!(checked, json!(true), "{name}={value}");
    }
    page.type_into("#justification", justification);
    page.click("#submit");
}

/// The answers table as SQLite holds it.
pub fn stored(db: &Path) -> Vec<(i64, String, String, String, String, f64)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT comparison, rater, overall, human_like, justification, seconds
             FROM answers ORDER BY id",
        )
        .unwrap();
    stmt.query_map([], |row| {
        Ok((
            row.get(0)?,
            row.get(1)?,
            row.get(2)?,
            row.get(3)?,
            row.get(4)?,
            row.get(5)?,
        ))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

const FIRST: &str = "The left assistant placed the walls in the right order and never broke a \
                     block that was already correct; the right one wandered about.";
const SECOND: &str = "Both assistants built about the same amount of the house, but the right \
                      one got in the person's way twice, so I call it a draw overall here.";

#[test]
fn a_rating_in_chromium_survives_a_killed_server_without_loss_or_doubling() {
    let Some(path) = chromium() else {
        eprintln!("SKIPPED: chromium not found; scripts/setup installs Debian's chromium");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (recordings, db) = rated_folder(dir.path(), 3);
    let server = Server::start(&db, &recordings, "127.0.0.1:0");
    let browser = Browser::launch(&path);
    let mut page = browser.new_page();
    page.navigate(&format!("http://{}/?rater=tester", server.addr));
    page.wait_for("document.body.dataset.state === 'ready'");
    let first: i64 = page
        .eval("Number(document.body.dataset.comparison)")
        .as_i64()
        .unwrap();
    // Both sides are mbag view pages of the pair's episodes.
    page.wait_for(
        "['left', 'right'].every(s => { const d = document.getElementById(s).contentDocument; \
         return d && d.body && d.body.dataset.drawnStep === '0'; })",
    );

    // The page refuses an incomplete form itself.
    page.click("#submit");
    page.wait_for("document.body.dataset.state === 'invalid'");

    answer(
        &mut page,
        &[
            ("overall", "left"),
            ("built_more", "left"),
            ("broke_fewer", "left"),
            ("helped_more", "draw"),
            ("human_like", "na"),
        ],
        FIRST,
    );
    page.wait_for("window.mbagSent.length === 1 && document.body.dataset.state === 'ready'");
    let rows = stored(&db);
    assert_eq!(rows.len(), 1, "{rows:?}");
    let (comparison, rater, overall, human_like, text, seconds) = rows[0].clone();
    assert_eq!(
        (
            comparison,
            rater.as_str(),
            overall.as_str(),
            human_like.as_str()
        ),
        (first, "tester", "left", "na")
    );
    assert_eq!(text, FIRST);
    assert!(seconds > 0.0 && seconds < 120.0, "answered in {seconds} s");
    let second: i64 = page
        .eval("Number(document.body.dataset.comparison)")
        .as_i64()
        .unwrap();
    assert_ne!(second, first);

    // The server dies mid-session; the next answer cannot be sent.
    let addr = server.kill();
    answer(
        &mut page,
        &[
            ("overall", "draw"),
            ("built_more", "draw"),
            ("broke_fewer", "left"),
            ("helped_more", "left"),
            ("human_like", "right"),
        ],
        SECOND,
    );
    page.wait_for("document.body.dataset.state === 'unsent'");
    assert_eq!(stored(&db).len(), 1);

    // Restarted on the same address, it takes the kept answer.
    let server = Server::start(&db, &recordings, &addr);
    page.wait_for("window.mbagSent.length === 2 && document.body.dataset.state === 'ready'");
    let rows = stored(&db);
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(
        (rows[1].0, rows[1].2.as_str(), rows[1].3.as_str()),
        (second, "draw", "right")
    );
    assert_eq!(rows[1].4, SECOND);

    // The first answer sent again (a retry whose reply was lost) is not
    // stored twice, and the page is told it was saved already.
    page.eval(
        "localStorage.setItem('mbag-rate-unsent', JSON.stringify(window.mbagSent[0])); \
         location.reload(); true",
    );
    page.wait_for(
        "document.body && document.body.dataset.state === 'ready' && \
         document.getElementById('message').textContent.includes('already')",
    );
    assert_eq!(stored(&db), rows);
    drop(server);
}

#[test]
fn the_rating_server_checks_every_answer_itself() {
    let dir = tempfile::tempdir().unwrap();
    let (recordings, db) = rated_folder(dir.path(), 2);
    let server = Server::start(&db, &recordings, "127.0.0.1:0");
    let (status, body) = server.post_json("/next", &json!({ "rater": "http-rater" }));
    assert_eq!(status, 200, "{body}");
    let next: Value = serde_json::from_str(&body).unwrap();
    let comparison = next["comparison"].as_i64().unwrap();
    let left = next["left"].as_str().unwrap();
    let (status, scene) = server.request("GET", &format!("{left}scene.json"), &[], "");
    assert_eq!(status, 200);
    // Who played is hidden from the rater.
    assert!(!scene.contains("heuristic:"), "{}", &scene[..200]);
    assert!(scene.contains("\"controller\":\"hidden\""));

    let form = |justification: String| {
        json!({
            "comparison": comparison, "rater": "http-rater", "overall": "right",
            "built_more": "right", "broke_fewer": "draw", "helped_more": "right",
            "human_like": "left", "justification": justification,
        })
    };
    // 99 characters: refused by the server, whatever the page checked.
    let (status, body) = server.post_json("/answer", &form("x".repeat(99)));
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("at least 100"), "{body}");
    assert!(stored(&db).is_empty());
    // Not JSON, or from another site's page: refused.
    let plain = form("y".repeat(120)).to_string();
    let token = format!("x-mbag-token: {}", server.token);
    assert_eq!(
        server
            .request(
                "POST",
                "/answer",
                &["content-type: text/plain", &token],
                &plain
            )
            .0,
        415
    );
    let foreign = [
        "content-type: application/json",
        "origin: http://example.com",
        &token,
    ];
    assert_eq!(server.request("POST", "/answer", &foreign, &plain).0, 403);
    let tokenless = ["content-type: application/json"];
    assert_eq!(server.request("POST", "/answer", &tokenless, &plain).0, 403);
    // Stored once, however often it is sent; a changed answer is refused.
    let (status, body) = server.post_json("/answer", &form("y".repeat(120)));
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"new\""), "{body}");
    let (status, body) = server.post_json("/answer", &form("y".repeat(120)));
    assert_eq!(
        (status, body.contains("\"already\"")),
        (200, true),
        "{body}"
    );
    let mut changed = form("y".repeat(120));
    changed["overall"] = json!("left");
    assert_eq!(server.post_json("/answer", &changed).0, 409);
    let rows = stored(&db);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].2, "right");
    // Unknown comparisons and paths.
    let mut unknown = form("y".repeat(120));
    unknown["comparison"] = json!(999);
    assert_eq!(server.post_json("/answer", &unknown).0, 404);
    assert_eq!(
        server.request("GET", "/episode/999/scene.json", &[], "").0,
        404
    );
    assert_eq!(server.request("GET", "/../../etc/passwd", &[], "").0, 404);
    assert_eq!(server.request("DELETE", "/answer", &[], "").0, 405);
}

#[test]
fn the_leaderboard_ranks_a_strong_agent_above_a_weak_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ratings.sqlite");
    let mut db = Db::open(&path).unwrap();
    let episode = |name: &str, agent: &str| EpisodeInfo {
        path: format!("{name}.jsonl"),
        episode_id: name.to_owned(),
        agent: agent.to_owned(),
        goal: "house".to_owned(),
    };
    let ids = db
        .upsert_episodes(&[
            episode("s", "az:strong.json"),
            episode("w", "heuristic:random"),
            episode("u", "oracle"),
        ])
        .unwrap();
    let (strong, weak) = (ids[0], ids[1]);
    // 60 comparisons, sides alternating; the strong agent wins 4 in 5.
    let pairs: Vec<(i64, i64)> = (0..60)
        .map(|i| {
            if i % 2 == 0 {
                (strong, weak)
            } else {
                (weak, strong)
            }
        })
        .collect();
    let comparisons = db.add_comparisons(&pairs, 0.0).unwrap();
    let left_of: std::collections::HashMap<i64, i64> = comparisons
        .iter()
        .zip(&pairs)
        .map(|(&c, &(left, _))| (c, left))
        .collect();
    for i in 0..pairs.len() {
        // Answers are taken only for pairs the rater was shown; shown 1,000 s
        // apart, past the claim, each rater gets the oldest pair left.
        let rater = format!("rater{}", i % 3);
        let now = i as f64 * 1000.0;
        let shown = db
            .next_for(&Rater::new(&rater).unwrap(), now)
            .unwrap()
            .expect("a pair left");
        let (c, left) = (shown.comparison, left_of[&shown.comparison]);
        let strong_won = i % 5 != 4;
        let overall = match (strong_won, left == strong) {
            (true, true) | (false, false) => Verdict::Left,
            _ => Verdict::Right,
        };
        let answer = Answer::try_from(AnswerForm {
            comparison: c,
            rater,
            overall,
            built_more: Choice::Draw,
            broke_fewer: Choice::NotApplicable,
            helped_more: Choice::Left,
            human_like: Choice::Right,
            justification: format!("{i}: {}", "the house went up faster ".repeat(5)),
        })
        .unwrap();
        db.save_answer(&answer, now + 1.0).unwrap();
    }
    drop(db);
    let json_path = dir.path().join("board.json");
    let out = mbag(&[
        "rate",
        "leaderboard",
        "--db",
        path.to_str().unwrap(),
        "--json",
        json_path.to_str().unwrap(),
    ]);
    let table = String::from_utf8_lossy(&out.stdout);
    let board: Value = serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    assert_eq!(board["format"], "mbag-rate-leaderboard/1");
    assert_eq!(board["answers"], 60);
    assert_eq!(board["raters"], 3);
    let players = board["players"].as_array().unwrap();
    let find = |agent: &str| players.iter().find(|p| p["agent"] == agent).unwrap();
    let (s, w) = (find("az:strong.json"), find("heuristic:random"));
    assert!(
        s["mu"].as_f64().unwrap() > w["mu"].as_f64().unwrap(),
        "{board}"
    );
    assert!(s["conservative"].as_f64().unwrap() > w["conservative"].as_f64().unwrap());
    assert_eq!(
        (s["wins"].as_u64(), s["losses"].as_u64()),
        (Some(48), Some(12))
    );
    assert_eq!(players[0]["agent"], "az:strong.json", "{board}");
    assert_eq!(players[0]["rank"], 1);
    // Sorted by mu - 3 sigma: the unjudged agent (sigma 8.33) comes last.
    let conservative: Vec<f64> = players
        .iter()
        .map(|p| p["conservative"].as_f64().unwrap())
        .collect();
    assert!(
        conservative.windows(2).all(|w| w[0] >= w[1]),
        "{conservative:?}"
    );
    assert_eq!(players.last().unwrap()["agent"], "oracle");
    // The printed table has the same order.
    let at = |name: &str| {
        table
            .find(name)
            .unwrap_or_else(|| panic!("{name} in {table}"))
    };
    assert!(at("az:strong.json") < at("heuristic:random"), "{table}");
    assert!(table.contains("mu-3sigma"), "{table}");
}

/// The README's rating flow: two assistants evaluated on the same seeds with
/// `--record`, then `rate pairs` over both folders, pairs each goal's two
/// episodes.
#[test]
fn evaluated_episodes_of_two_assistants_make_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let recordings = dir.path().join("rate");
    for (name, assistant) in [("alone", "none"), ("oracle", "oracle")] {
        mbag(&[
            "evaluate",
            "--human",
            "heuristic:lowest_block",
            "--assistant",
            assistant,
            "--goals",
            "held_out",
            "--episodes",
            "3",
            "--horizon",
            "40",
            "--seed",
            "7",
            "--record",
            recordings.join(name).to_str().unwrap(),
        ]);
    }
    let db = dir.path().join("ratings.sqlite");
    let out = mbag(&[
        "rate",
        "pairs",
        "--recordings",
        recordings.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
        "--count",
        "6",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("added 3 comparisons"), "{text}");
    assert!(
        text.contains("none vs oracle") || text.contains("oracle vs none"),
        "{text}"
    );
}
