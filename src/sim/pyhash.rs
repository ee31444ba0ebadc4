//! CPython's `hash((bytes, int))` and `random.Random(seed).choice`, bit for bit.
//!
//! The reference picks a teleport destination with
//! `random.Random(hash((block_bytes, timestep))).choice(candidates)`. Python salts
//! `hash(bytes)` per process, so the reference (and its goldens) are reproducible only
//! with `PYTHONHASHSEED=0`; this module reproduces CPython 3.11 under that setting
//! (ENV_SPEC section 6.4): SipHash-1-3 with a zero key, the xxHash-style tuple hash,
//! and MT19937 seeded by `init_by_array`.

/// `hash(bytes)` of CPython 3.11 with `PYTHONHASHSEED=0` (SipHash-1-3, zero key).
pub fn hash_bytes(data: &[u8]) -> i64 {
    if data.is_empty() {
        return 0;
    }
    let h = siphash13(0, 0, data) as i64;
    // CPython reserves -1 as its error value.
    if h == -1 { -2 } else { h }
}

/// `hash((bytes, t))` for a non-negative small int `t` (which hashes to itself).
pub fn hash_bytes_int_tuple(data: &[u8], t: u64) -> i64 {
    const P1: u64 = 11_400_714_785_074_694_791;
    const P2: u64 = 14_029_467_366_897_019_727;
    const P5: u64 = 2_870_177_450_012_600_261;
    let mut acc = P5;
    for lane in [hash_bytes(data) as u64, t] {
        acc = acc.wrapping_add(lane.wrapping_mul(P2));
        acc = acc.rotate_left(31);
        acc = acc.wrapping_mul(P1);
    }
    acc = acc.wrapping_add(2 ^ (P5 ^ 3_527_539));
    if acc == u64::MAX {
        1_546_275_796
    } else {
        acc as i64
    }
}

fn siphash13(k0: u64, k1: u64, data: &[u8]) -> u64 {
    let mut v0 = k0 ^ 0x736f_6d65_7073_6575;
    let mut v1 = k1 ^ 0x646f_7261_6e64_6f6d;
    let mut v2 = k0 ^ 0x6c79_6765_6e65_7261;
    let mut v3 = k1 ^ 0x7465_6462_7974_6573;
    let round = |v0: &mut u64, v1: &mut u64, v2: &mut u64, v3: &mut u64| {
        *v0 = v0.wrapping_add(*v1);
        *v1 = v1.rotate_left(13);
        *v1 ^= *v0;
        *v0 = v0.rotate_left(32);
        *v2 = v2.wrapping_add(*v3);
        *v3 = v3.rotate_left(16);
        *v3 ^= *v2;
        *v0 = v0.wrapping_add(*v3);
        *v3 = v3.rotate_left(21);
        *v3 ^= *v0;
        *v2 = v2.wrapping_add(*v1);
        *v1 = v1.rotate_left(17);
        *v1 ^= *v2;
        *v2 = v2.rotate_left(32);
    };
    let mut chunks = data.chunks_exact(8);
    for chunk in &mut chunks {
        let m = u64::from_le_bytes(chunk.try_into().expect("chunks of 8"));
        v3 ^= m;
        round(&mut v0, &mut v1, &mut v2, &mut v3);
        v0 ^= m;
    }
    let mut tail = [0u8; 8];
    tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    let b = u64::from_le_bytes(tail) | ((data.len() as u64) << 56);
    v3 ^= b;
    round(&mut v0, &mut v1, &mut v2, &mut v3);
    v0 ^= b;
    v2 ^= 0xff;
    for _ in 0..3 {
        round(&mut v0, &mut v1, &mut v2, &mut v3);
    }
    v0 ^ v1 ^ v2 ^ v3
}

/// Python's `random.Random`: the MT19937 generator with CPython's integer seeding.
#[derive(Clone)]
pub struct PyRandom {
    state: [u32; 624],
    index: usize,
    /// Seeded but not twisted yet: the first outputs are computed word by word
    /// (a `choice` needs one or two of them, a full twist costs 624).
    lazy: bool,
}

impl std::fmt::Debug for PyRandom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PyRandom")
            .field("index", &self.index)
            .finish()
    }
}

