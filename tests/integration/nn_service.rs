//! The inference service: its answers are the model's, it batches concurrent
//! callers, keeps stream states as a caller would, and shuts down without leaving
//! anyone waiting. Tests hold the libtorch lock of `nn.rs`.

use std::sync::{Arc, Barrier};
use std::time::Duration;

use mbag::nn::{
    InferenceRequest, InferenceService, Model, NnError, ObsBatch, Outputs, Prediction,
    RecurrentState, ServiceConfig, StateSource,
};
use mbag::sim::coords::WorldSize;
use mbag::sim::obs::Observation;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tch::{Device, Tensor};

use super::nn::{config_path, torch};

/// A random but plausible observation: blocks and goal ids below 10, the observer
/// somewhere, small inventories.
fn observation(size: WorldSize, players: usize, seed: u64) -> Observation {
    let mut rng = StdRng::seed_from_u64(seed);
    let cells = size.num_cells();
    let mut world = vec![0u8; 6 * cells];
    for c in 0..cells {
        world[c] = rng.random_range(0..10);
        world[2 * cells + c] = rng.random_range(0..10);
        world[5 * cells + c] = rng.random_range(0..=players as u8);
    }
    world[4 * cells + rng.random_range(0..cells)] = 1;
    let inventory = (0..players * 10).map(|_| rng.random_range(0..64)).collect();
    Observation::from_raw(size, players, world, inventory, rng.random_range(0..1000))
}

fn observations(model: &Model, n: usize, seed: u64) -> Vec<Arc<Observation>> {
    let size = model.config().world_size;
    let players = model.config().num_players;
    (0..n)
        .map(|i| Arc::new(observation(size, players, seed + i as u64)))
        .collect()
}

fn load(name: &str) -> Model {
    Model::load(&config_path(name), Device::Cpu).unwrap()
}

fn direct(
    model: &Model,
    obs: &[Arc<Observation>],
    prev: Option<&[usize]>,
    state: Option<&RecurrentState>,
) -> Outputs {
    let refs: Vec<&Observation> = obs.iter().map(|o| o.as_ref()).collect();
    let prev = model.config().net.use_prev_action.then(|| {
        prev.map(<[usize]>::to_vec)
            .unwrap_or_else(|| vec![0; obs.len()])
    });
    let batch = ObsBatch::from_observations(&refs, prev.as_deref(), Device::Cpu).unwrap();
    model.forward(&batch, state).unwrap()
}

fn row(t: &Tensor, i: i64) -> Vec<f32> {
    Vec::<f32>::try_from(&t.get(i).flatten(0, -1)).unwrap()
}

/// The largest difference between a prediction and row `i` of direct outputs.
fn max_diff(p: &Prediction, out: &Outputs, i: i64) -> f32 {
    let diff = |a: &[f32], b: &[f32]| {
        assert_eq!(a.len(), b.len());
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max)
    };
    let mut d = diff(&p.flat_logits, &row(&out.flat_logits, i));
    d = d.max((p.value - out.value.double_value(&[i]) as f32).abs());
    d = d.max(diff(&p.goal_logits, &row(&out.goal_logits, i)));
    match (&p.other_agent_logits, &out.other_agent_logits) {
        (Some(a), Some(b)) => d = d.max(diff(a, &row(b, i))),
        (None, None) => {}
        _ => panic!("other-agent logits present on one side only"),
    }
    match &p.state {
        Some(state) => {
            for (a, b) in state.tensors().iter().zip(out.state.tensors()) {
                assert_eq!(a.size()[0], 1);
                d = d.max(diff(&row(a, 0), &row(b, i)));
            }
        }
        None => assert!(out.state.is_empty()),
    }
    d
}

