//! A datasheet for a dataset of recordings, in Markdown: the questions of
//! "Datasheets for Datasets" (Gebru et al.) under the sections BEDD's appendix B
//! uses (Motivation, Composition, Collection process, Preprocessing, Uses,
//! Distribution, Maintenance).
//!
//! What the recordings can answer is filled in (counts, conditions,
//! participants, goals, dates, durations, models with their hashes, the
//! problems `validate` found as the errata); what only the people who collected
//! the data know is left as a prompt starting with [`TODO`], so a datasheet is
//! never silently incomplete.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use super::manifest::EpisodeEntry;
use super::stats::{DatasetTable, GroupBy};
use super::validate::{Problem, ValidateReport};
use crate::recording::codec::rfc3339_utc;
use crate::recording::header::{Controller, Role};

/// How every prompt left for a person starts.
pub const TODO: &str = "TODO (fill in by hand):";

/// The datasheet of the dataset `name` from a validation of it (its fresh
/// manifest and its problems).
pub fn render(name: &str, report: &ValidateReport) -> String {
    let episodes = &report.manifest.episodes;
    let mut md = String::new();
    let out = &mut md;
    line(out, &format!("# Datasheet: {name}"));
    line(out, "");
    line(
        out,
        "Written by `mbag dataset datasheet` from the recordings' headers, steps and footers and \
         from the checks of `mbag dataset validate`, following \"Datasheets for Datasets\" \
         (Gebru et al.) in the sections of BEDD's datasheet. Answers marked \
         `TODO (fill in by hand)` need the people who collected the data. Running the command \
         again rewrites the file: write it to another name (`--out`) once hand-written answers \
         are in, and copy the regenerated figures over.",
    );
    motivation(out);
    composition(out, report);
    collection(out, episodes);
    preprocessing(out, report);
    uses(out);
    distribution(out, episodes);
    maintenance(out, report);
    md
}

fn line(out: &mut String, text: &str) {
    out.push_str(text);
    out.push('\n');
}

fn section(out: &mut String, title: &str) {
    line(out, "");
    line(out, &format!("## {title}"));
}

/// A question and its answer, as BEDD's datasheet sets them.
fn qa(out: &mut String, question: &str, answer: &str) {
    line(out, "");
    line(out, &format!("**{question}**"));
    line(out, "");
    line(out, answer);
}

fn todo(what: &str) -> String {
    format!("{TODO} {what}")
}

fn motivation(out: &mut String) {
    section(out, "Motivation");
    qa(
        out,
        "For what purpose was the dataset created?",
        &todo(
            "the task or research question the episodes were recorded for, and the gap they fill.",
        ),
    );
    qa(
        out,
        "Who created the dataset, and on behalf of which entity?",
        &todo("the people and institutions."),
    );
    qa(
        out,
        "Who funded the creation of the dataset?",
        &todo("grants, sponsors, or none."),
    );
}