/// CPython's `init_by_array` for keys of one or two words (with their length), on
/// each state, with its wrapping index written out as straight loops. The steps
/// of the states interleave: each state's mixing is one long dependency chain, so
/// the chains of several fill the time one leaves idle.
fn mix_keys<const N: usize>(states: &mut [[u32; 624]; N], keys: &[([u32; 2], usize); N]) {
    // `key[j] + j` for the j of step `s`: j cycles through the key.
    let addend = |n: usize, s: usize| {
        let (key, len) = keys[n];
        let j = s % len;
        key[j].wrapping_add(j as u32)
    };
    let first = |mt: &mut [u32; 624], i: usize, add: u32| {
        let prev = mt[i - 1];
        mt[i] = (mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_664_525)).wrapping_add(add);
    };
    let second = |mt: &mut [u32; 624], i: usize| {
        let prev = mt[i - 1];
        mt[i] = (mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
    };
    // 624 steps from i = 1: i runs to 623, wraps to 1, and one more step.
    for i in 1..624 {
        for (n, mt) in states.iter_mut().enumerate() {
            first(mt, i, addend(n, i - 1));
        }
    }
    for (n, mt) in states.iter_mut().enumerate() {
        mt[0] = mt[623];
        first(mt, 1, addend(n, 623));
    }
    // 623 steps from i = 2: i runs to 623, wraps to 1, and one more step.
    for i in 2..624 {
        for mt in states.iter_mut() {
            second(mt, i);
        }
    }
    for mt in states.iter_mut() {
        mt[0] = mt[623];
        second(mt, 1);
        mt[0] = 0x8000_0000;
    }
}

/// `init_genrand(19650218)`, the state every integer seed starts from; computed at
/// compile time because it never changes.
const GENRAND_19650218: [u32; 624] = {
    let mut state = [0u32; 624];
    state[0] = 19_650_218;
    let mut i = 1;
    while i < 624 {
        let prev = state[i - 1];
        state[i] = 1_812_433_253u32
            .wrapping_mul(prev ^ (prev >> 30))
            .wrapping_add(i as u32);
        i += 1;
    }
    state
};

/// Outputs below this index can be computed from the untwisted state: the twist of
/// word `k` reads words `k`, `k + 1` and `k + 397`, none of them twisted yet.
const LAZY_TWIST_LIMIT: usize = 624 - 397;

impl PyRandom {
    /// `random.Random(seed)` for an integer seed (its absolute value is used).
    pub fn new(seed: i64) -> Self {
        let [rng] = Self::new_many([seed]);
        rng
    }

    /// `random.Random(seed)` for each seed. Seeding is one long dependency chain
    /// per generator (1,247 multiply-and-mix steps); seeding several at once runs
    /// their chains side by side, in about the time of one.
    pub fn new_many<const N: usize>(seeds: [i64; N]) -> [Self; N] {
        // The key is the 32-bit words of |seed|, as few as hold it (at least one).
        let keys = seeds.map(|seed| {
            let n = seed.unsigned_abs();
            (
                [n as u32, (n >> 32) as u32],
                if n >> 32 != 0 { 2 } else { 1 },
            )
        });
        let mut states = [GENRAND_19650218; N];
        mix_keys(&mut states, &keys);
        states.map(|state| Self {
            state,
            index: 0,
            lazy: true,
        })
    }

