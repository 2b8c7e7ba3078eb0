//! The tools as the model sees them: names, descriptions and JSON-Schema parameters. The
//! toolbox filters this list by its write scope and command runner.

use serde_json::{Value, json};

use super::CommandRunner;
use crate::llm::ToolSpec;

fn object(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

fn string(description: &str) -> Value {
    json!({ "type": "string", "description": description })
}

fn integer(description: &str) -> Value {
    json!({ "type": "integer", "minimum": 1, "description": description })
}

fn globs(description: &str) -> Value {
    json!({ "type": "array", "items": { "type": "string" }, "description": description })
}

const PATH: &str = "relative to the repository root";

/// Every tool; `run_command` lists the runner's names, `shell` its time limit.
pub fn all(runner: Option<&CommandRunner>) -> Vec<ToolSpec> {
    let names: Vec<&str> = runner.map(CommandRunner::names).unwrap_or_default();
    let timeout = runner.map_or(0, |r| r.timeout.as_secs());
    vec![
        ToolSpec {
            name: "list_files",
            description: "List the files under a directory, recursively (.gitignore respected).",
            parameters: object(
                json!({ "path": string("directory, relative to the repository root; default: the root") }),
                &[],
            ),
        },
        ToolSpec {
            name: "read_file",
            description: "Read a text file. Each line comes prefixed with its number and '| ' (not part of the file), under a header 'path (lines a-b of N)'. Long files come in parts of 2,000 lines: ask for the next part with start_line.",
            parameters: object(
                json!({
                    "path": string(PATH),
                    "start_line": integer("first line to read, 1-based; default 1"),
                    "end_line": integer("last line to read, inclusive; default: the end"),
                }),
                &["path"],
            ),
        },
        ToolSpec {
            name: "search_files",
            description: "Search file contents with a regular expression (Rust regex syntax; (?i) for case-insensitive), recursively, .gitignore respected. Answers 'path:line: text' lines.",
            parameters: object(
                json!({
                    "pattern": string("regular expression matched against each line"),
                    "path": string("directory or file to search; default: the whole repository"),
                    "glob": string("only files matching this glob: '*.py' matches names at any depth, 'src/**/*.rs' matches paths"),
                    "max_results": integer("most matching lines to return; default 200, at most 1000"),
                }),
                &["pattern"],
            ),
        },
        ToolSpec {
            name: "get_project_structure",
            description: "Show the repository (or a directory) as an indented tree, directories first, .gitignore respected. Directories not expanded show how many files they hold.",
            parameters: object(
                json!({
                    "path": string("directory to show; default: the root"),
                    "max_depth": { "type": "integer", "minimum": 1, "maximum": 5, "description": "levels to expand; default 3, at most 5" },
                    "include": globs("only files matching one of these globs ('*.py', 'src/**')"),
                    "exclude": globs("leave out files and directories matching these globs ('tests/', '*.lock')"),
                    "max_files": integer("most entries to show; default 500"),
                }),
                &[],
            ),
        },
        ToolSpec {
            name: "write_file",
            description: "Create a file, or replace a whole file, with the given content. Prefer edit_file or apply_patch to change part of an existing file.",
            parameters: object(
                json!({ "path": string(PATH), "content": string("the complete new content") }),
                &["path", "content"],
            ),
        },
        ToolSpec {
            name: "edit_file",
            description: "Change part of a file, in one of two ways: give search and replace (search must occur exactly once, copied exactly from the file without read_file's line-number prefixes, unless replace_all is true), or give start_line, end_line and content to replace that line range (end_line = start_line - 1 inserts before start_line).",
            parameters: object(
                json!({
                    "path": string(PATH),
                    "search": string("exact text to find"),
                    "replace": string("text to put in its place"),
                    "replace_all": { "type": "boolean", "description": "replace every occurrence; default false" },
                    "start_line": integer("first line to replace, 1-based"),
                    "end_line": { "type": "integer", "minimum": 0, "description": "last line to replace, inclusive" },
                    "content": string("the new lines for that range"),
                }),
                &["path"],
            ),
        },
        ToolSpec {
            name: "apply_patch",
            description: "Apply a unified diff to one or more files, all or nothing. Each file starts with '--- a/path' and '+++ b/path' ('--- /dev/null' creates a file, '+++ /dev/null' deletes one) followed by '@@ -start,count +start,count @@' hunks with ' ' context, '-' removed and '+' added lines. Context must match the file.",
            parameters: object(json!({ "patch": string("the unified diff") }), &["patch"]),
        },
        ToolSpec {
            name: "delete_file",
            description: "Delete a file.",
            parameters: object(json!({ "path": string(PATH) }), &["path"]),
        },
        ToolSpec {
            name: "move_file",
            description: "Move or rename a file. An existing destination is only replaced with overwrite: true.",
            parameters: object(
                json!({
                    "from": string(PATH),
                    "to": string(PATH),
                    "overwrite": { "type": "boolean", "description": "replace an existing destination; default false" },
                }),
                &["from", "to"],
            ),
        },
        ToolSpec {
            name: "run_command",
            description: "Run one of the repository's configured commands by name (not a command line) in the sandbox. Answers the exit status and the end of the output.",
            parameters: object(
                json!({ "name": { "type": "string", "enum": names, "description": "which command" } }),
                &["name"],
            ),
        },
        ToolSpec {
            name: "shell",
            description: "Run a command line with sh in the sandbox, at the repository root: reproduce a problem with a short script, run one test or one package's tests, print a value, list what a build made. No network. Files you may not change are read-only or put back afterwards; files a command creates are not part of the change (write them with write_file). Answers the exit status and the output (its beginning and end when long, with its size).",
            parameters: object(
                json!({
                    "command": string("the command line, e.g. 'python3 -m pytest -q tests/test_x.py::test_y' or 'cargo test -p one_crate name'"),
                    "timeout_seconds": integer(&format!("stop it after this many seconds; default and most: {timeout} s")),
                }),
                &["command"],
            ),
        },
    ]
}
