//! Rebuilds the crate when a migration file is added, renamed or removed: `sqlx::migrate!` embeds the folders at
//! build time, and cargo tracks only the files it read (sqlx's advice, `sqlx migrate build-script`).

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
