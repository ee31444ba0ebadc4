//! The assistant's side of a chat: what heard messages do to its search, and
//! the templated messages it says back.
//!
//! - `reject` of the last edit bans that very action (a placement of that block
//!   at that cell, or a break of that cell) and moves the goal belief against
//!   it (the placed block less likely at the cell; a broken block more
//!   likely); naming a block and a place bans that block at every cell of the
//!   place; naming only a block bans it everywhere ("stop the glass"); naming
//!   everything ("stop building") holds back every edit.
//! - `accept` lifts a hold, lifts the bans on a block it names, and moves the
//!   goal belief towards the last edit.
//! - `inquiry` queues an answer explaining the plan, composed when it is said.
//!
//! Every refused placement also raises a caution level: placements then need
//! that much goal probability at their cell (an assistant told it guessed
//! wrong keeps to what it is sure of); accepts lower it.
//!
//! Bans last for the episode unless an `accept` lifts them. Messages back are
//! rate-limited: at most one per [`ConversationConfig::min_gap_steps`] steps; a
//! newer acknowledgement replaces an unsaid older one, but never an answer.

use super::about::{About, Place, Scope, describe_cell};
use super::intent::{Flags, Intent};
use crate::mcts::Steering;
use crate::sim::action::{Action, ActionType, FlatLayout};
use crate::sim::block::{BlockId, Blocks};
use crate::sim::coords::{Cell, CellIndex};
use crate::sim::obs::{Observation, WorldChannel};

/// A message an agent hears.
#[derive(Clone, Debug, PartialEq)]
pub struct Heard {
    /// Who said it (player index).
    pub speaker: usize,
    /// The words.
    pub text: String,
    /// Its flag and referent.
    pub flags: Flags,
}

/// How strongly words steer, and how often the assistant talks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConversationConfig {
    /// Fewest steps between two messages back.
    pub min_gap_steps: u32,
    /// Goal log-odds taken from a rejected placement (and given to a block
    /// whose break was rejected).
    pub reject_bias: f32,
    /// Goal log-odds given to an accepted placement.
    pub accept_bias: f32,
    /// How far each rejected placement moves the caution (the least goal
    /// probability a placement needs) towards 1: `c <- c + step (1 - c)`; an
    /// accept halves it.
    pub caution_step: f32,
    /// The most caution words can bring.
    pub max_caution: f32,
}

impl Default for ConversationConfig {
    fn default() -> Self {
        Self {
            min_gap_steps: 5,
            // e^-8: a rejected block at a cell goes from likely to negligible.
            reject_bias: 8.0,
            accept_bias: 3.0,
            // One refusal: only blocks the goal head gives 40% or more; three:
            // 78%, the rest are left to the person.
            caution_step: 0.4,
            max_caution: 0.9,
        }
    }
}

/// The assistant's last place or break, as it saw the world then.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Edit {
    action: Action,
    cell: Cell,
    /// The block placed, or the block the break removed.
    block: BlockId,
}

/// What the assistant will say next.
#[derive(Clone, Debug, PartialEq)]
enum Pending {
    /// Words already composed (acknowledgements).
    Text(String),
    /// An answer to a question, composed from the plan when said.
    Answer,
}

/// What the agent plans, for answers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// The place or break it means to make next, if any.
    pub next_edit: Option<Action>,
}

/// One episode's conversation from the assistant's side.
#[derive(Clone, Debug)]
pub struct Conversation {
    config: ConversationConfig,
    layout: FlatLayout,
    steering: Steering,
    changed: bool,
    last_edit: Option<Edit>,
    blocks: Option<Blocks>,
    pending: Option<Pending>,
    steps_since_spoke: u32,
}

impl Conversation {
    /// A conversation for an agent acting in `layout`'s action space.
    pub fn new(layout: FlatLayout, config: ConversationConfig) -> Self {
        Self {
            config,
            layout,
            steering: Steering::new(),
            changed: false,
            last_edit: None,
            blocks: None,
            pending: None,
            steps_since_spoke: u32::MAX,
        }
    }

    /// Forgets the episode: bans, holds, the last edit, what was to be said.
    pub fn reset(&mut self) {
        *self = Self::new(self.layout, self.config);
    }

