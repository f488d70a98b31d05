//! The shape docs/architecture.md describes, checked against the code: the domain's rooms
//! import only rooms below them, nothing in the domain reaches outside it, and the document
//! names every room there is.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The domain's rooms, lowest first: a room may use the rooms before it in this list.
const ROOMS: [&str; 9] = [
    "text", "os", "fs", "model", "wire", "hitl", "review", "run", "insight",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without its tests (tests may reach anywhere to build their fixtures).
fn production_code(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_string_lossy();
    if name == "tests.rs" || name.ends_with("_tests.rs") {
        return None;
    }
    let text = fs::read_to_string(path).ok()?;
    Some(match text.find("#[cfg(test)]") {
        Some(at) => text[..at].to_owned(),
        None => text,
    })
}

/// Each word following `prefix` in `code` (`crate::jobs::` -> `model`, `fs`, ...).
fn words_after<'a>(code: &'a str, prefix: &str) -> BTreeSet<&'a str> {
    code.match_indices(prefix)
        .filter_map(|(at, _)| {
            let rest = &code[at + prefix.len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            (end > 0).then(|| &rest[..end])
        })
        .collect()
}

/// For each room, the other rooms and the modules outside `jobs` its code names.
fn room_imports() -> BTreeMap<String, BTreeSet<String>> {
    let jobs = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/jobs");
    let mut files = Vec::new();
    rust_files(&jobs, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(&jobs).unwrap();
        let mut parts = rel.components();
        let room = parts
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .into_owned();
        if parts.next().is_none() {
            continue; // jobs/mod.rs: the re-exports of the domain's main types
        }
        let Some(code) = production_code(&file) else {
            continue;
        };
        let entry = graph.entry(room.clone()).or_default();
        for used in words_after(&code, "crate::jobs::") {
            if used != room && used.starts_with(|c: char| c.is_ascii_lowercase()) {
                entry.insert(used.to_owned());
            }
        }
        for used in words_after(&code, "crate::") {
            if used != "jobs" {
                entry.insert(format!("crate::{used}"));
            }
        }
    }
    graph
}

#[test]
fn each_room_of_the_domain_uses_only_the_rooms_below_it() {
    let graph = room_imports();
    let rooms: BTreeSet<&str> = graph.keys().map(String::as_str).collect();
    assert_eq!(
        rooms,
        ROOMS.into_iter().collect(),
        "src/jobs has other rooms than this test and docs/architecture.md know"
    );
    for (room, uses) in &graph {
        let rank = ROOMS.iter().position(|r| r == room).unwrap();
        for used in uses {
            assert!(
                !used.starts_with("crate::"),
                "jobs/{room} reaches outside the domain: {used}"
            );
            let used_rank = ROOMS.iter().position(|r| r == used);
            assert!(
                used_rank.is_some_and(|u| u < rank),
                "jobs/{room} uses jobs/{used}, which is not below it ({ROOMS:?}, lowest first)"
            );
        }
    }
}

#[test]
fn the_architecture_document_names_every_room() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    for room in ROOMS {
        assert!(
            doc.contains(&format!("| `{room}/` |")),
            "docs/architecture.md does not describe jobs/{room}/"
        );
    }
    let mut tui = BTreeSet::new();
    for entry in fs::read_dir(root.join("src/tui")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name != "testing.rs" {
            tui.insert(name.trim_end_matches(".rs").to_owned());
        }
    }
    for module in tui {
        assert!(
            doc.contains(&format!("`{module}/`")) || doc.contains(&format!("`{module}.rs`")),
            "docs/architecture.md does not describe src/tui/{module}"
        );
    }
}

/// Every `LUZIA_` name in the production code, once.
fn luzia_names_in(code: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (at, _) in code.match_indices("LUZIA_") {
        let rest = &code[at..];
        let end = rest
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(rest.len());
        let name = rest[..end].trim_end_matches('_');
        if name.len() > "LUZIA_".len() {
            names.insert(name.to_owned());
        }
    }
    names
}

/// The variables an agent keeps from luzia's environment by their `LUZIA_` prefix are exactly
/// those the code reads or sets, and docs/protocol.md names each: a variable luzia starts to
/// read is passed to agents (and said) or this fails, and no other `LUZIA_` name passes.
#[test]
fn luzia_s_own_variables_are_those_the_code_uses_and_the_protocol_names() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let mut used = BTreeSet::new();
    for file in files {
        if let Some(code) = production_code(&file) {
            used.extend(luzia_names_in(&code));
        }
    }
    let passed: BTreeSet<String> = luzia::jobs::run::account::OWN_VARIABLES
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(
        used, passed,
        "the LUZIA_ variables the code uses are not those passed to agents \
         (jobs::run::account::OWN_VARIABLES)"
    );
    let protocol = fs::read_to_string(root.join("docs/protocol.md")).unwrap();
    for name in &passed {
        assert!(
            protocol.contains(&format!("`{name}`")),
            "docs/protocol.md does not name {name}"
        );
    }
}
