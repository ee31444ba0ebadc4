//! Teleport choices seeded with the `hash(bytes)` the env is told to use
//! (`Env::set_python_hash`, ENV_SPEC 6.4).

use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::json;

use super::*;

/// A traced, teleporting 5x6x5 env with infinite blocks, reset around a goal of
/// one cobblestone.
fn teleporting_env() -> Env {
    let config = Config::from_json(&json!({
        "num_players": 2,
        "world_size": [5, 6, 5],
        "horizon": 100,
        "players": [{}, {}],
        "abilities": {"teleportation": true, "flying": true, "inf_blocks": true},
    }))
    .unwrap();
    let mut env = Env::new(config);
    let mut structure = Blocks::air(env.goal_structure_size());
    structure.set(Cell::new(1, 1, 1), BlockId::COBBLESTONE);
    let goal = place_goal(env.size(), &structure, true);
    env.reset_with_goal(goal, &mut StdRng::seed_from_u64(0));
    env.set_tracing(true);
    env
}

#[test]
fn teleport_choices_are_seeded_with_the_chosen_python_hash() {
    let template = teleporting_env();
    assert_eq!(template.python_hash(), PythonHash::Sip13, "the default");
    let cell = Cell::new(2, 2, 2);
    let place = ActionTuple::new(1, template.size().index(cell).get() as i64, 3);
    let mut seeds = Vec::new();
    for hash in [PythonHash::Sip13, PythonHash::Sip24] {
        let mut env = template.clone();
        env.set_python_hash(hash);
        assert_eq!(env.python_hash(), hash);
        let timestep = env.state().timestep;
        env.step_tuples(&[place, ActionTuple::NOOP]).unwrap();
        // The reference hashes the world with the block already placed.
        assert_eq!(env.state().blocks.get(cell), BlockId::COBBLESTONE);
        let [attempt] = env.place_break_attempts() else {
            panic!("one attempt: {:?}", env.place_break_attempts());
        };
        let (index, seed, candidate) = attempt.chosen.expect("a destination");
        assert_eq!(
            seed,
            hash.hash_bytes_int_tuple(env.state().blocks.ids(), timestep),
            "{hash:?}"
        );
        assert_eq!(
            index,
            PyRandom::new(seed).choice_index(attempt.num_candidates)
        );
        let [x, y, z] = candidate.feet();
        assert_eq!(env.state().player_positions[0], PlayerPos::new(x, y, z));
        seeds.push(seed);
    }
    assert_ne!(seeds[0], seeds[1], "the two hashes seed differently");
}