fn composition(out: &mut String, report: &ValidateReport) {
    let episodes = &report.manifest.episodes;
    section(out, "Composition");
    qa(
        out,
        "What do the instances that comprise the dataset represent?",
        "Each instance is one episode of the Minecraft Building Assistance Game in one file of \
         the `mbag-recording/1` format (`recordings/README.md`): the environment's configuration, \
         the goal house, the start state and the seats, then every step's actions (attempted \
         and effective), rewards and resulting state, then how the episode ended.",
    );
    let steps: u64 = episodes.iter().map(|e| e.steps).sum();
    let seconds: f64 = episodes.iter().filter_map(|e| e.duration_s).sum();
    let timed = episodes.iter().filter(|e| e.duration_s.is_some()).count();
    let bytes: u64 = episodes.iter().map(|e| e.bytes).sum();
    let mut answer = format!(
        "{} episodes in {} recording files ({} unreadable), {} steps, {:.2} hours of wall clock \
         ({} of the episodes carry step times), {} on disk.",
        episodes.len(),
        report.files,
        report.files - episodes.len(),
        steps,
        seconds / 3600.0,
        timed,
        size(bytes)
    );
    let sources = count_by(episodes, |e| format!("{:?}", e.source).to_lowercase());
    answer.push_str(&format!(" By source: {}.", listing(&sources)));
    qa(out, "How many instances are there in total?", &answer);
    line(out, "");
    line(
        out,
        "By condition (success: the goal was built; 95% Wilson interval; lengths over timed \
         episodes; actions per minute of place/break/move for each role; chat messages and \
         their accept/reject/inquiry/none flags):",
    );
    line(out, "");
    out.push_str(&DatasetTable::of(episodes, GroupBy::Condition).to_markdown());

    participants(out, episodes);
    goals(out, episodes);
    seats_and_models(out, episodes);

    let completed = episodes.iter().filter(|e| e.succeeded()).count();
    let chat = episodes
        .iter()
        .fold(super::manifest::ChatCounts::default(), |mut sum, e| {
            sum.add(&e.chat_total());
            sum
        });
    qa(
        out,
        "Is there a label or target associated with each instance?",
        &format!(
            "Every step records each player's attempted and effective action (the targets of \
             behaviour cloning) and reward; every footer records why the episode ended and \
             whether the goal was built ({completed} of {} episodes built it). Chat messages \
             carry the intent flag the recording program's parser gave them ({} messages: {} \
             accept, {} reject, {} inquiry, {} none).",
            episodes.len(),
            chat.total(),
            chat.accept,
            chat.reject,
            chat.inquiry,
            chat.none
        ),
    );
    let untimed = episodes.len() - timed;
    let unfinished = episodes
        .iter()
        .filter(|e| e.cut_line.is_some() || e.end == super::EpisodeEnd::Unfinished)
        .count();
    let unknown_goal = episodes
        .iter()
        .filter(|e| e.goal_completed.is_none())
        .count();
    qa(
        out,
        "Is any information missing from individual instances?",
        &format!(
            "{untimed} episodes have no step times, {unfinished} \
             have no footer (their writer stopped; see the errata), and for {unknown_goal} it is \
             unknown whether the goal was built. {}",
            todo("anything the recordings do not show (e.g. sessions that were not recorded).")
        ),
    );
    qa(
        out,
        "Are there recommended data splits (e.g., training, development/validation, testing)?",
        &todo("the split and why (e.g. by participant, so no person is in two splits)."),
    );
    qa(
        out,
        "Are there any errors, sources of noise, or redundancies in the dataset?",
        &format!(
            "{} See the errata under Maintenance for what `mbag dataset validate` found. {}",
            if report.problems.is_empty() {
                "The checks found none."
            } else {
                "The checks found some."
            },
            todo("episodes where the task was done wrongly or abandoned, found by watching them.")
        ),
    );
    qa(
        out,
        "Does the dataset contain data that might be considered confidential, or that identifies individuals?",
        &todo(
            "whether participant ids are pseudonyms, whether chat text can identify anyone, and who holds the key.",
        ),
    );
}

/// Counts of `key` over `episodes`, sorted by key.
fn count_by(
    episodes: &[EpisodeEntry],
    key: impl Fn(&EpisodeEntry) -> String,
) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for e in episodes {
        *out.entry(key(e)).or_insert(0) += 1;
    }
    out
}

