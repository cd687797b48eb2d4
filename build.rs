//! Release links of the `k1s` binary order the functions that start-up, light traffic and an
//! idle cluster run next to each other (`build/hot-symbols.txt`, made by
//! `scripts/hot-symbols.sh`). The kernel maps code in 64 KiB runs around each page touched, so
//! with the hot functions scattered among cold ones an idle server kept most of its 27 MB of
//! code resident; grouped, it maps little more than the code it runs.

use std::path::Path;

fn main() {
    let list = Path::new(env!("CARGO_MANIFEST_DIR")).join("build/hot-symbols.txt");
    println!("cargo:rerun-if-changed={}", list.display());
    println!("cargo:rerun-if-env-changed=RUSTFLAGS");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    // The ordering is an lld option; rustc links x86_64 Linux with its own lld. Elsewhere, or
    // when the user picks another linker, the list is not passed.
    let lld_target = std::env::var("TARGET").is_ok_and(|t| t == "x86_64-unknown-linux-gnu");
    let own_linker = std::env::var("RUSTFLAGS").is_ok_and(|f| f.contains("fuse-ld"))
        || std::env::var_os("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_some();
    if release && lld_target && !own_linker && list.exists() {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            list.display()
        );
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}
