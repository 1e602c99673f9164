use super::*;
use std::path::Path;
use std::time::{Duration, Instant};

const URL: &str = "https://as.example/authorize?client_id=a&state=s";

/// A browser stand-in that writes its arguments, one a line, to `out`.
#[cfg(unix)]
fn fake_browser(dir: &Path, out: &Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    let script = dir.join("browser.sh");
    let body = format!("#!/bin/sh\nprintf '%s\\n' \"$@\" > '{0}.tmp' && mv '{0}.tmp' '{0}'\n", out.display());
    std::fs::write(&script, body).expect("write");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    script.display().to_string()
}

fn wait_for(path: &Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            return text;
        }
        assert!(Instant::now() < deadline, "the browser command never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs the fake browser; a spawn that failed is tried again a few times, since a script written a moment ago can be
/// refused with ETXTBSY while another test thread's fork still holds it open for writing.
#[cfg(unix)]
fn run_fake(command: &str) -> bool {
    (0..5).any(|_| {
        let ok = run(command, URL);
        if !ok {
            std::thread::sleep(Duration::from_millis(50));
        }
        ok
    })
}

#[cfg(unix)]
#[test]
fn a_browser_command_gets_the_url_appended() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("args");
    assert!(run_fake(&fake_browser(dir.path(), &out)));
    assert_eq!(wait_for(&out), format!("{URL}\n"));
}

#[cfg(unix)]
#[test]
fn percent_s_in_a_browser_command_is_replaced_by_the_url_and_nothing_is_appended() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("args");
    let command = format!("{} --new-window %s --flag", fake_browser(dir.path(), &out));
    assert!(run_fake(&command));
    assert_eq!(wait_for(&out), format!("--new-window\n{URL}\n--flag\n"));
}

#[test]
fn a_command_that_cannot_start_reports_failure_so_the_next_is_tried() {
    assert!(!run("/nonexistent/browser", URL));
    assert!(!run("   ", URL), "an empty entry");
}
