//! The scripted persons of robustness tests: `stubborn` (insists on one cell)
//! and `actions` (a fixed list of edits). Both walk and act through the env as
//! a person would (see [`crate::agents::walker`]); `stationary`, `random` and
//! `agent` partners are ordinary agent specs.

use std::collections::VecDeque;

use super::format::Edit;
use crate::agents::walker::{EditKind, Walker, WantedEdit};
use crate::agents::{Agent, Internals};
use crate::sim::action::Action;
use crate::sim::block::BlockId;
use crate::sim::config::Config;
use crate::sim::coords::Cell;
use crate::sim::obs::{Observation, WorldChannel};

/// Moves a scripted person spends on one edit before giving it up: an edit the
/// assistant keeps out of reach (by standing in the way, say) must not freeze
/// the rest of the script.
pub const PATIENCE: u32 = 60;

/// Keeps putting one block at one cell: breaks anything else there, places the
/// block whenever the cell is free.
#[derive(Debug)]
pub struct StubbornPerson {
    walker: Walker,
    cell: Cell,
    block: BlockId,
}

impl StubbornPerson {
    /// A person insisting on `block` at `cell` (air: keeps the cell empty).
    pub fn new(config: &Config, cell: Cell, block: BlockId) -> Self {
        Self {
            walker: Walker::new(config),
            cell,
            block,
        }
    }
}

impl Agent for StubbornPerson {
    fn name(&self) -> &'static str {
        "StubbornPerson"
    }

    fn reset(&mut self, _seed: u64) {
        self.walker.reset();
    }

    fn act(&mut self, obs: &Observation) -> Action {
        let size = obs.size();
        let now = BlockId(obs.channel(WorldChannel::CurrentBlocks)[size.index(self.cell).get()]);
        let kind = if now == self.block {
            return Action::NOOP;
        } else if now.is_air() {
            EditKind::Place(self.block)
        } else {
            EditKind::Break
        };
        self.walker.act(
            obs,
            &[WantedEdit {
                cell: self.cell,
                kind,
            }],
        )
    }

    fn internals(&self) -> Internals<'_> {
        Internals::None
    }
}

/// Makes a list of edits in order, then does nothing. An edit already true of
/// the world is skipped; a place over another block breaks that block first; an
/// edit not made within [`PATIENCE`] moves is given up.
#[derive(Debug)]
pub struct ScriptedPerson {
    walker: Walker,
    script: Vec<(Cell, Option<BlockId>)>,
    todo: VecDeque<(Cell, Option<BlockId>)>,
    spent: u32,
}

impl ScriptedPerson {
    /// A person making `edits` (cells already moved to the case's place).
    /// Only the person's edit forms are meaningful here; the format refuses
    /// assistant edits in a partner's script.
    pub fn new(config: &Config, edits: &[Edit], offset: [i32; 3]) -> Self {
        let script = edits
            .iter()
            .map(|e| {
                let (cell, block) = e.cell_and_block();
                (super::run::moved(cell, offset), block)
            })
            .collect();
        Self {
            walker: Walker::new(config),
            script,
            todo: VecDeque::new(),
            spent: 0,
        }
    }
}

impl Agent for ScriptedPerson {
    fn name(&self) -> &'static str {
        "ScriptedPerson"
    }

    fn reset(&mut self, _seed: u64) {
        self.walker.reset();
        self.todo = self.script.iter().copied().collect();
        self.spent = 0;
    }

    fn act(&mut self, obs: &Observation) -> Action {
        let size = obs.size();
        let current = obs.channel(WorldChannel::CurrentBlocks);
        while let Some(&(cell, block)) = self.todo.front() {
            let now = BlockId(current[size.index(cell).get()]);
            let done = match block {
                Some(b) => now == b,
                None => now.is_air(),
            };
            if done || self.spent >= PATIENCE {
                self.todo.pop_front();
                self.spent = 0;
                continue;
            }
            self.spent += 1;
            let kind = match block {
                Some(b) if now.is_air() => EditKind::Place(b),
                _ => EditKind::Break,
            };
            return self.walker.act(obs, &[WantedEdit { cell, kind }]);
        }
        Action::NOOP
    }

    fn internals(&self) -> Internals<'_> {
        Internals::None
    }
}
