//! The examples' options: `--name value` on the command line, else an environment variable.

/// The value of `--name` among the command line's arguments, else the environment variable `env` when it is set
/// and not empty.
pub fn arg(name: &str, env: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = format!("--{name}");
    args.iter()
        .position(|a| *a == flag)
        .and_then(|i| args.get(i + 1).cloned())
        .or_else(|| std::env::var(env).ok().filter(|v| !v.is_empty()))
}