    /// The steering the words so far amount to.
    pub fn steering(&self) -> &Steering {
        &self.steering
    }

    /// The steering, when it changed since the last call.
    pub fn take_change(&mut self) -> Option<&Steering> {
        std::mem::take(&mut self.changed).then_some(&self.steering)
    }

    /// Notes the agent's action on `obs` (the world before it).
    pub fn acted(&mut self, obs: &Observation, action: Action) {
        self.steps_since_spoke = self.steps_since_spoke.saturating_add(1);
        let size = obs.size();
        let ids = obs.channel(WorldChannel::CurrentBlocks).to_vec();
        let blocks = Blocks::from_raw(size, ids, vec![0; size.num_cells()]);
        let edit = match action.kind {
            ActionType::PlaceBlock => Some(action.block),
            ActionType::BreakBlock => Some(blocks.id_at(action.location)),
            _ => None,
        };
        if let Some(block) = edit {
            self.last_edit = Some(Edit {
                action,
                cell: action.cell(size),
                block,
            });
        }
        self.blocks = Some(blocks);
    }

    /// Takes in a heard message.
    pub fn hear(&mut self, heard: &Heard) {
        let Flags { intent, about } = heard.flags;
        match intent {
            Intent::Reject => self.reject(about),
            Intent::Accept => self.accept(about),
            Intent::Inquiry => self.pending = Some(Pending::Answer),
            Intent::None => {}
        }
    }

    fn say(&mut self, text: String) {
        if self.pending != Some(Pending::Answer) {
            self.pending = Some(Pending::Text(text));
        }
    }

    fn flat(&self, kind: ActionType, cell: Cell, block: BlockId) -> Option<usize> {
        let size = self.layout.size();
        let index = size.checked_index(cell)?;
        self.layout.flat(Action::new(kind, index, block))
    }

    fn index(&self, cell: Cell) -> Option<CellIndex> {
        self.layout.size().checked_index(cell)
    }

    fn where_is(&self, cell: Cell) -> String {
        match &self.blocks {
            Some(b) => describe_cell(cell, b),
            None => format!("at ({}, {}, {})", cell.x, cell.y, cell.z),
        }
    }

    /// A refusal of a placement says the assistant's guesses are not good
    /// enough: it raises the caution.
    fn more_careful(&mut self) {
        let c = self.steering.caution();
        let next = (c + self.config.caution_step * (1.0 - c)).min(self.config.max_caution);
        self.steering.set_caution(next);
    }

