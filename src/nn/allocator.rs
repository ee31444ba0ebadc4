//! Keeping freed tensor memory in the process.
//!
//! libtorch allocates every CPU tensor through `malloc`. glibc serves blocks above
//! its mmap threshold with fresh `mmap`s and returns them with `munmap` when freed,
//! so a training step that builds and drops the same large activations each time
//! pays a page fault and a zeroed page for every 4 KiB of them, every step. In a
//! profile of `mbag train bc` (64-row batches, one thread) the kernel's page-fault
//! and page-clearing code took a quarter of the samples; keeping freed memory in
//! the heap took a training step from about 780 to 600 ms and halved validation.
//! The price is that memory freed at the peak stays mapped for reuse, which is
//! what a long training or evaluation run wants anyway.

/// Tells glibc's `malloc` to serve large blocks from the heap instead of
/// `mmap`, and not to give freed heap back to the kernel below 1 GiB, so that
/// tensors freed by one step are reused by the next without page faults.
///
/// Call it once at start-up, before threads allocate. A no-op where the C
/// library is not glibc.
// The crate's one unsafe call: `mallopt` has no safe wrapper in a kept crate.
#[allow(unsafe_code)]
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `mallopt` only changes malloc's tuning parameters; it is safe to
        // call at any time, and these values are within its documented ranges.
        unsafe {
            libc::mallopt(libc::M_MMAP_MAX, 0);
            libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
        }
    }
}
