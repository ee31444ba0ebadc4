//! The games mbag's commands set up, as typed values: the paper's assistance
//! game, the human study's tutorial and the Malmo settings of live play. The
//! commands start from one of them and change what their arguments say, instead
//! of each spelling the environment config out as JSON.
//!
//! [`Game::config`] turns a game into the reference's config (through
//! [`Config::from_json`], so the reference's defaults and checks apply to every
//! key not named here).

use serde_json::{Value, json};

use super::config::{Config, ConfigError};
use super::coords::WorldSize;

/// The paper's world: 11 wide, 10 high, 10 deep.
pub const PAPER_WORLD: WorldSize = WorldSize::new(11, 10, 10);
/// The human study's tutorial world.
pub const TUTORIAL_WORLD: WorldSize = WorldSize::new(6, 6, 6);
/// The paper's episode length in steps.
pub const PAPER_HORIZON: u64 = 1500;

/// How players get to where they place and break.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Movement {
    /// They walk (MOVE actions), as in the paper's assistance game.
    Walking,
    /// They teleport to any cell they act on (the reference's heuristic
    /// builders need this).
    Teleporting,
}

/// Where blocks come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockSupply {
    /// Every player has every block.
    Infinite,
    /// Blocks are taken from (and given back to) a palette column in the world.
    Palette,
}

/// One seat of the game.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Player {
    /// Minecraft user name (also the name in recordings); the reference's
    /// default when `None`.
    pub name: Option<String>,
    /// A person plays it (through Minecraft).
    pub is_human: bool,
    /// The goal appears in its observations.
    pub goal_visible: bool,
}

impl Player {
    /// A player named `name` who is not a person and sees the goal (the
    /// reference's default).
    pub fn named(name: &str) -> Self {
        Self {
            name: Some(name.to_owned()),
            is_human: false,
            goal_visible: true,
        }
    }
}

/// What a live game asks of Malmo.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Malmo {
    /// Seconds between steps.
    pub action_delay: Option<f64>,
    /// Keep players from acting outside the game's rules in Minecraft.
    pub restrict_players: bool,
    /// Add a spectator client.
    pub use_spectator: bool,
}

/// A game: its players, world, length, rules and (for live play) Malmo.
#[derive(Clone, Debug, PartialEq)]
pub struct Game {
    /// The seats, in player order.
    pub players: Vec<Player>,
    /// The world's extent.
    pub world_size: WorldSize,
    /// Steps per episode; the reference's default when `None`.
    pub horizon: Option<u64>,
    /// Walking or teleporting.
    pub movement: Movement,
    /// Infinite blocks or a palette.
    pub blocks: BlockSupply,
    /// Players start at random free cells instead of a fixed row.
    pub random_start_locations: bool,
    /// The first episode starts at a random timestep; the reference's default
    /// when `None`.
    pub randomize_first_episode_length: Option<bool>,
    /// The reward for placing a block the goal does not have there; the
    /// reference's default when `None`.
    pub place_wrong: Option<f64>,
    /// Played in Minecraft through Malmo.
    pub malmo: Option<Malmo>,
}

impl Game {
    /// The paper's assistance game: a human and an assistant walking in an
    /// 11x10x10 world with infinite blocks for 1,500 steps, starting at random
    /// cells, a wrong place costing 1.
    pub fn paper() -> Self {
        Self {
            players: vec![Player::named("human"), Player::named("assistant")],
            world_size: PAPER_WORLD,
            horizon: Some(PAPER_HORIZON),
            movement: Movement::Walking,
            blocks: BlockSupply::Infinite,
            random_start_locations: true,
            randomize_first_episode_length: None,
            place_wrong: Some(-1.0),
            malmo: None,
        }
    }

    /// `n` players with the reference's default names who teleport in the
    /// tutorial's 6x6x6 world, a wrong place costing 1: the setting of
    /// simulated recordings, whose builders need teleportation.
    pub fn tutorial(n: usize) -> Self {
        Self {
            players: vec![
                Player {
                    name: None,
                    is_human: false,
                    goal_visible: true,
                };
                n
            ],
            world_size: TUTORIAL_WORLD,
            horizon: None,
            movement: Movement::Teleporting,
            blocks: BlockSupply::Infinite,
            random_start_locations: false,
            randomize_first_episode_length: None,
            place_wrong: Some(-1.0),
            malmo: None,
        }
    }

