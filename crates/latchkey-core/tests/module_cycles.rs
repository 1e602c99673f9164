//! No crate of the workspace has a cycle among its modules. A module depends on another when its code (tests left
//! out) names it: `crate::a::b`, `super::x`, `self::x`, or a child module by name. A module's use of its
//! ancestors' items does not count: the parent is the namespace its children live in.

mod crate_sources;

use crate_sources::{code, sources};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Module = Vec<String>;

/// The module a file holds: `a/b.rs` and `a/b/mod.rs` are `a::b`; `lib.rs` and `main.rs` the root.
fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(src).expect("under src").with_extension("");
    let mut parts: Module = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// The paths a piece of code names, each as its segments (`use a::{b, c::d}` gives `a::b` and `a::c::d`).
fn paths(code: &str) -> Vec<Vec<String>> {
    let bytes: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts = (bytes[i].is_ascii_alphabetic() || bytes[i] == '_')
            && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == '_' || bytes[i - 1] == ':'));
        if starts {
            let (found, end) = path_at(&bytes, i, Vec::new());
            out.extend(found.into_iter().filter(|p| p.len() > 1));
            i = end.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

/// Reads `a::b::{c, d::e}` from `i`, after `prefix`; returns the paths and where it stopped.
fn path_at(s: &[char], mut i: usize, prefix: Vec<String>) -> (Vec<Vec<String>>, usize) {
    let mut segs = prefix;
    loop {
        let start = i;
        while i < s.len() && (s[i].is_ascii_alphanumeric() || s[i] == '_') {
            i += 1;
        }
        if i > start {
            segs.push(s[start..i].iter().collect());
        }
        if s.get(i) == Some(&':') && s.get(i + 1) == Some(&':') {
            i += 2;
            if s.get(i) == Some(&'{') {
                let mut all = vec![];
                i += 1;
                loop {
                    while s.get(i).is_some_and(|c| c.is_whitespace() || *c == ',') {
                        i += 1;
                    }
                    if s.get(i).is_none_or(|c| *c == '}') {
                        return (all, i + 1);
                    }
                    let (inner, end) = path_at(s, i, segs.clone());
                    all.extend(inner);
                    all.push(segs.clone());
                    // Skip `as name` and anything else up to the item's end.
                    i = end;
                    while s.get(i).is_some_and(|c| *c != ',' && *c != '}') {
                        i += 1;
                    }
                }
            }
            continue;
        }
        return (vec![segs], i);
    }
}

/// The cycles among one crate's modules.
fn cycles(krate: &Path) -> Vec<String> {
    let src = krate.join("src");
    let mut files = vec![];
    sources(&src, &mut files);
    let modules: BTreeMap<Module, String> =
        files.iter().map(|f| (module_of(&src, f), code(&std::fs::read_to_string(f).expect("read")))).collect();
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (module, text) in &modules {
        for path in paths(text) {
            let (mut at, rest): (Module, &[String]) = match path[0].as_str() {
                "crate" => (vec![], &path[1..]),
                "self" => (module.clone(), &path[1..]),
                "super" => {
                    let supers = path.iter().take_while(|s| *s == "super").count();
                    (module[..module.len().saturating_sub(supers)].to_vec(), &path[supers..])
                }
                _ => (module.clone(), &path[..]),
            };
            let from_here = !matches!(path[0].as_str(), "crate" | "self" | "super");
            let mut moved = false;
            for seg in rest {
                let mut next = at.clone();
                next.push(seg.clone());
                if !modules.contains_key(&next) {
                    break;
                }
                at = next;
                moved = true;
            }
            if (from_here && !moved) || module.starts_with(&at) {
                continue;
            }
            edges.entry(module.clone()).or_default().insert(at);
        }
    }
    let name = |m: &Module| if m.is_empty() { "crate".to_owned() } else { m.join("::") };
    let mut found = BTreeSet::new();
    for (a, targets) in &edges {
        for b in targets {
            if reaches(&edges, b, a) {
                let (x, y) = if a < b { (a, b) } else { (b, a) };
                found.insert(format!("{} <-> {}", name(x), name(y)));
            }
        }
    }
    found.into_iter().collect()
}

/// Whether `to` is reachable from `from`.
fn reaches(edges: &BTreeMap<Module, BTreeSet<Module>>, from: &Module, to: &Module) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![from.clone()];
    while let Some(m) = stack.pop() {
        if &m == to {
            return true;
        }
        if seen.insert(m.clone()) {
            stack.extend(edges.get(&m).into_iter().flatten().cloned());
        }
    }
    false
}

#[test]
fn no_crate_has_a_module_cycle() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("crates/");
    let mut all = vec![];
    for entry in std::fs::read_dir(crates).expect("crates/").flatten() {
        let krate = entry.file_name().to_string_lossy().into_owned();
        if entry.path().join("src").is_dir() {
            all.extend(cycles(&entry.path()).into_iter().map(|c| format!("{krate}: {c}")));
        }
    }
    assert!(all.is_empty(), "module cycles: {all:#?}");
}

#[test]
fn the_check_sees_a_cycle() {
    let dir = std::env::temp_dir().join(format!("module-cycles-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("src")).expect("dir");
    std::fs::write(dir.join("src/lib.rs"), "mod a;\nmod b;\nmod c;\n").expect("lib");
    std::fs::write(dir.join("src/a.rs"), "use crate::b::{self, X};\n").expect("a");
    std::fs::write(dir.join("src/b.rs"), "pub fn f() { super::a::g() }\n").expect("b");
    std::fs::write(dir.join("src/c.rs"), "use crate::a;\n#[cfg(test)]\nuse crate::c;\n").expect("c");
    let found = cycles(&dir);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(found, vec!["a <-> b".to_owned()]);
}
