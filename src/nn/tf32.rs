//! Keeping `f32` exact on CUDA.
//!
//! libtorch lets cuDNN run `f32` convolutions on the tensor cores in TF32 (10
//! bits of mantissa) unless told otherwise, and tch has no call for telling it.
//! On the lent H100 that moved the shared models' outputs by up to 2.6e-2, far
//! outside the goldens' tolerance, while with TF32 off five of six models matched
//! as on the CPU (`scripts/gpu-check`, models/README.md). So `f32` means IEEE
//! float32 here too; the fast formats are asked for by name (`--precision bf16`).

/// NVIDIA's switch for TF32 in cuBLAS and cuDNN: `0` turns it off in the process.
pub const TF32_OVERRIDE: &str = "NVIDIA_TF32_OVERRIDE";

/// Sets `NVIDIA_TF32_OVERRIDE=0` for this process unless the user has set it
/// (`NVIDIA_TF32_OVERRIDE=1` in the environment keeps libtorch's TF32 default).
/// The CUDA libraries read it when they start, which is after this.
///
/// Call it once at start-up, before any thread starts.
// Setting the environment is unsafe once other threads may read it; at start-up
// none exist. std has no safe alternative, and the CUDA libraries read only it.
#[allow(unsafe_code)]
pub fn keep_f32_exact_on_cuda() {
    if std::env::var_os(TF32_OVERRIDE).is_none() {
        // SAFETY: called first thing in `main`, before any thread is spawned, so
        // nothing can read the environment concurrently.
        unsafe { std::env::set_var(TF32_OVERRIDE, "0") };
    }
}