    /// The next 32 random bits (`genrand_uint32`).
    pub fn next_u32(&mut self) -> u32 {
        let mut y = if self.lazy && self.index < LAZY_TWIST_LIMIT {
            Self::twisted(&self.state, self.index)
        } else {
            if self.lazy || self.index >= 624 {
                // The first full twist, or a later one; a lazily read prefix is
                // recomputed identically by it.
                self.lazy = false;
                let index = if self.index >= 624 { 0 } else { self.index };
                self.twist();
                self.index = index;
            }
            self.state[self.index]
        };
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// Word `k` of the twisted state, for `k` whose inputs are not twisted yet.
    fn twisted(mt: &[u32; 624], k: usize) -> u32 {
        let y = (mt[k] & 0x8000_0000) | (mt[k + 1] & 0x7fff_ffff);
        let mag = if y & 1 == 0 { 0 } else { 0x9908_b0df };
        mt[k + 397] ^ (y >> 1) ^ mag
    }

    fn twist(&mut self) {
        const UPPER: u32 = 0x8000_0000;
        const LOWER: u32 = 0x7fff_ffff;
        let mt = &mut self.state;
        for k in 0..624 {
            let y = (mt[k] & UPPER) | (mt[(k + 1) % 624] & LOWER);
            let mag = if y & 1 == 0 { 0 } else { 0x9908_b0df };
            mt[k] = mt[(k + 397) % 624] ^ (y >> 1) ^ mag;
        }
        self.index = 0;
    }

    /// The index `random.choice` picks among `n > 0` items (`_randbelow` by rejection).
    pub fn choice_index(&mut self, n: usize) -> usize {
        assert!(n > 0, "choice from an empty sequence");
        assert!(n <= u32::MAX as usize, "choice over more than 2^32 items");
        let k = usize::BITS - n.leading_zeros();
        loop {
            let r = (self.next_u32() >> (32 - k)) as usize;
            if r < n {
                return r;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CPython's `init_by_array` and `genrand_uint32`, written plainly: the oracle
    /// for the compile-time base state, the unrolled mixing and the lazy twist.
    fn plain_mt(key: &[u32], draws: usize) -> Vec<u32> {
        let mut mt = [0u32; 624];
        mt[0] = 19_650_218;
        for i in 1..624 {
            mt[i] = 1_812_433_253u32
                .wrapping_mul(mt[i - 1] ^ (mt[i - 1] >> 30))
                .wrapping_add(i as u32);
        }
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..624.max(key.len()) {
            let prev = mt[i - 1];
            mt[i] = (mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j = (j + 1) % key.len();
            if i >= 624 {
                mt[0] = mt[623];
                i = 1;
            }
        }
        for _ in 0..623 {
            let prev = mt[i - 1];
            mt[i] =
                (mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= 624 {
                mt[0] = mt[623];
                i = 1;
            }
        }
        mt[0] = 0x8000_0000;
        let mut index = 624;
        (0..draws)
            .map(|_| {
                if index >= 624 {
                    for k in 0..624 {
                        let y = (mt[k] & 0x8000_0000) | (mt[(k + 1) % 624] & 0x7fff_ffff);
                        let mag = if y & 1 == 0 { 0 } else { 0x9908_b0df };
                        mt[k] = mt[(k + 397) % 624] ^ (y >> 1) ^ mag;
                    }
                    index = 0;
                }
                let mut y = mt[index];
                index += 1;
                y ^= y >> 11;
                y ^= (y << 7) & 0x9d2c_5680;
                y ^= (y << 15) & 0xefc6_0000;
                y ^ (y >> 18)
            })
            .collect()
    }

    #[test]
    fn fast_seeding_and_lazy_twist_match_the_plain_algorithm() {
        for seed in [
            0i64,
            1,
            -7,
            123_456_789,
            (1 << 40) + 5,
            i64::MIN + 1,
            i64::MAX,
        ] {
            let n = seed.unsigned_abs();
            let key: Vec<u32> = if n >> 32 != 0 {
                vec![n as u32, (n >> 32) as u32]
            } else {
                vec![n as u32]
            };
            // Past the lazy prefix, through a full twist and into the next one.
            let expected = plain_mt(&key, 1500);
            let mut rng = PyRandom::new(seed);
            let got: Vec<u32> = (0..1500).map(|_| rng.next_u32()).collect();
            assert_eq!(got, expected, "seed {seed}");
        }
    }

    #[test]
    fn seeding_several_at_once_equals_seeding_each() {
        let seeds = [3i64, -(1 << 40) - 7];
        let [mut a, mut b] = PyRandom::new_many(seeds);
        let (mut one, mut two) = (PyRandom::new(seeds[0]), PyRandom::new(seeds[1]));
        for _ in 0..700 {
            assert_eq!(a.next_u32(), one.next_u32());
            assert_eq!(b.next_u32(), two.next_u32());
        }
    }

    #[test]
    fn mt19937_matches_python_random() {
        // random.Random(0).getrandbits(32), three times.
        let mut rng = PyRandom::new(0);
        assert_eq!(
            [rng.next_u32(), rng.next_u32(), rng.next_u32()],
            [3_626_764_237, 1_654_615_998, 3_255_389_356]
        );
        let mut rng = PyRandom::new(-42);
        assert_eq!(rng.next_u32(), PyRandom::new(42).next_u32());
    }

    #[test]
    fn bytes_hash_matches_cpython_311_with_hashseed_0() {
        assert_eq!(hash_bytes(b""), 0);
        // Values printed by CPython 3.11 under PYTHONHASHSEED=0.
        assert_eq!(hash_bytes(b"abc"), -4_594_863_902_769_663_758);
        assert_eq!(hash_bytes_int_tuple(b"abc", 5), -5_923_321_117_546_337);
    }

    #[test]
    fn choice_matches_python_for_two_word_seeds() {
        let mut rng = PyRandom::new((1 << 40) + 5);
        assert_eq!(rng.next_u32(), 2_166_296_868);
        assert_eq!(rng.choice_index(361), 264);
    }
}
