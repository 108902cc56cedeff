//! Compiles the sample fleet (`events/apps/*.json`, `events/sim/outcomes.json`) into `medic`, so
//! `medic sweep --simulate` works wherever `medic` runs, not only from the repository's root.

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    // Paths relative to the package, so a clone sharing a target directory with another (CI's)
    // reruns this for its own files (they are newer than the last run), and the files' texts
    // are written into the generated code rather than named by an absolute path.
    let events = PathBuf::from("../events");
    let apps_dir = events.join("apps");
    let outcomes = events.join("sim/outcomes.json");
    println!("cargo:rerun-if-changed={}", apps_dir.display());
    println!("cargo:rerun-if-changed={}", outcomes.display());

    let mut apps: Vec<PathBuf> = std::fs::read_dir(&apps_dir)
        .unwrap_or_else(|e| panic!("{}: {e}", apps_dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    apps.sort();
    let read = |path: &PathBuf| std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut code = String::from(
        "/// `events/apps/*.json` as compiled in: (file name, text), in name order.\npub const SAMPLE_APPS: &[(&str, &str)] = &[\n",
    );
    for path in &apps {
        println!("cargo:rerun-if-changed={}", path.display());
        let name = path.file_name().expect("a file name").to_string_lossy();
        writeln!(code, "    ({name:?}, {:?}),", read(path)).expect("writing to a String");
    }
    code.push_str("];\n");
    writeln!(code, "/// `events/sim/outcomes.json` as compiled in.\npub const SAMPLE_OUTCOMES: &str = {:?};", read(&outcomes))
        .expect("writing to a String");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR for build scripts")).join("samples.rs");
    std::fs::write(&out, code).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
}
