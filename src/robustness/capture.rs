//! Turning a moment of a recording into a robustness test skeleton: the goal,
//! the world a few edits earlier, those edits as the history (so an assistant
//! with memory sees them happen), and where both players stand. The situation,
//! partner and pass predicate are the author's to fill in; the skeleton is a
//! valid test (read back with [`RobustnessTest::parse`] before it is returned).

use serde_json::{Value, json};

use super::format::{Category, RobustnessTest};
use crate::recording::RecordingError;
use crate::recording::header::Role;
use crate::recording::reader::Recording;
use crate::recording::verify::{env_for, verify};
use crate::sim::block::{BlockId, Blocks};
use crate::sim::coords::{Cell, PlayerPos, WorldSize};
use crate::sim::env::player_fits;
use crate::sim::state::EnvState;

/// What to capture.
#[derive(Clone, Debug)]
pub struct CaptureSettings {
    /// The test's id.
    pub id: String,
    /// Its category.
    pub category: Category,
    /// The step whose end state is the test's start (0: before the first step).
    pub step: usize,
    /// At least this many of the last edits become the history (whole steps are
    /// kept together).
    pub history: usize,
    /// The test's horizon.
    pub horizon: u64,
    /// The partner: `None` for a stationary person, or an agent spec.
    pub partner: Option<String>,
}

/// Why a moment cannot be captured.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The recording cannot be replayed.
    #[error(transparent)]
    Recording(#[from] RecordingError),
    /// The step is not in the recording.
    #[error("{path}: step {step} is beyond the recording's {steps} steps")]
    StepOutOfRange {
        /// The recording.
        path: String,
        /// The step asked for.
        step: usize,
        /// The steps it has.
        steps: usize,
    },
    /// The recording's moment does not make a test.
    #[error("{path}: step {step}: {message}")]
    Unusable {
        /// The recording.
        path: String,
        /// The step.
        step: usize,
        /// Why.
        message: String,
    },
}

/// One place or break seen between two states.
struct SeenEdit {
    cell: Cell,
    after: BlockId,
    by_assistant: bool,
}

