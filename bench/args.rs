//! The command-line options every benchmark takes: `--name value` after `cargo bench --bench
//! x --`, with a default when absent or unreadable.

/// The value after `name` on the command line, or `default`.
pub fn arg<T: std::str::FromStr>(name: &str, default: T) -> T {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