/// `a: 3, b: 2` from counts.
fn listing(counts: &BTreeMap<String, usize>) -> String {
    if counts.is_empty() {
        return "none".into();
    }
    counts
        .iter()
        .map(|(k, n)| format!("{k}: {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn participants(out: &mut String, episodes: &[EpisodeEntry]) {
    let mut by: BTreeMap<&str, Vec<&EpisodeEntry>> = BTreeMap::new();
    for e in episodes {
        if let Some(p) = &e.participant {
            by.entry(p).or_default().push(e);
        }
    }
    let anonymous = episodes.iter().filter(|e| e.participant.is_none()).count();
    let mut answer = format!(
        "{} participants are named in the recordings' sources; {anonymous} episodes name none.",
        by.len()
    );
    if !by.is_empty() {
        answer.push_str("\n\n| participant | episodes | conditions | hours |\n|---|---|---|---|\n");
        // Numeric ids sort as numbers, others after them as text.
        let mut ids: Vec<&str> = by.keys().copied().collect();
        ids.sort_by_key(|p| (p.parse::<u64>().unwrap_or(u64::MAX), p.to_string()));
        for p in ids {
            let list = &by[p];
            let conditions: BTreeSet<&str> = list.iter().map(|e| e.condition.as_str()).collect();
            let hours: f64 = list.iter().filter_map(|e| e.duration_s).sum::<f64>() / 3600.0;
            answer.push_str(&format!(
                "| {p} | {} | {} | {hours:.2} |\n",
                list.len(),
                conditions.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    qa(out, "Who appears in the dataset?", answer.trim_end());
}

fn goals(out: &mut String, episodes: &[EpisodeEntry]) {
    let mut by: BTreeMap<(String, &str), Vec<&EpisodeEntry>> = BTreeMap::new();
    for e in episodes {
        by.entry((e.goal.label(), &e.goal.sha256))
            .or_default()
            .push(e);
    }
    let mut answer = format!(
        "{} distinct goal houses (told apart by a SHA-256 of the goal grid; the label is its \
         first 12 digits and the source's name for the house, if any):\n\n\
         | goal | episodes | built | conditions |\n|---|---|---|---|\n",
        by.len()
    );
    for ((label, _), list) in &by {
        let conditions: BTreeSet<&str> = list.iter().map(|e| e.condition.as_str()).collect();
        answer.push_str(&format!(
            "| {label} | {} | {} | {} |\n",
            list.len(),
            list.iter().filter(|e| e.succeeded()).count(),
            conditions.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    qa(out, "Which goals were built?", answer.trim_end());
}

fn seats_and_models(out: &mut String, episodes: &[EpisodeEntry]) {
    let seats = count_by_many(episodes, |e| {
        e.players
            .iter()
            .map(|s| {
                let role = match s.role {
                    Role::Human => "human",
                    Role::Assistant => "assistant",
                };
                match s.controller {
                    Controller::Person => format!("{role} played by a person"),
                    Controller::Agent => format!(
                        "{role} played by `{}`",
                        s.agent.as_deref().unwrap_or("an agent")
                    ),
                }
            })
            .collect()
    });
    let mut answer = format!("Episodes per kind of seat: {}.", listing(&seats));
    let mut models: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for e in episodes {
        let distinct: BTreeSet<(&str, &str)> = e
            .models
            .iter()
            .map(|m| (m.path.as_str(), m.sha256.as_str()))
            .collect();
        for key in distinct {
            *models.entry(key).or_insert(0) += 1;
        }
    }
    if models.is_empty() {
        answer.push_str(" No agent loaded a network model.");
    } else {
        answer.push_str(
            " Network models the agents loaded, pinned by content:\n\n| model file | SHA-256 | episodes |\n|---|---|---|\n",
        );
        for ((path, sha), n) in &models {
            answer.push_str(&format!("| `{path}` | `{sha}` | {n} |\n"));
        }
    }
    qa(out, "Who or what played each seat?", answer.trim_end());
}

/// Counts of every key `keys` gives per episode, each counted once per episode.
fn count_by_many(
    episodes: &[EpisodeEntry],
    keys: impl Fn(&EpisodeEntry) -> Vec<String>,
) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for e in episodes {
        let distinct: BTreeSet<String> = keys(e).into_iter().collect();
        for k in distinct {
            *out.entry(k).or_insert(0) += 1;
        }
    }
    out
}

fn date(unix_s: f64) -> String {
    rfc3339_utc(unix_s)[..10].to_owned()
}

fn collection(out: &mut String, episodes: &[EpisodeEntry]) {
    section(out, "Collection process");
    let kinds = count_by(episodes, |e| format!("{:?}", e.source).to_lowercase());
    qa(
        out,
        "How was the data associated with each instance acquired?",
        &format!(
            "By source: {} (`play`, `record` and `watch` are the live daemon's modes with \
             Minecraft, `converted` came from another format, `simulated` was played by agents \
             in the simulator alone). {}",
            listing(&kinds),
            todo(
                "the setting (lab, online), the instructions participants were given, the Minecraft setup."
            )
        ),
    );
    let first = episodes
        .iter()
        .filter_map(|e| e.first_wall)
        .min_by(f64::total_cmp);
    let last = episodes
        .iter()
        .filter_map(|e| e.last_wall)
        .max_by(f64::total_cmp);
    let timeframe = match (first, last) {
        (Some(a), Some(b)) => {
            let days: BTreeSet<String> = episodes
                .iter()
                .filter_map(|e| e.first_wall)
                .map(date)
                .collect();
            format!(
                "From {} to {} (step times of the recordings), on {} days: {}.",
                date(a),
                date(b),
                days.len(),
                days.into_iter().collect::<Vec<_>>().join(", ")
            )
        }
        _ => "No recording carries step times.".to_owned(),
    };
    qa(
        out,
        "Over what timeframe was the data collected?",
        &timeframe,
    );
    qa(
        out,
        "Who was involved in the data collection process and how were they compensated?",
        &todo("who recruited and ran the sessions, how participants were recruited and paid."),
    );
    qa(
        out,
        "Were any ethical review processes conducted?",
        &todo("the review board, the protocol number, and the consent form."),
    );
    let versions = count_by(episodes, |e| e.mbag_version.clone());
    qa(
        out,
        "Which software wrote the recordings?",
        &format!("Episodes per mbag version: {}.", listing(&versions)),
    );
}

fn preprocessing(out: &mut String, report: &ValidateReport) {
    let episodes = &report.manifest.episodes;
    section(out, "Preprocessing, cleaning, labelling");
    let converted = episodes
        .iter()
        .filter(|e| e.source == crate::recording::header::SourceKind::Converted)
        .count();
    let replay = if report.steps_replayed > 0 {
        let failed = report
            .problems
            .iter()
            .filter(|p| matches!(p, Problem::Mismatch { .. } | Problem::NotReplayable { .. }))
            .count();
        format!(
            "Every readable recording was replayed through the simulator ({} steps); {failed} \
             disagreed with it or could not be replayed.",
            report.steps_replayed
        )
    } else {
        "The recordings were not replayed for this datasheet.".to_owned()
    };
    qa(
        out,
        "Was any preprocessing/cleaning/labeling of the data done?",
        &format!(
            "{converted} episodes were converted from another format (`mbag recording convert`; \
             each header's `source.origin` keeps what identifies its source). {replay} \
             Nothing was removed or edited by the dataset tools. {}",
            todo("any other cleaning, filtering or relabelling, and why.")
        ),
    );
    qa(
        out,
        "Was the raw data saved in addition to the preprocessed data?",
        &todo("where the raw data (e.g. the source files of converted episodes) is kept."),
    );
}

fn uses(out: &mut String) {
    section(out, "Uses");
    qa(
        out,
        "Has the dataset been used for any tasks already?",
        &todo("papers and models trained on it (e.g. `mbag train bc --data DIR` human models)."),
    );
    qa(
        out,
        "What (other) tasks could the dataset be used for?",
        &todo("e.g. behaviour cloning of human builders, goal inference, evaluating assistants."),
    );
    qa(
        out,
        "Is there anything about the composition of the dataset or the way it was collected that might impact future uses?",
        &todo("e.g. few participants, one world size, the goal houses' origin."),
    );
    qa(
        out,
        "Are there tasks for which the dataset should not be used?",
        &todo("uses the participants did not consent to, conclusions the sample cannot support."),
    );
}

fn distribution(out: &mut String, episodes: &[EpisodeEntry]) {
    section(out, "Distribution");
    let gz = episodes.iter().filter(|e| e.file.ends_with(".gz")).count();
    qa(
        out,
        "How will the dataset be distributed?",
        &format!(
            "As {} recording files ({gz} gzip-compressed) in the `mbag-recording/1` format, with \
             `manifest.jsonl` (`mbag dataset index`) listing each one's episode, goal, condition \
             and a SHA-256 of its steps. {}",
            episodes.len(),
            todo("where (archive, DOI) and from when.")
        ),
    );
    qa(
        out,
        "Under which license?",
        &todo("the license, and any terms from the sources converted episodes came from."),
    );
    qa(
        out,
        "Have any third parties imposed restrictions on the data?",
        &todo("restrictions, or none."),
    );
}

fn maintenance(out: &mut String, report: &ValidateReport) {
    section(out, "Maintenance");
    qa(
        out,
        "Who will be supporting/hosting/maintaining the dataset, and how can they be contacted?",
        &todo("the maintainer and a contact address."),
    );
    let mut errata = String::new();
    if report.problems.is_empty() {
        let _ = write!(
            errata,
            "`mbag dataset validate` found no problems in {} files: every file reads{}, no \
             episode id or step sequence appears twice, the manifest lists exactly the files \
             there, and no episode is split over several files.",
            report.files,
            if report.steps_replayed > 0 {
                " and replays exactly"
            } else {
                ""
            }
        );
    } else {
        let _ = writeln!(
            errata,
            "`mbag dataset validate` found {} problems in {} files:\n",
            report.problems.len(),
            report.files
        );
        for (i, p) in report.problems.iter().enumerate() {
            let _ = writeln!(errata, "{}. {} ({})", i + 1, p, p.kind());
        }
    }
    let mut errata = errata.trim_end().to_owned();
    errata.push_str("\n\n");
    errata.push_str(&todo(
        "known issues found by other means, and what users should do about them.",
    ));
    qa(out, "Is there an erratum?", errata.trim_end());
    qa(
        out,
        "Will the dataset be updated?",
        &todo(
            "how often, by whom, and how users hear of it (and whether old versions stay available).",
        ),
    );
}

/// Bytes in the largest unit that keeps a number above 1.
fn size(bytes: u64) -> String {
    let units = ["B", "KB", "MB", "GB", "TB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < units.len() {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", units[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::super::manifest::Manifest;
    use super::super::manifest::tests::entry;
    use super::*;

    fn report(problems: Vec<Problem>) -> ValidateReport {
        let mut b = entry("b.jsonl.gz", "with assistant", "bb");
        b.participant = Some("10".into());
        b.models = vec![super::super::manifest::ModelEntry {
            player: 1,
            path: "models/az.json".into(),
            sha256: "ab".repeat(32),
        }];
        b.goal.name = Some("house 2".into());
        ValidateReport {
            files: 2,
            steps_replayed: 200,
            problems,
            manifest: Manifest::new(vec![entry("a.jsonl", "alone", "aa"), b]),
        }
    }

    #[test]
    fn the_datasheet_fills_in_what_the_recordings_know() {
        let md = render("demo", &report(Vec::new()));
        let sections: Vec<&str> = md.lines().filter(|l| l.starts_with("## ")).collect();
        assert_eq!(
            sections,
            [
                "## Motivation",
                "## Composition",
                "## Collection process",
                "## Preprocessing, cleaning, labelling",
                "## Uses",
                "## Distribution",
                "## Maintenance"
            ]
        );
        assert!(md.starts_with("# Datasheet: demo\n"));
        assert!(
            md.contains("2 episodes in 2 recording files (0 unreadable), 200 steps"),
            "{md}"
        );
        assert!(md.contains("| alone | 1 | 1 | 1/1 100% |"), "{md}");
        assert!(md.contains("2 participants are named"), "{md}");
        // Participants sort as numbers: 1 before 10.
        let p1 = md.find("| 1 | 1 | alone |").unwrap();
        let p10 = md.find("| 10 | 1 | with assistant |").unwrap();
        assert!(p1 < p10);
        assert!(
            md.contains("| bb0000000000 house 2 | 1 | 1 | with assistant |"),
            "{md}"
        );
        assert!(md.contains(&format!("| `models/az.json` | `{}` | 1 |", "ab".repeat(32))));
        assert!(md.contains("From 2023-07-18 to 2023-07-18"), "{md}");
        assert!(md.contains("found no problems in 2 files"), "{md}");
        assert!(md.contains("(1 gzip-compressed)"), "{md}");
        // Every section has something left for a person.
        for part in md.split("\n## ").skip(1) {
            assert!(part.contains(TODO), "no prompt in {part}");
        }
    }

    #[test]
    fn the_errata_list_every_problem() {
        let md = render(
            "demo",
            &report(vec![
                Problem::Orphan {
                    file: "new.jsonl".into(),
                },
                Problem::Cut {
                    file: "a.jsonl".into(),
                    line: 9,
                    steps: 7,
                },
            ]),
        );
        assert!(md.contains("found 2 problems in 2 files"), "{md}");
        assert!(
            md.contains("1. new.jsonl: not in the manifest (orphan)"),
            "{md}"
        );
        assert!(md.contains("2. a.jsonl: cut mid-line at line 9"), "{md}");
        assert!(md.contains("The checks found some."));
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(size(999), "999 B");
        assert_eq!(size(1_500), "1.5 KB");
        assert_eq!(size(23_400_000), "23.4 MB");
    }
}