/// One job of several samples runs as exactly the same forward pass as a direct
/// call, so the answers are identical: conv (recurrent, alpha-zero, with and
/// without previous actions) and transformer models.
#[test]
fn predictions_equal_a_direct_forward() {
    let _torch = torch();
    for name in [
        "paper_assistant_small",
        "paper_human_small",
        "az_test_assistant",
    ] {
        let model = load(name);
        let obs = observations(&model, 5, 11);
        let prev: Vec<usize> = (0..5).map(|i| i * 37 % model.layout().len()).collect();
        let want = direct(&model, &obs, Some(&prev), None);
        // Rows of a state to feed back as given states.
        let next = direct(&model, &obs, Some(&prev), Some(&want.state));
        let service = InferenceService::spawn(model, ServiceConfig::default()).unwrap();
        let handle = service.handle();
        let requests = obs
            .iter()
            .zip(&prev)
            .map(|(o, &a)| InferenceRequest::new(Arc::clone(o)).with_prev_action(a))
            .collect();
        let got = handle.evaluate(requests).unwrap();
        assert_eq!(got.len(), 5);
        for (i, p) in got.iter().enumerate() {
            assert_eq!(max_diff(p, &want, i as i64), 0.0, "{name} sample {i}");
        }
        // The states it returned, given back, continue the episode.
        let requests = obs
            .iter()
            .zip(&prev)
            .zip(got)
            .map(|((o, &a), p)| {
                let state = p.state.map_or(StateSource::Zero, StateSource::Given);
                InferenceRequest::new(Arc::clone(o))
                    .with_prev_action(a)
                    .with_state(state)
            })
            .collect();
        let got = handle.evaluate(requests).unwrap();
        for (i, p) in got.iter().enumerate() {
            assert!(
                max_diff(p, &next, i as i64) < 1e-5,
                "{name} step 2 sample {i}"
            );
        }
        drop(handle);
        let stats = service.shutdown().unwrap();
        assert_eq!(stats.requests, 10);
        assert_eq!(stats.jobs, 2);
        assert_eq!(stats.batches, 2, "{stats:?}");
    }
}

