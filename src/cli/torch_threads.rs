//! `--torch-threads`: libtorch's intra-op thread count.
//!
//! Every network of a process runs on its one inference thread
//! (`nn::service::hub`), so there is one libtorch thread team, and giving it
//! every core is fastest: `mbag evaluate` with an AZ assistant and a BC human on
//! 2 cores ran 93 env steps/s with 2 threads against 72 with 1, piKL 43 against
//! 25 (SPEED.md); the daemon's own work stays under 2 ms at p99 beside it
//! (`mbag bench daemon`). Before that thread existed, each service's thread
//! had a team of its own and the teams fought, which is why commands once
//! divided the cores among their workers.

use crate::nn::DeviceChoice;

/// Parses `--torch-threads`: a positive count, at most
/// [`THREADS`](super::numeric::THREADS)' end (libtorch takes an `i32`).
pub(crate) fn parse(text: &str) -> Result<usize, String> {
    super::numeric::count::<usize>(super::numeric::THREADS).parse(text)
}

/// The default on the CPU: every core.
pub(crate) fn default_count() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Sets libtorch's intra-op threads before any model runs: `requested`, or
/// [`default_count`] on the CPU. On CUDA the pool only does host-side work, so
/// libtorch keeps its own choice unless asked. Returns the count set.
pub(crate) fn apply(requested: Option<usize>, device: DeviceChoice) -> Option<usize> {
    let on_cpu = matches!(device.resolve(), Ok(tch::Device::Cpu));
    let n = match requested {
        Some(n) => n,
        None if on_cpu => default_count(),
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
        assert!(default_count() >= 1);
    }
}
