//! The crate's top-level modules import each other without a cycle: a
//! layer may use the layers below it and the shared types, never the other
//! way round. Reads the sources: `use crate::x` and `crate::x::` paths,
//! outside comments and test modules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The top-level module a source file belongs to.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).expect("under src");
    let first = rel
        .components()
        .next()
        .expect("a path")
        .as_os_str()
        .to_string_lossy()
        .to_string();
    first.trim_end_matches(".rs").to_string()
}

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).expect("readable src") {
        let p = e.expect("an entry").path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `crate::name` references in `text`, skipping comments and everything
/// from the first `#[cfg(test)]` on (test modules sit at the end).
fn references(text: &str) -> BTreeSet<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    let mut out = BTreeSet::new();
    for line in code.lines().map(|l| l.split("//").next().unwrap_or("")) {
        for (i, _) in line.match_indices("crate::") {
            let name: String = line[i + 7..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let mut deps: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in all {
        let m = module_of(&src, &f);
        if m == "lib" || f.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let refs = references(&std::fs::read_to_string(&f).expect("readable source"));
        deps.entry(m.clone())
            .or_default()
            .extend(refs.into_iter().filter(|r| *r != m));
    }
    deps
}

/// A cycle through `start`, if any (depth-first search).
fn cycle(deps: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    fn walk(
        deps: &BTreeMap<String, BTreeSet<String>>,
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

#[test]
fn no_module_imports_itself_through_others() {
    let deps = graph();
    assert!(deps.len() > 10, "the sources were found: {:?}", deps.keys());
    for m in deps.keys() {
        if let Some(c) = cycle(&deps, m) {
            panic!("import cycle: {}", c.join(" -> "));
        }
    }
}

#[test]
fn the_checker_finds_a_cycle() {
    let mut deps: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
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
    assert_eq!(
        references("use crate::net::Packet; // crate::world\n// crate::node\n"),
        BTreeSet::from(["net".to_string()])
    );
}