    fn reject(&mut self, about: About) {
        let last = self.last_edit;
        if about.is_bare() && about.scope == Scope::Everything {
            self.steering.set_paused(true);
            self.changed = true;
            self.say("OK, I'm stopping. Say \"go on\" when I should build again.".into());
            return;
        }
        // The last edit alone ("no", "not there", "not that glass").
        let names_last = matches!(about.place, None | Some(Place::There))
            && about
                .block
                .is_none_or(|b| last.is_some_and(|e| e.block == b));
        if names_last && about.place.is_some() || about.is_bare() {
            let Some(edit) = last else {
                self.say("I haven't built anything yet. What should I not do?".into());
                return;
            };
            let name = block_name(edit.block);
            let place = self.where_is(edit.cell);
            match edit.action.kind {
                ActionType::PlaceBlock => {
                    if let Some(f) = self.layout.flat(edit.action) {
                        self.steering.ban(&self.layout, f);
                    }
                    self.steering.bias_goal(
                        edit.action.location,
                        edit.block,
                        -self.config.reject_bias,
                    );
                    self.more_careful();
                    self.say(format!("Sorry, no more {name} {place}."));
                }
                _ => {
                    if let Some(f) = self.layout.flat(edit.action) {
                        self.steering.ban(&self.layout, f);
                    }
                    self.steering.bias_goal(
                        edit.action.location,
                        edit.block,
                        self.config.reject_bias,
                    );
                    self.say(format!("Sorry, I'll leave the {name} {place} alone."));
                }
            }
            self.changed = true;
            return;
        }
        // A block and/or a place: ban placing it (or, with no block named and
        // no placement to go by, any block) at every cell of the place.
        let block = about.block.or_else(|| {
            last.filter(|e| e.action.kind == ActionType::PlaceBlock)
                .map(|e| e.block)
        });
        let size = self.layout.size();
        let cells: Vec<Cell> = match about.place {
            Some(place) => {
                let empty = Blocks::initial_world(size);
                let blocks = self.blocks.as_ref().unwrap_or(&empty);
                place.cells(size, last.map(|e| e.cell), blocks)
            }
            None => size.cells().collect(),
        };
        if cells.is_empty() {
            self.say("Sorry, I don't know which place you mean.".into());
            return;
        }
        let blocks: Vec<BlockId> = match block {
            Some(b) => vec![b],
            None => BlockId::PLACEABLE.to_vec(),
        };
        for &cell in &cells {
            for &b in &blocks {
                if let Some(f) = self.flat(ActionType::PlaceBlock, cell, b) {
                    self.steering.ban(&self.layout, f);
                }
                // A place named says the goal has no such block there; a
                // block banned everywhere says nothing about one cell.
                if about.place.is_some()
                    && let Some(i) = self.index(cell)
                {
                    self.steering.bias_goal(i, b, -self.config.reject_bias);
                }
            }
        }
        if about.place.is_none()
            && let (Some(b), Some(e)) = (block, last)
            && e.block == b
            && e.action.kind == ActionType::PlaceBlock
        {
            self.steering
                .bias_goal(e.action.location, b, -self.config.reject_bias);
        }
        self.more_careful();
        self.changed = true;
        let what = block.map_or("blocks".to_owned(), |b| block_name(b).to_owned());
        self.say(match about.place {
            None => format!("Stopping the {what}, sorry."),
            Some(Place::Part(part)) => format!("OK, no {what} in the {}.", part.name()),
            Some(Place::Plane(axis, at)) => {
                format!("OK, no {what} at {}={at}.", axis.letter())
            }
            Some(Place::Cell(_) | Place::There) if cells.len() == 1 => {
                format!("OK, no {what} {}.", self.where_is(cells[0]))
            }
            Some(_) => format!("OK, no {what} there."),
        });
    }

    fn accept(&mut self, about: About) {
        if self.steering.caution() > 0.0 {
            let c = self.steering.caution() / 2.0;
            self.steering.set_caution(if c < 0.05 { 0.0 } else { c });
            self.changed = true;
        }
        if self.steering.is_paused() {
            self.steering.set_paused(false);
            self.changed = true;
            self.say("Going on.".into());
        }
        if let Some(b) = about.block {
            let size = self.layout.size();
            let mut lifted = false;
            for cell in size.cells() {
                if let Some(f) = self.flat(ActionType::PlaceBlock, cell, b)
                    && self.steering.is_banned(f)
                {
                    self.steering.lift(f);
                    lifted = true;
                }
            }
            if lifted {
                self.changed = true;
                self.say(format!("OK, {} again.", block_name(b)));
            }
        }
        if about.is_bare()
            && let Some(edit) = self.last_edit
        {
            let delta = match edit.action.kind {
                ActionType::PlaceBlock => self.config.accept_bias,
                _ => -self.config.accept_bias,
            };
            self.steering
                .bias_goal(edit.action.location, edit.block, delta);
            self.changed = true;
            if self.pending.is_none() {
                self.pending = Some(Pending::Text("Thanks!".into()));
            }
        }
    }

    /// The message to say now, if one is waiting and the rate limit allows;
    /// answers are composed from `plan`.
    pub fn speak(&mut self, plan: &Plan) -> Option<String> {
        if self.steps_since_spoke < self.config.min_gap_steps {
            return None;
        }
        let text = match self.pending.take()? {
            Pending::Text(t) => t,
            Pending::Answer => self.answer(plan),
        };
        self.steps_since_spoke = 0;
        Some(text)
    }

