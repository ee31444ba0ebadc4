//! The codecs under a million random and mutated inputs: well-formed streams decode
//! exactly whatever their split, and arbitrary bytes never panic, never return more
//! than arrived, and never make the decoder hold more than its limit allows.

use malmo_bridge::frame::{FrameDecoder, FrameError, LineDecoder, encode_frame, encode_line};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const MAX: usize = 4096;

/// Feeds `wire` in random-sized pieces (often single bytes), collecting frames until
/// the end or the first error.
fn decode_frames(
    wire: &[u8],
    rng: &mut StdRng,
) -> (Vec<Vec<u8>>, Option<FrameError>, FrameDecoder) {
    let mut decoder = FrameDecoder::new(MAX);
    let mut frames = Vec::new();
    let mut at = 0;
    while at < wire.len() {
        let piece = if rng.random_bool(0.3) {
            1
        } else {
            rng.random_range(1..=64)
        };
        let end = (at + piece).min(wire.len());
        decoder.push(&wire[at..end]);
        at = end;
        loop {
            match decoder.next_frame() {
                Ok(Some(frame)) => frames.push(frame),
                Ok(None) => break,
                Err(e) => return (frames, Some(e), decoder),
            }
        }
        // Without an error, at most one partial frame (header + body) is held.
        assert!(
            decoder.buffered() <= 4 + MAX + 64,
            "decoder holds {} bytes",
            decoder.buffered()
        );
    }
    (frames, None, decoder)
}

#[test]
fn a_million_random_and_mutated_frame_streams() {
    let mut rng = StdRng::seed_from_u64(0x3a1f);
    let mut inputs = 0;
    while inputs < 1_000_000 {
        let payloads: Vec<Vec<u8>> = (0..rng.random_range(0..4))
            .map(|_| {
                let len = if rng.random_bool(0.1) {
                    rng.random_range(0..=MAX)
                } else {
                    rng.random_range(0..40)
                };
                (0..len).map(|_| rng.random()).collect()
            })
            .collect();
        let mut wire = Vec::new();
        for p in &payloads {
            encode_frame(p, &mut wire).unwrap();
        }
        // Well formed: exactly the payloads come back.
        let (frames, error, decoder) = decode_frames(&wire, &mut rng);
        assert_eq!(error, None);
        assert_eq!(frames, payloads);
        assert_eq!(decoder.buffered(), 0);
        inputs += 1;

        // Mutated: flip, drop, insert or truncate bytes; anything may come out, but no
        // panic, no frame over the limit, and never more bytes out than in.
        let mut mutated = wire.clone();
        for _ in 0..rng.random_range(1..4) {
            match rng.random_range(0..4) {
                0 if !mutated.is_empty() => {
                    let i = rng.random_range(0..mutated.len());
                    mutated[i] = rng.random();
                }
                1 if !mutated.is_empty() => {
                    mutated.remove(rng.random_range(0..mutated.len()));
                }
                2 => {
                    let i = rng.random_range(0..=mutated.len());
                    mutated.insert(i, rng.random());
                }
                _ => mutated.truncate(rng.random_range(0..=mutated.len())),
            }
        }
        let (frames, error, _) = decode_frames(&mutated, &mut rng);
        let out: usize = frames.iter().map(|f| f.len() + 4).sum();
        assert!(out <= mutated.len());
        assert!(frames.iter().all(|f| f.len() <= MAX));
        if let Some(e) = error {
            assert!(
                matches!(e, FrameError::FrameTooLong { max: MAX, .. }),
                "{e}"
            );
        }
        inputs += 1;
    }
}

#[test]
fn random_line_streams_round_trip_and_garbage_is_bounded() {
    let mut rng = StdRng::seed_from_u64(7);
    for _ in 0..100_000 {
        let lines: Vec<Vec<u8>> = (0..rng.random_range(0..5))
            .map(|_| {
                (0..rng.random_range(0..30))
                    .map(|_| {
                        loop {
                            let b: u8 = rng.random();
                            if b != b'\n' {
                                break b;
                            }
                        }
                    })
                    .collect()
            })
            .collect();
        let mut wire = Vec::new();
        for l in &lines {
            encode_line(l, &mut wire).unwrap();
        }
        let mut decoder = LineDecoder::new(64);
        let mut got = Vec::new();
        for piece in wire.chunks(rng.random_range(1..8)) {
            decoder.push(piece);
            while let Some(line) = decoder.next_line().unwrap() {
                got.push(line);
            }
        }
        assert_eq!(got, lines);
        assert_eq!(decoder.buffered(), 0);

        // Random bytes: either lines within the limit, or LineTooLong once more than
        // the limit is pending without a newline.
        let garbage: Vec<u8> = (0..rng.random_range(0..200))
            .map(|_| rng.random())
            .collect();
        let mut decoder = LineDecoder::new(64);
        decoder.push(&garbage);
        loop {
            match decoder.next_line() {
                Ok(Some(line)) => assert!(line.len() <= 64),
                Ok(None) => {
                    assert!(decoder.buffered() <= 64);
                    break;
                }
                Err(FrameError::LineTooLong { max: 64 }) => break,
                Err(e) => panic!("unexpected {e}"),
            }
        }
    }
}
