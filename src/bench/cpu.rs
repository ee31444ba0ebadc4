//! How busy the cores were: the process's CPU time (every thread's, user and
//! system) over a stretch of wall time, as a share of all cores.

use std::time::Instant;

/// Linux reports `/proc/<pid>/stat` times in USER_HZ ticks, which the kernel's
/// ABI fixes at 100 a second whatever its internal tick rate.
const TICKS_PER_SECOND: f64 = 100.0;

/// The process's CPU seconds so far, or `None` where `/proc` cannot tell.
pub fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces; the fields after it start
    // at the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    let user: f64 = fields.get(11)?.parse().ok()?;
    let system: f64 = fields.get(12)?.parse().ok()?;
    Some((user + system) / TICKS_PER_SECOND)
}

/// Measures the cores' use from its creation to [`Utilisation::share`].
#[derive(Debug)]
pub struct Utilisation {
    started: Instant,
    cpu: Option<f64>,
}

impl Utilisation {
    /// Starts measuring now.
    pub fn start() -> Self {
        Self {
            started: Instant::now(),
            cpu: process_cpu_seconds(),
        }
    }

    /// CPU time since the start over wall time times the available cores
    /// (1.0: every core busy all along), or `None` without `/proc`.
    pub fn share(&self) -> Option<f64> {
        let wall = self.started.elapsed().as_secs_f64();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let cpu = process_cpu_seconds()? - self.cpu?;
        (wall > 0.0).then(|| cpu / (wall * cores))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_thread_shows_as_cpu_time() {
        let before = process_cpu_seconds().expect("/proc/self/stat on Linux");
        let started = Instant::now();
        let mut x = 0u64;
        while started.elapsed().as_millis() < 300 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let used = process_cpu_seconds().unwrap() - before;
        assert!(used > 0.15, "300 ms of spinning counted {used} s");
    }
}