    fn answer(&self, plan: &Plan) -> String {
        if self.steering.is_paused() {
            return "I'm holding off, as you asked. Say \"go on\" when I should build again."
                .into();
        }
        let size = self.layout.size();
        match plan.next_edit {
            Some(a) if a.kind == ActionType::PlaceBlock => format!(
                "I'm placing {} {}.",
                block_name(a.block),
                self.where_is(a.cell(size))
            ),
            Some(a) if a.kind == ActionType::BreakBlock => {
                let cell = a.cell(size);
                let block = self
                    .blocks
                    .as_ref()
                    .map_or(BlockId::AIR, |b| b.id_at(a.location));
                format!(
                    "I'm breaking the {} {}; I don't think it's part of the house.",
                    block_name(block),
                    self.where_is(cell)
                )
            }
            _ => "I'm not sure what to build next, so I'm watching what you build.".into(),
        }
    }
}

fn block_name(block: BlockId) -> &'static str {
    block.name().unwrap_or("block")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::intent::{IntentParser, RuleParser};
    use crate::sim::config::Abilities;
    use crate::sim::coords::WorldSize;

    fn heard(text: &str) -> Heard {
        Heard {
            speaker: 0,
            text: text.into(),
            flags: RuleParser.read(text),
        }
    }

    fn setup() -> (Conversation, Observation, FlatLayout) {
        let size = WorldSize::new(5, 5, 5);
        let layout = FlatLayout::new(
            size,
            Abilities {
                teleportation: false,
                flying: true,
                inf_blocks: true,
            },
        );
        let mut obs = Observation::new(size, 2);
        let ground = Blocks::initial_world(size);
        obs.channel_mut(WorldChannel::CurrentBlocks)
            .copy_from_slice(ground.ids());
        let config = ConversationConfig {
            min_gap_steps: 2,
            ..ConversationConfig::default()
        };
        (Conversation::new(layout, config), obs, layout)
    }

    #[test]
    fn a_rejected_placement_is_banned_and_acknowledged() {
        let (mut c, obs, layout) = setup();
        let size = layout.size();
        let cell = Cell { x: 2, y: 2, z: 1 };
        let place = Action::new(ActionType::PlaceBlock, size.index(cell), BlockId::GLASS);
        c.acted(&obs, place);
        c.hear(&heard("no, not that"));
        let steering = c.take_change().expect("changed").clone();
        assert!(steering.is_banned(layout.flat(place).unwrap()));
        assert_eq!(steering.goal_bias(place.location, BlockId::GLASS), -8.0);
        assert!((steering.caution() - 0.4).abs() < 1e-6);
        assert!(c.take_change().is_none());
        let said = c.speak(&Plan::default()).unwrap();
        assert!(
            said.contains("glass") && said.contains("(2, 2, 1)"),
            "{said}"
        );
        // Rate limit: a question right away waits two steps.
        c.hear(&heard("what are you doing?"));
        assert_eq!(c.speak(&Plan::default()), None);
        c.acted(&obs, Action::NOOP);
        c.acted(&obs, Action::NOOP);
        let plan = Plan {
            next_edit: Some(Action::new(
                ActionType::PlaceBlock,
                size.index(Cell { x: 1, y: 2, z: 1 }),
                BlockId::PLANKS,
            )),
        };
        let answer = c.speak(&plan).unwrap();
        assert!(answer.starts_with("I'm placing planks"), "{answer}");
    }

    #[test]
    fn blocks_everywhere_holds_and_lifts() {
        let (mut c, obs, layout) = setup();
        let size = layout.size();
        c.hear(&heard("no glass please"));
        let s = c.take_change().unwrap().clone();
        let anywhere = |cell: Cell| {
            layout
                .flat(Action::new(
                    ActionType::PlaceBlock,
                    size.index(cell),
                    BlockId::GLASS,
                ))
                .unwrap()
        };
        assert!(s.is_banned(anywhere(Cell { x: 0, y: 3, z: 4 })));
        assert_eq!(s.banned_count(), size.num_cells());
        c.hear(&heard("actually glass is fine, thanks"));
        assert_eq!(c.take_change().unwrap().banned_count(), 0);
        c.hear(&heard("stop building"));
        assert!(c.take_change().unwrap().is_paused());
        c.acted(&obs, Action::NOOP);
        c.hear(&heard("ok go ahead"));
        assert!(!c.take_change().unwrap().is_paused());
        // Coordinates: every block at that cell.
        c.hear(&heard("don't put anything at 1 2 3"));
        let s = c.take_change().unwrap();
        assert_eq!(s.banned_count(), BlockId::PLACEABLE.len());
    }
}
