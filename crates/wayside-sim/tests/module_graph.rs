//! The crate's sources import each other in stack order: no import cycle
//! between top-level modules nor between files, and no layer importing one
//! above it ([`LAYERS`]). Reads the sources: `crate::`, `super::` and
//! `self::` paths and a module's uses of its own submodules, outside
//! comments and test modules. A file's use of its own parent (the items of
//! the `mod.rs` above it, such as the trait its submodules implement) is
//! the module tree, not an edge: the cycles looked for are between peers.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The top-level modules from the bottom of the stack up. A module may
/// import modules of its own floor or of the floors below, never one above.
const LAYERS: &[(&str, &[&str])] = &[
    ("floors", &["units", "geometry", "ids", "rng"]),
    ("what the layers exchange and record", &["packet", "trace"]),
    ("where things are", &["mobility", "channel"]),
    ("physical layer", &["phy"]),
    ("rate control", &["ratectl"]),
    ("MAC", &["mac"]),
    (
        "the links: the radio medium and the wires",
        &["medium", "wire"],
    ),
    ("network layer", &["net"]),
    ("transport", &["transport"]),
    ("sockets", &["sockets"]),
    ("applications", &["apps"]),
    ("the experiment's script and capture", &["script", "pcap"]),
    ("configuration", &["config"]),
    ("events", &["event"]),
    ("the air around the radios", &["air"]),
    ("a node's stack", &["node"]),
    ("the world", &["world"]),
    ("scenarios and runs", &["scenario", "run"]),
];

/// A file's module path: `src/mac/dcf.rs` is `["mac", "dcf"]`,
/// `src/mac/mod.rs` is `["mac"]`.
type Module = Vec<String>;

fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Module = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().to_string())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("readable src") {
        let p = e.expect("an entry").path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `text` without comments and without everything from the first
/// `#[cfg(test)]` on (test modules sit at the end).
fn code(text: &str) -> String {
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    code.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The lower-case path segments after `at` (`::a::b::C` gives `a, b`),
/// and where they end.
fn segments(text: &str, mut at: usize) -> (Vec<String>, usize) {
    let mut out = Vec::new();
    while text[at..].starts_with("::") {
        let name: String = text[at + 2..]
            .chars()
            .take_while(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            .collect();
        let next = text[at + 2 + name.len()..].chars().next();
        if name.is_empty() || next.is_some_and(|c| is_ident(c) && !c.is_ascii_lowercase()) {
            break;
        }
        out.push(name.clone());
        at += 2 + name.len();
    }
    (out, at)
}

/// Every module path `module`'s source names: each `crate::`, `super::` or
/// `self::` path (with the items of a `{...}` group after it), and each use
/// of a submodule it declares. Paths may name items too; [`resolve`] keeps
/// the longest prefix that is a file.
fn references(module: &[String], text: &str) -> Vec<Module> {
    let code = code(text);
    let mut out = Vec::new();
    let parent = &module[..module.len().saturating_sub(1)];
    for (root, base) in [("crate", &[][..]), ("super", parent), ("self", module)] {
        for (i, _) in code.match_indices(root) {
            let after = &code[i + root.len()..];
            let preceded = code[..i].chars().next_back();
            if !after.starts_with("::") || preceded.is_some_and(|c| is_ident(c) || c == ':') {
                continue;
            }
            let (segs, end) = segments(&code, i + root.len());
            let mut path: Module = base.to_vec();
            path.extend(segs);
            if code[end..].starts_with("::{") {
                let group = &code[end + 3..];
                let group = &group[..group.find('}').unwrap_or(group.len())];
                for item in group.split(',') {
                    let item = format!("::{}", item.trim());
                    let mut p = path.clone();
                    p.extend(segments(&item, 0).0);
                    out.push(p);
                }
            }
            out.push(path);
        }
    }
    for line in code.lines() {
        let decl = line.trim_start().trim_start_matches("pub ");
        let decl = decl.strip_prefix("pub(crate) ").unwrap_or(decl);
        if let Some(name) = decl.strip_prefix("mod ").and_then(|d| d.strip_suffix(';')) {
            let used = code.match_indices(&format!("{name}::")).any(|(i, _)| {
                !code[..i]
                    .chars()
                    .next_back()
                    .is_some_and(|c| is_ident(c) || c == ':')
            });
            if used {
                let mut p = module.to_vec();
                p.push(name.to_string());
                out.push(p);
            }
        }
    }
    out
}

/// The file a path refers to: its longest prefix that is a module.
fn resolve(modules: &BTreeSet<Module>, path: &[String]) -> Option<Module> {
    (1..=path.len())
        .rev()
        .map(|k| path[..k].to_vec())
        .find(|p| modules.contains(p))
}

type Graph = BTreeMap<String, BTreeSet<String>>;

fn name(m: &[String]) -> String {
    m.join("::")
}

/// The import graph between files (test files left out), without each
/// file's edge to its own parent.
fn file_graph() -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let modules: BTreeSet<Module> = all.iter().map(|f| module_of(&src, f)).collect();
    let mut deps = Graph::new();
    for f in &all {
        let m = module_of(&src, f);
        if m == ["lib"] || f.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(f).expect("readable source");
        let refs: Vec<String> = references(&m, &text)
            .iter()
            .filter_map(|p| resolve(&modules, p))
            .filter(|r| *r != m && r.as_slice() != ["lib"] && *r != m[..m.len() - 1])
            .map(|r| name(&r))
            .collect();
        deps.entry(name(&m)).or_default().extend(refs);
    }
    deps
}

/// The graph between top-level modules that `files` implies.
fn module_graph(files: &Graph) -> Graph {
    let top = |m: &str| m.split("::").next().unwrap_or(m).to_string();
    let mut deps = Graph::new();
    for (m, refs) in files {
        let entry = deps.entry(top(m)).or_default();
        entry.extend(refs.iter().map(|r| top(r)).filter(|r| *r != top(m)));
    }
    deps
}

/// A cycle through `start`, if any (depth-first search).
fn cycle(deps: &Graph, start: &str) -> Option<Vec<String>> {
    fn walk(
        deps: &Graph,
        start: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        let here = path.last().expect("non-empty").clone();
        for next in deps.get(&here).into_iter().flatten() {
            if next == start {
                path.push(next.clone());
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(deps, start, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![start.to_string()];
    walk(deps, start, &mut path, &mut BTreeSet::new()).then_some(path)
}

fn first_cycle(deps: &Graph) -> Option<Vec<String>> {
    deps.keys().find_map(|m| cycle(deps, m))
}

/// Each import of a module from a higher floor, as `from -> to`.
fn upward(deps: &Graph) -> Vec<String> {
    let floor = |m: &str| LAYERS.iter().position(|(_, ms)| ms.contains(&m));
    let mut out = Vec::new();
    for (m, refs) in deps {
        for r in refs {
            if floor(r) > floor(m) {
                out.push(format!("{m} -> {r}"));
            }
        }
    }
    out
}

#[test]
fn no_module_imports_itself_through_others() {
    let deps = module_graph(&file_graph());
    assert!(deps.len() > 10, "the sources were found: {:?}", deps.keys());
    if let Some(c) = first_cycle(&deps) {
        panic!("import cycle: {}", c.join(" -> "));
    }
}

#[test]
fn no_file_imports_itself_through_others() {
    let deps = file_graph();
    assert!(deps.contains_key("mac::dcf"), "files: {:?}", deps.keys());
    if let Some(c) = first_cycle(&deps) {
        panic!("import cycle between files: {}", c.join(" -> "));
    }
}

#[test]
fn every_module_has_a_floor() {
    let deps = module_graph(&file_graph());
    let placed: BTreeSet<&str> = LAYERS
        .iter()
        .flat_map(|(_, ms)| ms.iter().copied())
        .collect();
    let missing: Vec<&String> = deps
        .keys()
        .filter(|m| !placed.contains(m.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "give these a floor in LAYERS: {missing:?}"
    );
}

#[test]
fn no_layer_imports_one_above_it() {
    let up = upward(&module_graph(&file_graph()));
    assert!(up.is_empty(), "imports up the stack: {}", up.join(", "));
}

#[test]
fn the_checker_finds_cycles_and_upward_imports() {
    let mut deps = Graph::new();
    deps.entry("net".into()).or_default().insert("mac".into());
    deps.entry("mac".into()).or_default().insert("world".into());
    deps.entry("world".into()).or_default().insert("net".into());
    assert_eq!(
        cycle(&deps, "net"),
        Some(vec![
            "net".into(),
            "mac".into(),
            "world".into(),
            "net".into()
        ])
    );
    assert_eq!(upward(&deps), vec!["mac -> world".to_string()]);
    let mut ok = Graph::new();
    ok.entry("mac".into()).or_default().insert("phy".into());
    ok.entry("transport".into())
        .or_default()
        .insert("packet".into());
    assert_eq!(first_cycle(&ok), None);
    assert!(upward(&ok).is_empty());
}

#[test]
fn the_reader_finds_every_kind_of_path() {
    let m: Module = vec!["mac".into(), "dcf".into()];
    let text = "mod seq;\nuse crate::net::Packet; // crate::world\n\
                use super::{links::Links, Frame};\nuse seq::SeqNum;\n\
                // crate::node\nfn f() { crate::phy::mode::Mode::x(); }\n\
                #[cfg(test)]\nuse crate::apps;\n";
    let names: BTreeSet<String> = references(&m, text).iter().map(|p| name(p)).collect();
    let want = ["net", "mac", "mac::links", "mac::dcf::seq", "phy::mode"];
    assert_eq!(names, want.iter().map(|s| s.to_string()).collect());
}
