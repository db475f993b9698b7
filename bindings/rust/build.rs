//! Links libnativeprof.so. Where it is looked for, first match wins:
//!
//! 1. `NATIVEPROF_LIB_DIR`: the directory holding `libnativeprof.so` (a CMake build's `library/`,
//!    or `<prefix>/lib` of an install);
//! 2. `NATIVEPROF_PREFIX`: an install prefix (`<prefix>/lib`, `lib64`, `lib/<multiarch>`);
//! 3. the build tree of the checkout this crate sits in (`../../build/library`);
//! 4. `/usr/local` and `/usr` (same subdirectories as 2).
//!
//! Nothing found: a warning, and the linker's own search path is tried (`-lnativeprof`).
//!
//! At run time, binaries need to find the library too. This build script (a) puts an rpath to
//! the directory into this crate's own unit tests, examples and benches, and (b) links the library
//! into `OUT_DIR/lib` and adds that to the link search path: Cargo puts search paths inside the
//! target directory on `LD_LIBRARY_PATH` for `cargo test`, `cargo bench` and `cargo run`, so the
//! tests and benches of crates that depend on this one find it as well. Binaries run by other
//! means need `LD_LIBRARY_PATH`, an installed library, or an rpath of their own: the directory
//! is passed to dependents' build scripts as `DEP_NATIVEPROF_LIB_DIR` (the `links` key).
use std::env;
use std::fs;
use std::path::{Path, PathBuf};

const LIB: &str = "libnativeprof.so";

fn prefix_dirs(prefix: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![prefix.join("lib"), prefix.join("lib64")];
    if let (Ok(arch), Ok(os)) = (
        env::var("CARGO_CFG_TARGET_ARCH"),
        env::var("CARGO_CFG_TARGET_OS"),
    ) {
        let env_suffix = env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
        dirs.push(prefix.join("lib").join(format!("{arch}-{os}-{env_suffix}")));
    }
    dirs
}

fn find_lib_dir() -> Option<(PathBuf, &'static str)> {
    if let Some(dir) = env::var_os("NATIVEPROF_LIB_DIR") {
        return Some((PathBuf::from(dir), "NATIVEPROF_LIB_DIR"));
    }
    let mut candidates: Vec<(PathBuf, &'static str)> = Vec::new();
    if let Some(prefix) = env::var_os("NATIVEPROF_PREFIX") {
        for d in prefix_dirs(Path::new(&prefix)) {
            candidates.push((d, "NATIVEPROF_PREFIX"));
        }
    }
    if let Some(manifest) = env::var_os("CARGO_MANIFEST_DIR") {
        candidates.push((
            Path::new(&manifest).join("../../build/library"),
            "the checkout's build/",
        ));
    }
    for prefix in ["/usr/local", "/usr"] {
        for d in prefix_dirs(Path::new(prefix)) {
            candidates.push((d, "the system prefixes"));
        }
    }
    candidates.into_iter().find(|(d, _)| d.join(LIB).exists())
}

fn main() {
    println!("cargo:rerun-if-env-changed=NATIVEPROF_LIB_DIR");
    println!("cargo:rerun-if-env-changed=NATIVEPROF_PREFIX");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-link-lib=dylib=nativeprof");

    let Some((dir, source)) = find_lib_dir() else {
        println!(
            "cargo:warning=libnativeprof.so not found; set NATIVEPROF_LIB_DIR to the directory \
             holding it (a CMake build's tools/ or an install's lib/) or NATIVEPROF_PREFIX"
        );
        return;
    };
    let dir = dir.canonicalize().unwrap_or(dir);
    let lib = dir.join(LIB);
    if !lib.exists() {
        println!(
            "cargo:warning={} (from {source}) does not exist",
            lib.display()
        );
    }
    // Relink (and rerun the tests) when the library is rebuilt.
    println!("cargo:rerun-if-changed={}", lib.display());
    println!("cargo:lib_dir={}", dir.display());

    // (b) of the file comment: symlinks to the library inside the target directory.
    let out_lib = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("lib");
    let mut linked = false;
    if fs::create_dir_all(&out_lib).is_ok() {
        linked = true;
        if let Ok(entries) = fs::read_dir(&dir) {
            for entry in entries.flatten() {
                let name = entry.file_name();
                if !name.to_string_lossy().starts_with(LIB) {
                    continue;
                }
                let link = out_lib.join(&name);
                let _ = fs::remove_file(&link);
                if std::os::unix::fs::symlink(entry.path(), &link).is_err() {
                    linked = false;
                }
            }
        }
    }
    if linked {
        println!("cargo:rustc-link-search=native={}", out_lib.display());
    } else {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
    // (a): this crate's own linked targets (its unit-test binary, examples, benches) run from
    // anywhere. Cargo passes rustc-link-arg to no dependent.
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
}
