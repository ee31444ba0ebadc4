//! `mbag study` end to end on a tiny study with emulated participants: init
//! (a balanced, blinded design), every session run through the daemon in the
//! emulator (one crashed and run again; every recording's header naming its
//! study session), surveys filled through the survey server (one
//! participant's on the page in headless Chromium, clicked and typed through
//! the DevTools protocol, when Chromium is there; the rest by HTTP), the
//! stored answers read back, and the report's tables, statistics and plots
//! checked against the recordings and the answers given.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use mbag::recording::Recording;
use mbag::recording::stats::EpisodeStats;
use serde_json::{Value, json};

fn mbag(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mbag"))
        .args(args)
        .output()
        .expect("running mbag")
}

fn ok(args: &[&str]) -> String {
    let out = mbag(args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "mbag {args:?}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// A running `mbag study survey`; killed on drop.
struct Survey {
    child: Child,
    addr: String,
}

impl Drop for Survey {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(dir: &Path, participant: &str) -> Survey {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mbag"))
        .args(["study", "survey"])
        .arg(dir)
        .args(["--participant", participant, "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("starting mbag study survey");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let addr = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| {
            l.split_once(" at http://")
                .map(|(_, rest)| rest.split('/').next().unwrap().to_owned())
        })
        .expect("the survey prints its address");
    Survey { child, addr }
}

/// One HTTP request; the status code and the body. A POST carries the
/// page's session token, read first from `GET /session` as the page does.
fn http(addr: &str, method: &str, path: &str, kind: &str, body: &str) -> (u16, String) {
    let mut extra = String::new();
    if method == "POST" {
        let (status, session) = raw_http(addr, "GET", "/session", "", "");
        assert_eq!(status, 200, "{session}");
        let session: Value = serde_json::from_str(&session).unwrap();
        extra = format!("x-mbag-token: {}\r\n", session["token"].as_str().unwrap());
    }
    raw_http(
        addr,
        method,
        path,
        &format!("{extra}content-type: {kind}\r\n"),
        body,
    )
}

/// One HTTP request with `headers` (each ending in CRLF) besides `Host` and
/// the length; the status code and the body.
pub fn raw_http(addr: &str, method: &str, path: &str, headers: &str, body: &str) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let status = text[9..12].parse().unwrap();
    let body = text.split_once("\r\n\r\n").unwrap().1.to_owned();
    (status, body)
}

use super::browser::{Browser, Cdp, chromium};

/// Answers one session's form on the survey page as a person would: clicks
/// each statement's point, types the comment, presses Save, and waits until
/// the page says it was saved.
fn answer_on_page(page: &mut Cdp, index: u64, scores: &BTreeMap<String, u8>, comment: &str) {
    let form = format!("#session-{index}");
    for (item, v) in scores {
        let radio = format!("{form} input[name=\"{item}\"][value=\"{v}\"]");
        page.click(&radio);
        let checked = page.eval(&format!("document.querySelector({}).checked", json!(radio)));
        assert_eq!(checked, json!(true), "session {index}: {item}={v}");
    }
    page.type_into(&format!("{form} textarea"), comment);
    page.click(&format!("{form} button[type=submit]"));
    page.wait_for(&format!(
        "document.body.dataset.saved === '{index}' && \
         !document.querySelector('{form} button').disabled"
    ));
}

/// The points a participant gives: by assistant, shifted per participant so
/// that the differences between conditions vary.
fn points(assistant: &str, participant: usize) -> u8 {
    let base: u8 = match assistant {
        "oracle" => 6,
        "heuristic:random" => 3,
        _ => 2,
    };
    base + u8::from(participant % 2 == 1) - u8::from(participant == 2 && assistant == "oracle")
}

fn is_non_blank_png(path: &Path) -> bool {
    let decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let pixels = buf[..info.buffer_size()].chunks(channels);
    let total = (info.width * info.height) as usize;
    let mut colours = std::collections::HashSet::new();
    let mut not_white = 0;
    for p in pixels {
        colours.insert(p[..3].to_vec());
        if p[..3] != [255, 255, 255] {
            not_white += 1;
        }
    }
    colours.len() > 5 && not_white * 100 > total
}

#[test]
fn a_simulated_study_runs_surveys_and_reports() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("study");
    let d = dir.to_str().unwrap();
    // A scripted assistant that cannot walk is refused before anyone plays.
    let refused = mbag(&[
        "study",
        "init",
        d,
        "--participants",
        "2",
        "--goals",
        "random",
        "--conditions",
        "none",
        "heuristic:lowest_block",
    ]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("cannot assist"));
    assert!(!dir.join("study.json").exists());

    let init = ok(&[
        "study",
        "init",
        d,
        "--participants",
        "4",
        "--goals",
        "random",
        "--conditions",
        "none",
        "oracle",
        "heuristic:random",
        "--max-steps",
        "6",
        "--step-period",
        "0.05",
        "--seed",
        "2",
    ]);
    assert!(
        init.contains("Assistant A") && init.contains("p04"),
        "{init}"
    );
    let study: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("study.json")).unwrap()).unwrap();
    let conditions: Vec<(String, String)> = study["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["label"].as_str().unwrap().to_owned(),
                c["assistant"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let assistant_of = |label: &str| {
        conditions
            .iter()
            .find(|c| c.0 == label)
            .map(|c| c.1.clone())
            .unwrap()
    };
    // Every order is a permutation, and the first positions differ.
    let orders: Vec<Vec<u64>> = study["participants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            p["order"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
                .collect()
        })
        .collect();
    let firsts: std::collections::HashSet<u64> = orders.iter().map(|o| o[0]).collect();
    assert_eq!(firsts.len(), 3, "{orders:?}");
    // Re-initialising would change the blinding: refused.
    assert!(
        !mbag(&[
            "study",
            "init",
            d,
            "--participants",
            "4",
            "--conditions",
            "none"
        ])
        .status
        .success()
    );

    let ids = ["p01", "p02", "p03", "p04"];
    for id in ids {
        for _ in 0..4 {
            ok(&["study", "next", d, "--participant", id, "--emulated", "-q"]);
        }
    }
    // Past the end: refused.
    let past = mbag(&[
        "study",
        "next",
        d,
        "--participant",
        "p01",
        "--emulated",
        "-q",
    ]);
    assert!(!past.status.success());
    assert!(String::from_utf8_lossy(&past.stderr).contains("completed all 4 sessions"));

    // Each recording's header says which study session it was recorded for.
    let origin = |participant: &str, index: usize| -> (Value, Value) {
        let sidecar = dir
            .join("participants")
            .join(participant)
            .join(format!("session-{index:02}.json"));
        let record: Value =
            serde_json::from_str(&std::fs::read_to_string(sidecar).unwrap()).unwrap();
        let path = dir
            .join("participants")
            .join(participant)
            .join(record["recording"].as_str().unwrap());
        let header = Recording::read(&path).unwrap().header;
        (header.source.origin.expect("an origin"), record)
    };
    for id in ids {
        for index in 0..4 {
            let (o, record) = origin(id, index);
            let label = record["label"].as_str().unwrap();
            assert_eq!(o["study"]["folder"], "study", "{o}");
            assert_eq!(o["study"]["created"], study["created"]);
            assert_eq!(o["study"]["seed"], 2);
            assert_eq!(o["participant"], id);
            assert_eq!(
                (o["session"].as_u64(), o["sessions"].as_u64()),
                (Some(index as u64), Some(4))
            );
            assert_eq!(o["attempt"], 1);
            assert_eq!(o["label"], label);
            assert!(o["seed"].is_u64(), "the daemon's seed is kept: {o}");
            if index == 0 {
                assert_eq!(
                    (o["condition"].as_str(), label),
                    (Some("practice"), "Practice")
                );
                assert!(o["condition_index"].is_null());
            } else {
                assert_eq!(o["condition"].as_str().unwrap(), assistant_of(label), "{o}");
                let c = o["condition_index"].as_u64().unwrap() as usize;
                assert_eq!(conditions[c].0, label);
            }
        }
    }

    // A crash in p04's last session: the recording loses its footer and the
    // sidecar still says running. `next` runs that session again and keeps
    // the cut recording as an attempt.
    let p4 = dir.join("participants/p04");
    let sidecar = p4.join("session-03.json");
    let mut record: Value =
        serde_json::from_str(&std::fs::read_to_string(&sidecar).unwrap()).unwrap();
    let recording = p4.join(record["recording"].as_str().unwrap());
    let text = std::fs::read_to_string(&recording).unwrap();
    let cut: Vec<&str> = text.lines().collect();
    std::fs::write(&recording, cut[..cut.len() - 1].join("\n") + "\n").unwrap();
    record["status"] = json!("running");
    std::fs::write(&sidecar, record.to_string()).unwrap();
    let rerun = ok(&[
        "study",
        "next",
        d,
        "--participant",
        "p04",
        "--emulated",
        "-q",
    ]);
    assert!(
        rerun.contains("session 4 of 4") && rerun.contains("run again"),
        "{rerun}"
    );
    let record: Value = serde_json::from_str(&std::fs::read_to_string(&sidecar).unwrap()).unwrap();
    assert_eq!(record["status"], "complete");
    let attempt = record["attempts"][0]["recording"].as_str().unwrap();
    assert!(p4.join(attempt).exists() && attempt.contains("attempt1"));
    assert!(Recording::read(&recording).unwrap().footer.is_some());
    assert_eq!(origin("p04", 3).0["attempt"], 2, "the second try says so");

    // Surveys: each participant rates their three sessions (1-3) by blinded
    // name; the first on the page in Chromium (when there is one), the others
    // by HTTP.
    let browser = chromium().map(|path| Browser::launch(&path));
    let mut given: BTreeMap<(String, String), BTreeMap<String, u8>> = BTreeMap::new();
    for (pi, id) in ids.iter().enumerate() {
        let survey = serve(&dir, id);
        let mut page = match (&browser, pi) {
            (Some(browser), 0) => {
                let mut page = browser.new_page();
                page.navigate(&format!("http://{}/", survey.addr));
                page.wait_for("document.body.dataset.loaded === '3'");
                Some(page)
            }
            _ => None,
        };
        let (status, overview) = http(&survey.addr, "GET", "/survey.json", "text/plain", "");
        assert_eq!(status, 200, "{overview}");
        // Blinded: the page's data never names an assistant.
        assert!(
            !overview.contains("oracle") && !overview.contains("heuristic"),
            "{overview}"
        );
        let overview: Value = serde_json::from_str(&overview).unwrap();
        let sessions = overview["sessions"].as_array().unwrap();
        assert_eq!(sessions.len(), 3, "the practice is not rated");
        let items: Vec<String> = overview["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_str().unwrap().to_owned())
            .collect();
        for s in sessions {
            let index = s["index"].as_u64().unwrap();
            let label = s["label"].as_str().unwrap();
            let assistant = assistant_of(label);
            let p = points(&assistant, pi);
            let scores: BTreeMap<String, u8> = items
                .iter()
                .enumerate()
                .map(|(j, item)| (item.clone(), (p + j as u8 % 2).min(7)))
                .collect();
            if let Some(page) = &mut page {
                answer_on_page(page, index, &scores, &format!("page {label}"));
            } else {
                let body =
                    json!({"session": index, "scores": scores, "comment": format!("http {label}")});
                let (status, reply) = http(
                    &survey.addr,
                    "POST",
                    "/answer",
                    "application/json",
                    &body.to_string(),
                );
                assert_eq!(status, 200, "{reply}");
            }
            given.insert((id.to_string(), assistant), scores);
        }
        // Bad answers are refused with a reason and not stored.
        let bad = json!({"session": 1, "scores": {"helpful": 9}, "comment": ""});
        let (status, reply) = http(
            &survey.addr,
            "POST",
            "/answer",
            "application/json",
            &bad.to_string(),
        );
        assert_eq!(status, 400, "{reply}");
        let (status, _) = http(
            &survey.addr,
            "POST",
            "/answer",
            "text/plain",
            &bad.to_string(),
        );
        assert_eq!(status, 415);
        let practice =
            json!({"session": 0, "scores": given.values().next().unwrap(), "comment": ""});
        let (status, reply) = http(
            &survey.addr,
            "POST",
            "/answer",
            "application/json",
            &practice.to_string(),
        );
        assert_eq!(status, 400, "the practice is not rated: {reply}");
        let lines = std::fs::read_to_string(dir.join("participants").join(id).join("survey.jsonl"))
            .unwrap();
        assert_eq!(lines.lines().count(), 3, "{lines}");
        // Stored as given, whichever way they were sent.
        let how = if page.is_some() { "page" } else { "http" };
        for line in lines.lines() {
            let stored: Value = serde_json::from_str(line).unwrap();
            let label = stored["label"].as_str().unwrap();
            let want = &given[&(id.to_string(), assistant_of(label))];
            assert_eq!(stored["scores"], json!(want), "{line}");
            assert_eq!(stored["comment"], format!("{how} {label}"), "{line}");
        }
        if browser.is_none() && pi == 0 {
            eprintln!("SKIPPED (browser part): chromium not found; answers sent by HTTP POST");
        }
    }

    let json_path = tmp.path().join("report.json");
    let plots = tmp.path().join("plots");
    let tables = ok(&[
        "study",
        "report",
        d,
        "--json",
        json_path.to_str().unwrap(),
        "--plots",
        plots.to_str().unwrap(),
    ]);
    for needle in [
        "## goal % built",
        "## human actions (place + break)",
        "## assistant's share of the goal (%)",
        "## survey: The assistant was helpful.",
        "90% interval",
        "paired t-tests (one-sided)",
        "repeated-measures ANOVA (4 participants): F(2, 6)",
        "Tukey HSD",
        "comments:",
    ] {
        assert!(tables.contains(needle), "no {needle:?} in\n{tables}");
    }
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    assert_eq!(report["complete_participants"], 4);
    let names: Vec<String> = report["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["assistant"].as_str().unwrap().to_owned())
        .collect();
    let sessions = report["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 12);
    // The objective measures are the recordings' own.
    for s in sessions {
        let rec = Recording::read(Path::new(s["recording"].as_str().unwrap())).unwrap();
        let stats = EpisodeStats::of(&rec);
        let goal = s["values"]["goal_pct"].as_f64().unwrap();
        assert!((goal - stats.goal_percentage.unwrap() * 100.0).abs() < 1e-9);
        let place_break = rec
            .steps
            .iter()
            .filter(|st| matches!(st.e[0].type_id(), 1 | 2))
            .count() as f64;
        assert_eq!(s["values"]["human_actions"].as_f64().unwrap(), place_break);
        if s["assistant"] == "none" {
            assert_eq!(s["values"]["assistant_pct"].as_f64().unwrap(), 0.0);
        }
    }
    let measure = |id: &str| {
        report["measures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["id"] == id)
            .unwrap()
            .clone()
    };
    // The survey's means and paired tests are those of the points given,
    // computed here by hand: mean, sd, t = mean/(sd/√n).
    let helpful = measure("survey_helpful");
    for (c, name) in names.iter().enumerate() {
        let values: Vec<f64> = ids
            .iter()
            .map(|id| f64::from(given[&(id.to_string(), name.clone())]["helpful"]))
            .collect();
        let mean = values.iter().sum::<f64>() / 4.0;
        let e = &helpful["conditions"][c];
        assert_eq!(e["n"], 4);
        assert!((e["mean"].as_f64().unwrap() - mean).abs() < 1e-12, "{e}");
    }
    for row in helpful["paired"].as_array().unwrap() {
        let (a, b) = (
            row["a"].as_u64().unwrap() as usize,
            row["b"].as_u64().unwrap() as usize,
        );
        let d: Vec<f64> = ids
            .iter()
            .map(|id| {
                let get =
                    |c: usize| f64::from(given[&(id.to_string(), names[c].clone())]["helpful"]);
                get(a) - get(b)
            })
            .collect();
        let mean = d.iter().sum::<f64>() / 4.0;
        let sd = (d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 3.0).sqrt();
        let test = &row["test"];
        assert!((test["mean_difference"].as_f64().unwrap() - mean).abs() < 1e-12);
        if sd > 0.0 {
            let t = mean / (sd / 2.0);
            assert!((test["t"].as_f64().unwrap() - t).abs() < 1e-9, "{row}");
            let p = test["p_greater"].as_f64().unwrap();
            assert!(p > 0.0 && p < 1.0 && (p < 0.5) == (t > 0.0), "{row}");
        }
    }
    let anova = &helpful["anova"];
    assert_eq!(
        (anova["df_conditions"].as_u64(), anova["df_error"].as_u64()),
        (Some(2), Some(6))
    );
    assert_eq!(helpful["tukey"].as_array().unwrap().len(), 3);
    // The oracle is rated above no assistant by every participant.
    let oracle = names.iter().position(|n| n == "oracle").unwrap();
    let none = names.iter().position(|n| n == "none").unwrap();
    let means: Vec<f64> = helpful["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["mean"].as_f64().unwrap())
        .collect();
    assert!(means[oracle] > means[none] + 2.0, "{means:?}");

    for id in [
        "goal_pct",
        "human_actions",
        "assistant_pct",
        "survey_helpful",
        "survey_again",
    ] {
        let png = plots.join(format!("{id}.png"));
        assert!(png.exists(), "no {}", png.display());
        assert!(is_non_blank_png(&png), "{} is blank", png.display());
    }
}