/// Eight callers sending one sample at a time are answered from shared forward
/// passes, each with its own sample's outputs.
#[test]
fn concurrent_callers_are_batched() {
    let _torch = torch();
    let model = load("paper_assistant_small");
    let obs = observations(&model, 8, 100);
    let want = direct(&model, &obs, None, None);
    let config = ServiceConfig {
        max_wait: Duration::from_millis(50),
        ..ServiceConfig::default()
    };
    let service = InferenceService::spawn(model, config).unwrap();
    let barrier = Arc::new(Barrier::new(obs.len()));
    let threads: Vec<_> = obs
        .iter()
        .map(|o| {
            let handle = service.handle();
            let o = Arc::clone(o);
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                (0..10)
                    .map(|_| {
                        handle
                            .evaluate(vec![InferenceRequest::new(Arc::clone(&o))])
                            .unwrap()
                            .pop()
                            .unwrap()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for (i, thread) in threads.into_iter().enumerate() {
        for p in thread.join().unwrap() {
            // Other batch compositions may round differently.
            assert!(max_diff(&p, &want, i as i64) < 1e-4, "caller {i}");
        }
    }
    let stats = service.shutdown().unwrap();
    assert_eq!(stats.requests, 80);
    assert!(stats.mean_batch_size() > 1.5, "{stats:?}");
}

/// A stream's state is carried as a caller carrying `state` by hand would, also
/// when one job holds two steps of the same stream; reset starts from zeros.
#[test]
fn stream_states_carry_across_calls() {
    let _torch = torch();
    let model = load("paper_human_small");
    let obs = observations(&model, 4, 200);
    let prev = [0, 5, 17, 3];
    // By hand: four steps of one episode.
    let mut state = None;
    let mut want = Vec::new();
    for t in 0..4 {
        let out = direct(
            &model,
            &obs[t..t + 1],
            Some(&prev[t..t + 1]),
            state.as_ref(),
        );
        state = Some(RecurrentState::from_tensors(
            out.state
                .tensors()
                .iter()
                .map(Tensor::shallow_clone)
                .collect(),
        ));
        want.push(out);
    }
    let fresh = direct(&model, &obs[2..3], Some(&prev[2..3]), None);
    let service = InferenceService::spawn(model, ServiceConfig::default()).unwrap();
    let handle = service.handle();
    let a = handle.new_stream();
    let b = handle.new_stream();
    assert_ne!(a, b);
    let request = |t: usize, id| {
        InferenceRequest::new(Arc::clone(&obs[t]))
            .with_prev_action(prev[t])
            .with_state(StateSource::Stream(id))
    };
    // Stream a: steps 0 and 1 in separate calls, then 2 and 3 in one job.
    for (t, want) in want.iter().enumerate().take(2) {
        let p = handle.evaluate(vec![request(t, a)]).unwrap();
        assert!(max_diff(&p[0], want, 0) < 1e-5, "step {t}");
    }
    let p = handle.evaluate(vec![request(2, a), request(3, a)]).unwrap();
    assert!(max_diff(&p[0], &want[2], 0) < 1e-5, "step 2");
    assert!(max_diff(&p[1], &want[3], 0) < 1e-5, "step 3");
    // Stream b is independent; after a reset, stream a starts afresh.
    let p = handle.evaluate(vec![request(0, b)]).unwrap();
    assert!(max_diff(&p[0], &want[0], 0) < 1e-5);
    handle.reset_stream(a).unwrap();
    let p = handle.evaluate(vec![request(2, a)]).unwrap();
    assert!(max_diff(&p[0], &fresh, 0) < 1e-5);
    handle.end_stream(a).unwrap();
    handle.end_stream(b).unwrap();
    drop(handle);
    service.shutdown().unwrap();
}

/// A request that does not fit the model fails its own job only; a forward pass
/// that fails (a block id the embedding has no row for) fails every job in it, and
/// the service goes on.
#[test]
fn bad_requests_and_failed_batches_are_typed_errors() {
    let _torch = torch();
    let model = load("paper_assistant_small");
    let obs = observations(&model, 2, 300);
    let service = InferenceService::spawn(
        model,
        ServiceConfig {
            max_wait: Duration::from_millis(200),
            ..ServiceConfig::default()
        },
    )
    .unwrap();
    let handle = service.handle();
    let small = Arc::new(observation(WorldSize::new(6, 6, 6), 2, 1));
    let err = handle
        .evaluate(vec![InferenceRequest::new(small)])
        .unwrap_err();
    assert!(
        matches!(err, NnError::BadInput { input: "world", .. }),
        "{err}"
    );
    let wrong_state =
        RecurrentState::from_tensors(vec![Tensor::zeros([1, 3], (tch::Kind::Float, Device::Cpu))]);
    let err = handle
        .evaluate(vec![
            InferenceRequest::new(Arc::clone(&obs[0])).with_state(StateSource::Given(wrong_state)),
        ])
        .unwrap_err();
    assert!(
        matches!(err, NnError::BadInput { input: "state", .. }),
        "{err}"
    );

    let mut broken = (*obs[1]).clone();
    broken.world[0] = 200;
    // Two jobs in one batch (the handle count is 2 while both are queued).
    let other = service.handle();
    let good = handle
        .submit(vec![InferenceRequest::new(Arc::clone(&obs[0]))])
        .unwrap();
    let bad = other
        .submit(vec![InferenceRequest::new(Arc::new(broken))])
        .unwrap();
    for result in [good.wait(), bad.wait()] {
        let err = result.unwrap_err();
        assert!(
            matches!(&err, NnError::BatchFailed { batch: 2, .. }),
            "{err}"
        );
    }
    // The service still works.
    assert_eq!(
        handle
            .evaluate(vec![InferenceRequest::new(Arc::clone(&obs[0]))])
            .unwrap()
            .len(),
        1
    );
    drop((handle, other));
    let stats = service.shutdown().unwrap();
    assert_eq!(stats.failed_batches, 1, "{stats:?}");
}

/// Shutting down while callers wait answers or refuses every one of them (none
/// hangs), and every later call is [`NnError::ServiceClosed`].
#[test]
fn shutdown_with_waiting_callers_is_clean() {
    let _torch = torch();
    let model = load("paper_assistant_small");
    let obs = observations(&model, 1, 400);
    let service = InferenceService::spawn(
        model,
        ServiceConfig {
            max_wait: Duration::from_millis(20),
            max_batch: 4,
            queue_capacity: 2,
        },
    )
    .unwrap();
    let threads: Vec<_> = (0..6)
        .map(|_| {
            let handle = service.handle();
            let o = Arc::clone(&obs[0]);
            std::thread::spawn(move || {
                let mut answered = 0;
                loop {
                    match handle.evaluate(vec![InferenceRequest::new(Arc::clone(&o))]) {
                        Ok(p) => {
                            assert_eq!(p.len(), 1);
                            answered += 1;
                        }
                        Err(NnError::ServiceClosed) => return (answered, handle),
                        Err(e) => panic!("unexpected {e}"),
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let pending_handle = service.handle();
    let stats = service.shutdown().unwrap();
    let mut answered = 0;
    for thread in threads {
        let (n, handle) = thread.join().unwrap();
        answered += n;
        assert!(handle.is_closed());
        let request = InferenceRequest::new(Arc::clone(&obs[0]));
        assert!(matches!(
            handle.evaluate(vec![request]),
            Err(NnError::ServiceClosed)
        ));
    }
    assert!(answered > 0);
    assert_eq!(stats.requests, answered, "{stats:?}");
    // Use after shutdown: every entry point refuses.
    let request = InferenceRequest::new(Arc::clone(&obs[0]));
    assert!(matches!(
        pending_handle.submit(vec![request]),
        Err(NnError::ServiceClosed)
    ));
    assert!(matches!(
        pending_handle.evaluate(Vec::new()),
        Err(NnError::ServiceClosed)
    ));
    let id = pending_handle.new_stream();
    assert!(matches!(
        pending_handle.reset_stream(id),
        Err(NnError::ServiceClosed)
    ));
}

/// Dropping the service stops the thread too, and `submit` answers can be
/// polled without blocking.
#[test]
fn submitted_jobs_can_be_polled_and_drop_shuts_down() {
    let _torch = torch();
    let model = load("az_test_human");
    let obs = observations(&model, 3, 500);
    let service = InferenceService::spawn(model, ServiceConfig::default()).unwrap();
    let handle = service.handle();
    let pending = handle
        .submit(
            obs.iter()
                .map(|o| InferenceRequest::new(Arc::clone(o)))
                .collect(),
        )
        .unwrap();
    let answer = loop {
        if let Some(answer) = pending.try_wait() {
            break answer;
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let answer = answer.unwrap();
    assert_eq!(answer.len(), 3);
    assert!(
        answer
            .iter()
            .all(|p| p.state.is_none() && p.other_agent_logits.is_none())
    );
    drop(service);
    assert!(matches!(
        handle.evaluate(vec![InferenceRequest::new(Arc::clone(&obs[0]))]),
        Err(NnError::ServiceClosed)
    ));
}

/// Every service's worker runs on the one inference thread: two models served
/// at once both answer callers on two threads with their own model's outputs,
/// and ending one leaves the other serving.
#[test]
fn two_services_share_the_inference_thread_and_end_apart() {
    let _torch = torch();
    let small = load("paper_assistant_small");
    let human = load("paper_human_small");
    let small_obs = observations(&small, 3, 21);
    let human_obs = observations(&human, 3, 31);
    let small_want = direct(&small, &small_obs, None, None);
    let human_want = direct(&human, &human_obs, None, None);
    let small_service = InferenceService::spawn(small, ServiceConfig::default()).unwrap();
    let human_service = InferenceService::spawn(human, ServiceConfig::default()).unwrap();
    let ask = |service: &InferenceService, obs: &[Arc<Observation>]| {
        let handle = service.handle();
        let obs = obs.to_vec();
        std::thread::spawn(move || {
            let requests = obs.into_iter().map(InferenceRequest::new).collect();
            handle.evaluate(requests)
        })
    };
    for _ in 0..3 {
        let a = ask(&small_service, &small_obs);
        let b = ask(&human_service, &human_obs);
        let (a, b) = (a.join().unwrap().unwrap(), b.join().unwrap().unwrap());
        for i in 0..3 {
            assert_eq!(max_diff(&a[i], &small_want, i as i64), 0.0, "small {i}");
            assert_eq!(max_diff(&b[i], &human_want, i as i64), 0.0, "human {i}");
        }
    }
    let stats = small_service.shutdown().unwrap();
    assert_eq!(stats.requests, 9);
    let after = ask(&human_service, &human_obs).join().unwrap().unwrap();
    assert_eq!(max_diff(&after[0], &human_want, 0), 0.0);
    let (_, stats) = human_service.shutdown_into_model().unwrap();
    assert_eq!(stats.requests, 12);
}