/// The skeleton test for `settings.step` of `rec`, as JSON.
pub fn capture(rec: &Recording, settings: &CaptureSettings) -> Result<Value, CaptureError> {
    let path = rec.path.display().to_string();
    let unusable = |message: String| CaptureError::Unusable {
        path: path.clone(),
        step: settings.step,
        message,
    };
    if settings.step > rec.steps.len() {
        return Err(CaptureError::StepOutOfRange {
            path,
            step: settings.step,
            steps: rec.steps.len(),
        });
    }
    let env = env_for(rec)?;
    let goal = env.goal().clone();
    let mut states: Vec<EnvState> = Vec::with_capacity(settings.step + 1);
    states.push(env.state().clone());
    verify(rec, &mut |env, _| {
        if states.len() <= settings.step {
            states.push(env.state().clone());
        }
    })?;
    if states.len() <= settings.step {
        return Err(unusable(format!(
            "the replay stopped after {} steps (run `mbag recording verify`)",
            states.len() - 1
        )));
    }
    let size = goal.size();
    let role = |r: Role| {
        rec.header
            .players
            .iter()
            .find(|p| p.role == r)
            .map(|p| p.index)
    };
    let person = role(Role::Human).ok_or_else(|| unusable("no human player".into()))?;
    let assistant = role(Role::Assistant);

    // Whole steps of edits, newest first, until the history is long enough.
    let mut first = settings.step;
    let mut history: Vec<SeenEdit> = Vec::new();
    while first > 0 && history.len() < settings.history {
        let (before, after) = (&states[first - 1], &states[first]);
        let mut edits: Vec<SeenEdit> = size
            .cells()
            .filter(|&c| before.blocks.get(c) != after.blocks.get(c))
            .map(|c| SeenEdit {
                cell: c,
                after: after.blocks.get(c),
                // Edits by nobody (the daemon's repairs) count as the person's.
                by_assistant: usize::try_from(after.last_interacted[size.index(c).get()])
                    .ok()
                    .is_some_and(|p| Some(p) == assistant),
            })
            .collect();
        edits.append(&mut history);
        history = edits;
        first -= 1;
    }
    let world = &states[first].blocks;
    let at_step = &states[settings.step];
    // A teleporting player may stand where a walking one cannot (above the
    // world): such a player is put on the nearest free ground instead.
    let mut moved = Vec::new();
    let mut place = |who: &str, p: PlayerPos, avoid: Option<[f64; 3]>| {
        feet_position(p, size).or_else(|| {
            moved.push(who.to_owned());
            free_position(&at_step.blocks, [p.x, p.y, p.z], avoid)
        })
    };
    let person_pos = place("person", at_step.player_positions[person], None)
        .ok_or_else(|| unusable("no free cell for the person".into()))?;
    let assistant_pos = match assistant.map(|a| at_step.player_positions[a]) {
        Some(p) => place("assistant", p, Some(person_pos)),
        None => free_position(&at_step.blocks, person_pos, Some(person_pos)),
    }
    .ok_or_else(|| unusable("no free cell for the assistant".into()))?;
    let note = if moved.is_empty() {
        String::new()
    } else {
        format!(
            " (the {} stood outside the walkable world and was put on the nearest free ground)",
            moved.join(" and ")
        )
    };

    let initial = Blocks::initial_world(size);
    let history: Vec<Value> = history
        .iter()
        .map(|e| {
            let cell = e.cell.to_array();
            let who = if e.by_assistant {
                "assistant"
            } else {
                "person"
            };
            if e.after.is_air() {
                json!({ format!("{who}_breaks"): {"cell": cell} })
            } else {
                json!({ format!("{who}_places"): {"cell": cell, "block": name(e.after)} })
            }
        })
        .collect();
    let partner = match &settings.partner {
        None => json!("stationary"),
        Some(spec) => json!({ "agent": spec }),
    };
    let test = json!({
        "id": settings.id,
        "category": settings.category.label(),
        "situation": format!(
            "Captured from {} at step {}{note}: describe what the assistant should do here.",
            rec.header.episode_id, settings.step
        ),
        "start": {
            "world_size": [size.width, size.height, size.depth],
            "goal": fills(&initial, &goal),
            "world": fills(&initial, world),
            "person": person_pos,
            "assistant": assistant_pos,
            "history": history,
        },
        "partner": partner,
        "horizon": settings.horizon,
        "pass": {"all_of": [
            {"correct_places_at_least": 1},
            {"wrong_places_at_most": 0},
            {"correct_breaks_at_most": 0}
        ]},
        "variants": [{"seed": 1}, {"seed": 2}],
    });
    let text = test_text(&test);
    RobustnessTest::parse(&text).map_err(|(field, message)| {
        unusable(format!(
            "the skeleton is not a valid test: {field}: {message}"
        ))
    })?;
    Ok(test)
}

fn name(b: BlockId) -> &'static str {
    b.name().unwrap_or("air")
}

/// A test's JSON as people write it: keys in the format's order, one fill or
/// edit per line.
pub fn test_text(test: &Value) -> String {
    let compact = |v: &Value| serde_json::to_string(v).expect("JSON values serialise");
    let list = |v: &Value, indent: &str| match v.as_array() {
        Some(items) if !items.is_empty() => {
            let lines: Vec<String> = items
                .iter()
                .map(|i| format!("{indent}  {}", compact(i)))
                .collect();
            format!("[\n{}\n{indent}]", lines.join(",\n"))
        }
        _ => "[]".into(),
    };
    let start = &test["start"];
    let mut start_lines = vec![format!(
        "    \"world_size\": {}",
        compact(&start["world_size"])
    )];
    for key in ["goal", "world"] {
        start_lines.push(format!("    \"{key}\": {}", list(&start[key], "    ")));
    }
    for key in ["person", "assistant"] {
        start_lines.push(format!("    \"{key}\": {}", compact(&start[key])));
    }
    start_lines.push(format!(
        "    \"history\": {}",
        list(&start["history"], "    ")
    ));
    let mut lines = Vec::new();
    for key in ["id", "category", "situation"] {
        lines.push(format!("  \"{key}\": {}", compact(&test[key])));
    }
    lines.push(format!(
        "  \"start\": {{\n{}\n  }}",
        start_lines.join(",\n")
    ));
    for key in ["partner", "horizon", "pass"] {
        lines.push(format!("  \"{key}\": {}", compact(&test[key])));
    }
    lines.push(format!("  \"variants\": {}", list(&test["variants"], "  ")));
    format!("{{\n{}\n}}\n", lines.join(",\n"))
}

