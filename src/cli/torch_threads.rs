//! `--torch-threads`: libtorch's intra-op thread count for commands that run
//! networks next to threads of their own.
//!
//! libtorch sizes its intra-op pool to the machine's cores. When a command
//! already keeps those cores busy (episode workers, self-play, the daemon's
//! loop), every forward pass wakes that many more threads, which fight the
//! workers and each other: on 2 cores `mbag evaluate` with a network agent runs
//! about ten times slower than with one libtorch thread. So the default leaves
//! libtorch the cores the command's own workers do not use, and at least one.

use crate::nn::DeviceChoice;

/// Parses `--torch-threads`: a positive count, at most
/// [`THREADS`](super::numeric::THREADS)' end (libtorch takes an `i32`).
pub(crate) fn parse(text: &str) -> Result<usize, String> {
    super::numeric::count::<usize>(super::numeric::THREADS).parse(text)
}

/// The default for a command running `workers` threads of its own: the cores
/// left over, shared out, and at least 1.
pub(crate) fn default_for(workers: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    (cores / workers.max(1)).max(1)
}

/// Sets libtorch's intra-op threads before any model runs: `requested`, or
/// [`default_for`] `workers` on the CPU. On CUDA the pool only does host-side
/// work, so libtorch keeps its own choice unless asked. Returns the count set.
pub(crate) fn apply(
    requested: Option<usize>,
    device: DeviceChoice,
    workers: usize,
) -> Option<usize> {
    let on_cpu = matches!(device.resolve(), Ok(tch::Device::Cpu));
    let n = match requested {
        Some(n) => n,
        None if on_cpu => default_for(workers),
        None => return None,
    };
    tch::set_num_threads(n as i32);
    log::info!("libtorch intra-op threads: {n}");
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_and_garbage_are_refused() {
        assert_eq!(parse("3"), Ok(3));
        assert!(parse("0").unwrap_err().contains("from 1 to"));
        assert!(parse("4294967297").is_err());
        assert!(parse("two").is_err());
        assert!(default_for(usize::MAX) == 1 && default_for(0) >= 1);
    }
}
