//! Where the repository is, found when the program runs.
//!
//! Not `env!("CARGO_MANIFEST_DIR")`: that is baked in when this crate is compiled, and a cargo
//! target directory shared between checkouts (CI reuses one between clones at other paths) keeps
//! the library compiled in the first checkout, so the baked path names a tree that may not exist.

use std::path::{Path, PathBuf};

/// The workspace root (the directory holding `Cargo.lock` and `functions/`): looked for above
/// the running package's directory (`CARGO_MANIFEST_DIR` as cargo sets it for `cargo test` and
/// `cargo run`), then above the working directory, then above where this crate was compiled.
pub fn workspace_root() -> PathBuf {
    let runtime = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
    let cwd = std::env::current_dir().ok();
    let compiled = Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    [runtime, cwd, compiled]
        .into_iter()
        .flatten()
        .find_map(|start| start.ancestors().find(|dir| is_root(dir)).map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."))
}

fn is_root(dir: &Path) -> bool {
    dir.join("Cargo.lock").is_file() && dir.join("functions").is_dir()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_is_found_above_the_running_package() {
        let root = workspace_root();
        assert!(root.join("Cargo.lock").is_file() && root.join("functions/core").is_dir(), "{}", root.display());
    }
}
