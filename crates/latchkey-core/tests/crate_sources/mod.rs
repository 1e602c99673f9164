//! Reading a crate's sources for the checks over them (`module_cycles`, `randomness`): which files, and their code
//! without comments and tests.

use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, but the tests' (`tests.rs`, `tests/`).
pub fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() && name != "tests" {
            sources(&path, out);
        } else if name.ends_with(".rs") && name != "tests.rs" {
            out.push(path);
        }
    }
}

/// The code of a file without its comments and its test module.
pub fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}
