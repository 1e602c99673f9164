//! Opening the system browser (never an embedded web view, which the server refuses).
//!
//! `$BROWSER` is honoured as on Unix systems: a `:`-separated list of commands, tried in order; `%s` in a
//! command is replaced by the URL, otherwise the URL is appended. Without it, the platform's opener is used.

use crate::Error;
use std::process::{Command, Stdio};

/// Opens `url` in the user's browser. An error means no browser could be started: show the URL to the user.
pub fn open(url: &str) -> Result<(), Error> {
    if let Ok(list) = std::env::var("BROWSER") {
        for entry in list.split(':').map(str::trim).filter(|s| !s.is_empty()) {
            if run(entry, url) {
                return Ok(());
            }
        }
    }
    let openers: &[&str] = if cfg!(target_os = "macos") {
        &["open"]
    } else if cfg!(windows) {
        &["explorer"]
    } else {
        &["xdg-open", "sensible-browser", "x-www-browser"]
    };
    for opener in openers {
        if run(opener, url) {
            return Ok(());
        }
    }
    Err(Error::Transport("no browser could be started".into()))
}

/// Runs one browser command; true when it started.
fn run(command: &str, url: &str) -> bool {
    let mut parts: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
    if parts.is_empty() {
        return false;
    }
    if parts.iter().any(|p| p.contains("%s")) {
        for p in &mut parts {
            *p = p.replace("%s", url);
        }
    } else {
        parts.push(url.to_owned());
    }
    Command::new(&parts[0])
        .args(&parts[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .is_ok()
}

#[cfg(test)]
mod tests;
