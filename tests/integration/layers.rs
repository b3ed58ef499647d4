//! The library's modules import only from modules before them in the data flow (lib.rs).

use std::path::{Path, PathBuf};

/// The library's top-level modules in data-flow order: each may import from those before it.
const LAYERS: [&str; 18] = [
    "model",
    "redact",
    "privacy",
    "memory",
    "temp_dirs",
    "config",
    "ingest",
    "generate",
    "lake",
    "load",
    "receiver",
    "engine",
    "detect",
    "classify",
    "output",
    "report",
    "pipeline",
    "watch",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The `crate::x` paths `source` names, outside comments.
fn crate_imports(source: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in source.lines().filter(|l| !l.trim_start().starts_with("//")) {
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + "crate::".len()..];
            let name: String = after.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            found.push(name);
            rest = after;
        }
    }
    found
}

#[test]
fn no_module_imports_from_a_later_stage() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let rank = |module: &str| LAYERS.iter().position(|m| *m == module);
    let mut wrong = Vec::new();
    let mut seen_modules = std::collections::BTreeSet::new();
    for file in files {
        let relative = file.strip_prefix(&src).unwrap();
        let first = relative.components().next().unwrap().as_os_str().to_string_lossy().trim_end_matches(".rs").to_owned();
        // The binary (main.rs, cli/) sits above the library; lib.rs names the modules.
        if ["main", "cli", "lib"].contains(&first.as_str()) {
            continue;
        }
        let own = rank(&first).unwrap_or_else(|| panic!("{first} is not in LAYERS: add it in its place in the data flow"));
        seen_modules.insert(first.clone());
        for imported in crate_imports(&std::fs::read_to_string(&file).unwrap()) {
            let Some(theirs) = rank(&imported) else { continue };
            if theirs > own {
                wrong.push(format!("{} imports crate::{imported}", relative.display()));
            }
        }
    }
    assert!(wrong.is_empty(), "imports against the data flow:\n{}", wrong.join("\n"));
    assert_eq!(seen_modules.len(), LAYERS.len(), "every layer exists: {seen_modules:?}");
}

#[test]
fn the_checker_sees_imports() {
    let uses = crate_imports("use crate::engine::chains::Buckets;\n// crate::pipeline in a comment\nlet x = crate::model::Severity::Low;");
    assert_eq!(uses, ["engine", "model"]);
}
