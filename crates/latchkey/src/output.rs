//! What the `admin` and `app` commands print: one JSON object on stdout, compact, or indented with `--pretty` or
//! on a terminal, with times (`*_at`, `since`, `hour`) in RFC 3339; and a failure as one JSON object on stderr,
//! `{"error", "error_description", "fields"}`, with an exit code of [`Exit`] (documented in the README).

use latchkey_admin::AdminError;
use latchkey_server::error::admin_status;
use serde_json::{json, Value};
use std::io::IsTerminal;
use std::process::ExitCode;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// The exit codes of a failed command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Any other failure (the store failed, a file could not be read).
    Failure = 1,
    /// The command line is wrong (clap's own exit code).
    Usage = 2,
    /// The thing named does not exist.
    NotFound = 3,
    /// The change conflicts with the current state (already done, the last owner).
    Conflict = 4,
    /// The request breaks a rule, is not allowed or not confirmed, or names no store.
    Refused = 5,
    /// The store or the server cannot be reached.
    Unreachable = 6,
    /// The user interrupted the command (Ctrl-C): 128 + SIGINT, as shells report it.
    Interrupted = 130,
}

impl Exit {
    /// The exit code that means what an HTTP status means.
    pub fn for_status(status: u16) -> Self {
        match status {
            404 => Self::NotFound,
            409 => Self::Conflict,
            400 | 401 | 403 => Self::Refused,
            503 => Self::Unreachable,
            _ => Self::Failure,
        }
    }
}

/// Prints a result on stdout.
pub fn print(mut value: Value, pretty: bool) -> ExitCode {
    rfc3339_times(&mut value);
    let text = if pretty || std::io::stdout().is_terminal() {
        serde_json::to_string_pretty(&value)
    } else {
        serde_json::to_string(&value)
    };
    println!("{}", text.unwrap_or_default());
    ExitCode::SUCCESS
}

/// Prints a failure on stderr and gives its exit code.
pub fn fail(exit: Exit, error: &str, description: String) -> ExitCode {
    eprintln!("{}", json!({ "error": error, "error_description": description }));
    ExitCode::from(exit as u8)
}

/// Prints an administrative error on stderr and gives its exit code.
pub fn admin_failure(e: &AdminError) -> ExitCode {
    let (status, error) = admin_status(e);
    let exit = Exit::for_status(status.as_u16());
    let how = if matches!(e, AdminError::Unconfirmed(_)) { " (--confirm)" } else { "" };
    let mut body = json!({ "error": error, "error_description": format!("{e}{how}") });
    if let AdminError::Fields(fields) = e {
        body["fields"] = fields.iter().map(|f| json!({ "field": f.field, "message": f.message })).collect();
    }
    eprintln!("{body}");
    ExitCode::from(exit as u8)
}

/// Rewrites the times in a result (seconds since the epoch under `*_at`, `since` and `hour`) as RFC 3339.
fn rfc3339_times(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                let is_time = key.ends_with("_at") || key == "since" || key == "hour";
                match v.as_i64().and_then(|t| OffsetDateTime::from_unix_timestamp(t).ok()) {
                    Some(t) if is_time => *v = t.format(&Rfc3339).map_or(Value::Null, Value::from),
                    _ => rfc3339_times(v),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(rfc3339_times),
        _ => {}
    }
}
