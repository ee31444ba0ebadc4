//! Links `libtorch_cuda.so` into every binary when the libtorch mbag builds
//! against has it (the CUDA install `scripts/setup` makes on a GPU machine).
//!
//! Nothing in mbag refers to that library's symbols: it registers CUDA with
//! libtorch from its static initialisers. The linker's default `--as-needed`
//! therefore drops it, and `tch::Cuda::is_available()` stays false on a GPU
//! machine (../shared/setup/LIBTORCH.md, pitfall 2). `--no-as-needed` keeps it as a
//! dependency. The CPU install has no such file, and nothing is added.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=LIBTORCH");
    let Some(libtorch) = std::env::var_os("LIBTORCH") else {
        return;
    };
    let lib = PathBuf::from(libtorch).join("lib");
    // The folder, not the file: a path that does not exist would rerun this
    // script on every build, and the folder's time changes when files come or go.
    println!("cargo:rerun-if-changed={}", lib.display());
    if lib.join("libtorch_cuda.so").is_file() {
        println!("cargo:rustc-link-arg=-Wl,--no-as-needed");
        println!("cargo:rustc-link-arg=-L{}", lib.display());
        println!("cargo:rustc-link-arg=-ltorch_cuda");
        println!("cargo:rustc-link-arg=-Wl,--as-needed");
    }
}