/// Cells where `target` differs from `base`, as fills: runs along z of one block.
fn fills(base: &Blocks, target: &Blocks) -> Vec<Value> {
    let size = base.size();
    let mut out = Vec::new();
    for x in 0..size.width as i32 {
        for y in 0..size.height as i32 {
            let mut z = 0;
            while z < size.depth as i32 {
                let c = Cell::new(x, y, z);
                let b = target.get(c);
                if b == base.get(c) {
                    z += 1;
                    continue;
                }
                let mut end = z;
                while end + 1 < size.depth as i32 {
                    let n = Cell::new(x, y, end + 1);
                    if target.get(n) != b || target.get(n) == base.get(n) {
                        break;
                    }
                    end += 1;
                }
                let fill = if end == z {
                    json!({"from": [x, y, z], "block": name(b)})
                } else {
                    json!({"from": [x, y, z], "to": [x, y, end], "block": name(b)})
                };
                out.push(fill);
                z = end + 1;
            }
        }
    }
    out
}

/// A recorded position as a test's feet position (the cell's centre), if it is
/// inside the world, above the floor and below the top.
fn feet_position(p: PlayerPos, size: WorldSize) -> Option<[f64; 3]> {
    let c = p.feet_cell();
    let inside = size.contains(c) && c.y >= 1 && c.y < size.height as i32 - 1;
    inside.then(|| [f64::from(c.x) + 0.5, f64::from(c.y), f64::from(c.z) + 0.5])
}

/// The free feet cell (feet and head air, above the floor, below the top)
/// nearest `near`, lowest first; with `avoid`, not in its column within a cell
/// of its height (where a second player could not stand).
fn free_position(blocks: &Blocks, near: [f64; 3], avoid: Option<[f64; 3]>) -> Option<[f64; 3]> {
    let size = blocks.size();
    let others: Vec<Cell> = avoid
        .map(|a| {
            Cell::new(
                a[0].floor() as i32,
                a[1].floor() as i32,
                a[2].floor() as i32,
            )
        })
        .into_iter()
        .collect();
    size.cells()
        .filter(|&c| c.y >= 1 && c.y < size.height as i32 - 1 && player_fits(blocks, c, &others))
        .min_by_key(|c| {
            let d = [
                f64::from(c.x) + 0.5 - near[0],
                f64::from(c.z) + 0.5 - near[2],
            ];
            (c.y, (100.0 * (d[0] * d[0] + d[1] * d[1])) as i64)
        })
        .map(|c| [f64::from(c.x) + 0.5, f64::from(c.y), f64::from(c.z) + 0.5])
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::robustness::run::moved;

    fn settings(step: usize) -> CaptureSettings {
        CaptureSettings {
            id: "captured".into(),
            category: Category::State,
            step,
            history: 6,
            horizon: 50,
            partner: None,
        }
    }

    #[test]
    fn the_start_and_history_rebuild_the_recorded_moment() {
        let path = Path::new("recordings/samples/simulated_lowest_block_pair_seed3.jsonl");
        let rec = Recording::read(path).unwrap();
        let step = 30;
        let value = capture(&rec, &settings(step)).unwrap();
        let test = RobustnessTest::parse(&test_text(&value)).unwrap();
        assert!(test.start.history.len() >= 6);
        // The start's world with the history applied is the world after `step`.
        let mut world = test.start_world([0, 0, 0]);
        for e in &test.start.history {
            let (cell, block) = e.cell_and_block();
            world.set(moved(cell, [0, 0, 0]), block.unwrap_or(BlockId::AIR));
        }
        let mut recorded = None;
        let mut n = 0;
        verify(&rec, &mut |env, _| {
            n += 1;
            if n == step {
                recorded = Some(env.state().blocks.clone());
            }
        })
        .unwrap();
        let recorded = recorded.unwrap();
        assert_eq!(world.ids(), recorded.ids());
        assert_eq!(
            test.goal([0, 0, 0]).ids(),
            env_for(&rec).unwrap().goal().ids()
        );
    }

    #[test]
    fn a_step_beyond_the_recording_is_named() {
        let path = Path::new("recordings/samples/simulated_lowest_block_pair_seed3.jsonl");
        let rec = Recording::read(path).unwrap();
        let err = capture(&rec, &settings(rec.steps.len() + 1)).unwrap_err();
        assert!(err.to_string().contains("beyond the recording's"), "{err}");
    }
}
