//! Embeds the migration folders: writes, for each of `migrations/sqlite` and `migrations/postgres`, the list of its
//! steps (`NNNN_name.sql`: number, name with spaces for underscores, the file's text) for
//! `crate::migrations` to include. Rebuilds the crate when a migration file is added, renamed, removed or changed.

use std::fmt::Write;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=migrations");
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    for engine in ["sqlite", "postgres"] {
        let dir =
            Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it")).join("migrations").join(engine);
        println!("cargo:rerun-if-changed={}", dir.display());
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .expect("the migration folder")
            .map(|e| e.expect("a folder entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "sql"))
            .collect();
        files.sort();
        let mut list = String::from("&[\n");
        for path in files {
            println!("cargo:rerun-if-changed={}", path.display());
            let stem = path.file_stem().and_then(|s| s.to_str()).expect("a UTF-8 file name");
            let (number, name) = stem.split_once('_').expect("NNNN_name.sql");
            let version: i64 = number.parse().expect("a numbered migration");
            writeln!(
                list,
                "    Step {{ version: {version}, description: {:?}, sql: include_str!({:?}) }},",
                name.replace('_', " "),
                path.display().to_string()
            )
            .expect("writing to a string");
        }
        list.push(']');
        std::fs::write(Path::new(&out).join(format!("{engine}_migrations.rs")), list).expect("writing the list");
    }
}