    /// A game played in Minecraft by `players` in a world of `size`: walking,
    /// infinite blocks, players kept to the rules, no spectator, the fixed
    /// start row; the reference's defaults for the rest (the daemon's commands
    /// set the horizon and the step period they are given).
    pub fn live(players: Vec<Player>, size: WorldSize) -> Self {
        Self {
            players,
            world_size: size,
            horizon: None,
            movement: Movement::Walking,
            blocks: BlockSupply::Infinite,
            random_start_locations: false,
            randomize_first_episode_length: None,
            place_wrong: None,
            malmo: Some(Malmo {
                action_delay: None,
                restrict_players: true,
                use_spectator: false,
            }),
        }
    }

    /// The same game with `horizon` steps.
    pub fn with_horizon(mut self, horizon: u64) -> Self {
        self.horizon = Some(horizon);
        self
    }

    /// The same game in a world of `size`.
    pub fn with_world_size(mut self, size: WorldSize) -> Self {
        self.world_size = size;
        self
    }

    /// The same game with players moving by `movement`.
    pub fn with_movement(mut self, movement: Movement) -> Self {
        self.movement = movement;
        self
    }

    /// The reference's environment config for this game.
    pub fn config(&self) -> Result<Config, ConfigError> {
        Config::from_json(&self.to_json())
    }

    /// The partial JSON config [`Game::config`] completes with the reference's
    /// defaults.
    pub fn to_json(&self) -> Value {
        let s = self.world_size;
        let players: Vec<Value> = self
            .players
            .iter()
            .map(|p| {
                let mut v = json!({"is_human": p.is_human, "goal_visible": p.goal_visible});
                if let Some(name) = &p.name {
                    v["player_name"] = json!(name);
                }
                v
            })
            .collect();
        let mut v = json!({
            "num_players": self.players.len(),
            "world_size": [s.width, s.height, s.depth],
            "random_start_locations": self.random_start_locations,
            "players": players,
            "abilities": {
                "teleportation": self.movement == Movement::Teleporting,
                "flying": true,
                "inf_blocks": self.blocks == BlockSupply::Infinite,
            },
        });
        if let Some(h) = self.horizon {
            v["horizon"] = json!(h);
        }
        if let Some(r) = self.randomize_first_episode_length {
            v["randomize_first_episode_length"] = json!(r);
        }
        if let Some(p) = self.place_wrong {
            v["rewards"] = json!({"place_wrong": p});
        }
        if let Some(m) = &self.malmo {
            let mut malmo = json!({
                "use_malmo": true,
                "restrict_players": m.restrict_players,
                "use_spectator": m.use_spectator,
            });
            if let Some(d) = m.action_delay {
                malmo["action_delay"] = json!(d);
            }
            v["malmo"] = malmo;
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_paper_game_is_the_papers_setting() {
        let c = Game::paper().config().unwrap();
        assert_eq!(c.num_players, 2);
        assert_eq!(c.world_size, PAPER_WORLD);
        assert_eq!(c.horizon, PAPER_HORIZON);
        assert!(!c.abilities.teleportation && c.abilities.inf_blocks);
        assert!(c.random_start_locations);
        assert_eq!(
            c.players
                .iter()
                .map(|p| p.player_name.as_deref())
                .collect::<Vec<_>>(),
            [Some("human"), Some("assistant")]
        );
        assert!(!c.malmo.use_malmo);
    }

    #[test]
    fn changes_reach_the_config() {
        let mut game = Game::tutorial(3)
            .with_horizon(7)
            .with_world_size(WorldSize::new(8, 7, 9))
            .with_movement(Movement::Walking);
        game.blocks = BlockSupply::Palette;
        game.malmo = Some(Malmo {
            action_delay: Some(0.25),
            restrict_players: true,
            use_spectator: false,
        });
        let c = game.config().unwrap();
        assert_eq!(c.num_players, 3);
        assert_eq!(c.horizon, 7);
        assert_eq!(c.world_size, WorldSize::new(8, 7, 9));
        assert!(!c.abilities.teleportation && !c.abilities.inf_blocks);
        assert!(c.malmo.use_malmo && c.malmo.restrict_players && !c.malmo.use_spectator);
        assert_eq!(c.malmo.action_delay, 0.25);
    }
}
