//! Context-tools benchmark: on a generated repository of 10,000 files (varied directories and
//! extensions, a tenth of them ignored by `.gitignore`), times `get_project_structure` at depth 5
//! and a regular-expression `search_files`, through `Toolbox::call` as the agent calls them.
//! Prints a Markdown table of medians (see bench/README.md).
//!
//! `cargo bench --bench context [-- --files 10000 --runs 9]`

#[path = "args.rs"]
mod args;
use args::arg;
use std::path::Path;
use std::time::{Duration, Instant};

use vibeloop::agent::Toolbox;
use vibeloop::agent::tools::WriteScope;

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// Writes `files` files; every 97th defines a `handle_request_N` function. Returns how many
/// files are ignored by `.gitignore`.
fn generate(root: &Path, files: usize) -> usize {
    const TOPS: [&str; 6] = ["src", "lib", "tests", "docs", "web", "tools"];
    const EXTS: [&str; 8] = ["py", "rs", "js", "ts", "md", "txt", "json", "toml"];
    std::fs::write(root.join(".gitignore"), "build/\nnode_modules/\n*.log\n").unwrap();
    let mut ignored = 0;
    for i in 0..files {
        let rel = match i % 10 {
            // A tenth is ignored: build output, dependencies, logs.
            0 => {
                ignored += 1;
                match i % 30 {
                    0 => format!("build/out_{}/obj_{i}.o", i % 17),
                    10 => format!("web/node_modules/pkg_{}/index_{i}.js", i % 23),
                    _ => format!("logs/run_{i}.log"),
                }
            }
            _ => {
                let top = TOPS[i % TOPS.len()];
                let ext = EXTS[(i / 7) % EXTS.len()];
                match i % 3 {
                    0 => format!("{top}/file_{i}.{ext}"),
                    1 => format!("{top}/pkg_{}/mod_{}/file_{i}.{ext}", i % 11, i % 5),
                    _ => format!(
                        "{top}/pkg_{}/mod_{}/deep_{}/deeper_{}/file_{i}.{ext}",
                        i % 11,
                        i % 5,
                        i % 3,
                        i % 2
                    ),
                }
            }
        };
        let path = root.join(&rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut body = format!("// {rel}\nconst VALUE_{i}: u32 = {i};\n");
        for line in 0..(i % 40) {
            body.push_str(&format!("let x{line} = compute({line}, \"text {i}\");\n"));
        }
        if i % 97 == 0 {
            body.push_str(&format!(
                "fn handle_request_{i}(req: Request) -> Response {{\n"
            ));
        }
        std::fs::write(path, body).unwrap();
    }
    ignored
}

fn main() {
    let files = arg("--files", 10_000);
    let runs = arg("--runs", 9).max(1);
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let ignored = generate(dir.path(), files);
    eprintln!(
        "generated {files} files ({ignored} ignored) in {}",
        ms(started.elapsed())
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut tb = Toolbox::new(dir.path().to_owned(), WriteScope::None);
    let cases = [
        ("get_project_structure", r#"{"max_depth":5}"#, "depth 5"),
        (
            "search_files",
            r#"{"pattern":"fn handle_request_\\d+\\(","max_results":1000}"#,
            "regex `fn handle_request_\\d+\\(`",
        ),
    ];
    println!("| tool | over | median | min | max | answer | target |");
    println!("|---|---|---|---|---|---|---|");
    let mut total = Duration::ZERO;
    for (name, args, what) in cases {
        let mut times = Vec::new();
        let mut answer = String::new();
        // One warm-up run (page cache, allocator), then the measured runs.
        for _ in 0..=runs {
            let t = Instant::now();
            answer = rt.block_on(tb.call(name, args)).unwrap();
            times.push(t.elapsed());
        }
        times.remove(0);
        times.sort();
        let median = times[times.len() / 2];
        total += median;
        println!(
            "| `{name}` {what} | {} files | {} | {} | {} | {} lines | ≤ 100 ms |",
            files - ignored,
            ms(median),
            ms(times[0]),
            ms(times[times.len() - 1]),
            answer.lines().count()
        );
    }
    println!(
        "| both, one after the other | | {} | | | | ≤ 100 ms each |",
        ms(total)
    );
}
