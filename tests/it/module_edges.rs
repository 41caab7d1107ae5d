//! Inside a crate, modules form layers too: these tests read each source file's
//! `crate::…` paths (outside its test code) and fail on an import circle, or on an
//! edge ARCHITECTURE.md says must not exist. `crate_edges.rs` does the same for crates.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A crate's modules (by path, `a::b`) and the modules each names outside its tests.
struct ModuleGraph {
    edges: BTreeMap<String, BTreeSet<String>>,
}

/// The source files under `dir`, at any depth.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// `a/b.rs` and `a/b/mod.rs` are module `a::b`; `lib.rs` and `main.rs` the root (``).
fn module_of(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts
        .last()
        .is_some_and(|p| p == "mod" || p == "lib" || p == "main")
    {
        parts.pop();
    }
    parts.join("::")
}

/// The file's text without its test code: a module's `tests.rs`, anything under a
/// `tests/` directory (a test module's children) and the shared `test_docs.rs` are
/// all test code (as are `*_tests.rs` files, the older convention), and a
/// `#[cfg(test)]` item (`mod tests;` at the bottom) is skipped. `relative` is the
/// file's path from the crate's source root.
fn production_text(relative: &Path, text: &str) -> String {
    let name = relative
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let in_tests_dir = relative
        .parent()
        .is_some_and(|p| p.components().any(|c| c.as_os_str() == "tests"));
    if in_tests_dir || name.ends_with("_tests.rs") || name == "tests.rs" || name == "test_docs.rs" {
        return String::new();
    }
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim();
        // A single test-only item (`#[cfg(test)] use …;`, `#[cfg(test)] fn …`): skip
        // it up to the end of its statement or block.
        if trimmed == "#[cfg(test)]" {
            let Some(next) = lines.next() else { break };
            if next.trim_start().starts_with("mod tests") && next.trim_end().ends_with('{') {
                break;
            }
            let mut depth = next.matches('{').count() as i64 - next.matches('}').count() as i64;
            let mut ended = depth == 0 && (next.trim_end().ends_with(';') || next.contains('}'));
            while !ended {
                let Some(more) = lines.next() else { break };
                depth += more.matches('{').count() as i64 - more.matches('}').count() as i64;
                ended = depth <= 0 && (more.trim_end().ends_with(';') || more.contains('}'));
            }
            continue;
        }
        // Comments name modules without importing them.
        if trimmed.starts_with("//") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Every path into this crate that `text` (the production part of module
/// `from`) names, from the crate root: `crate::a::b`, each leaf of a group
/// (`crate::{a, b::{c, d}}`), and `super::`/`self::` paths made absolute.
fn crate_paths(from: &str, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let starts_word = |i: usize| {
        i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_' || chars[i - 1] == ':')
    };
    let mut i = 0;
    while i < chars.len() {
        let rest: String = chars[i..chars.len().min(i + 7)].iter().collect();
        let root: Option<(Vec<String>, usize)> = if !starts_word(i) {
            None
        } else if rest.starts_with("crate::") {
            Some((Vec::new(), 7))
        } else if rest.starts_with("self::") {
            Some((
                from.split("::")
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect(),
                6,
            ))
        } else if rest.starts_with("super::") {
            // One `super::` or more: each climbs one module.
            let mut base: Vec<String> = from
                .split("::")
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
            let mut j = i;
            while chars[j..].iter().take(7).collect::<String>() == "super::" {
                base.pop();
                j += 7;
            }
            Some((base, j - i))
        } else {
            None
        };
        match root {
            Some((base, skip)) => {
                i = group(&chars, i + skip, &base, &mut out);
            }
            None => i += 1,
        }
    }
    out
}

/// Reads a path (or a `{…}` group of paths) at `at`, appending each one, joined
/// to `base`, to `out`; returns where reading stopped.
fn group(chars: &[char], mut at: usize, base: &[String], out: &mut Vec<String>) -> usize {
    let mut path: Vec<String> = base.to_vec();
    loop {
        if chars.get(at) == Some(&'{') {
            at += 1;
            loop {
                while chars
                    .get(at)
                    .is_some_and(|c| c.is_whitespace() || *c == ',')
                {
                    at += 1;
                }
                match chars.get(at) {
                    None => return at,
                    Some('}') => return at + 1,
                    Some(_) => {
                        let before = at;
                        at = group(chars, at, &path, out);
                        // Past anything else (`as x`, `*`) up to the next item.
                        while chars.get(at).is_some_and(|c| *c != ',' && *c != '}') {
                            at += 1;
                        }
                        if at == before {
                            at += 1;
                        }
                    }
                }
            }
        }
        let word: String = chars[at..]
            .iter()
            .take_while(|c| c.is_alphanumeric() || **c == '_')
            .collect();
        at += word.chars().count();
        if !word.is_empty() && word != "self" {
            path.push(word);
        }
        if chars[at..].iter().take(2).collect::<String>() == "::" {
            at += 2;
            continue;
        }
        out.push(path.join("::"));
        return at;
    }
}

impl ModuleGraph {
    /// Reads every file under `src` (a crate's source root).
    fn of(src: &Path) -> ModuleGraph {
        let mut files = Vec::new();
        rust_files(src, &mut files);
        let modules: BTreeSet<String> = files.iter().map(|f| module_of(src, f)).collect();
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for file in &files {
            let from = module_of(src, file);
            let text = std::fs::read_to_string(file).unwrap_or_default();
            let text = production_text(file.strip_prefix(src).unwrap_or(file), &text);
            let mut named = BTreeSet::new();
            for path in crate_paths(&from, &text) {
                // The longest prefix of the path that is a module of this crate.
                let segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
                let target = (1..=segments.len())
                    .rev()
                    .map(|n| segments[..n].join("::"))
                    .find(|m| modules.contains(m));
                if let Some(target) = target
                    && target != from
                    && !from.starts_with(&format!("{target}::"))
                {
                    named.insert(target);
                }
            }
            edges.insert(from, named);
        }
        ModuleGraph { edges }
    }

    /// Every circle of imports, each as the modules on it.
    fn circles(&self) -> Vec<Vec<String>> {
        // Tarjan's strongly connected components, iteratively small enough to recurse.
        struct State<'a> {
            graph: &'a ModuleGraph,
            index: BTreeMap<&'a str, usize>,
            low: BTreeMap<&'a str, usize>,
            stack: Vec<&'a str>,
            on_stack: BTreeSet<&'a str>,
            next: usize,
            found: Vec<Vec<String>>,
        }
        fn visit<'a>(s: &mut State<'a>, v: &'a str) {
            s.index.insert(v, s.next);
            s.low.insert(v, s.next);
            s.next += 1;
            s.stack.push(v);
            s.on_stack.insert(v);
            let graph = s.graph;
            for w in graph.edges.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let lw = s.low[w];
                    let lv = s.low[v];
                    s.low.insert(v, lv.min(lw));
                } else if s.on_stack.contains(w) {
                    let iw = s.index[w];
                    let lv = s.low[v];
                    s.low.insert(v, lv.min(iw));
                }
            }
            if s.low[v] == s.index[v] {
                let mut component = Vec::new();
                while let Some(w) = s.stack.pop() {
                    s.on_stack.remove(w);
                    component.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    s.found.push(component);
                }
            }
        }
        let mut state = State {
            graph: self,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            next: 0,
            found: Vec::new(),
        };
        for v in self.edges.keys() {
            if !state.index.contains_key(v.as_str()) {
                visit(&mut state, v.as_str());
            }
        }
        state.found
    }

    /// Whether `from` or any module under it names `to` or a module under it.
    fn any_imports(&self, from: &str, to: &str) -> bool {
        self.edges
            .keys()
            .filter(|m| *m == from || m.starts_with(&format!("{from}::")))
            .any(|m| self.imports(m, to))
    }

    fn imports(&self, from: &str, to: &str) -> bool {
        self.edges.get(from).is_some_and(|t| {
            t.iter()
                .any(|m| m == to || m.starts_with(&format!("{to}::")))
        })
    }
}

fn graph(crate_src: &str) -> ModuleGraph {
    let graph = ModuleGraph::of(&Path::new(env!("CARGO_MANIFEST_DIR")).join(crate_src));
    // The files were really read: every crate here has more than a handful of modules.
    assert!(
        graph.edges.len() > 5,
        "{crate_src}: {} modules",
        graph.edges.len()
    );
    graph
}

#[test]
fn the_wire_crate_has_no_import_circle() {
    let api = graph("crates/api/src");
    assert!(
        api.imports("convert", "pod_decode"),
        "the graph reads edges"
    );
    assert_eq!(api.circles(), Vec::<Vec<String>>::new());
    // The decoders read shared pod fields, never the conversion that drives them.
    for decoder in ["pod_decode", "lean_decode", "pod_fields", "violations"] {
        assert!(
            !api.imports(decoder, "convert"),
            "{decoder} imports convert"
        );
    }
}

#[test]
fn the_binary_has_no_import_circle() {
    let bin = graph("src");
    assert!(bin.imports("cli", "input"), "the graph reads edges");
    assert_eq!(bin.circles(), Vec::<Vec<String>>::new());
    // What every command reads knows no command; the cluster reader knows no command line.
    for command in ["cli", "simulate", "report"] {
        assert!(!bin.imports("input", command), "input imports {command}");
    }
    assert!(!bin.imports("cluster", "cli"), "cluster imports cli");
}

#[test]
fn the_core_model_knows_no_decision() {
    let core = graph("crates/core/src");
    assert!(core.imports("sync", "model"), "the graph reads edges");
    // The model is what decisions read; it names none of them.
    for decision in ["extended", "explain", "sync", "jobset", "manage", "backoff"] {
        assert!(!core.imports("model", decision), "model imports {decision}");
    }
}

/// The core's layering, which ARCHITECTURE.md states: no import circle, the
/// extension's rules below the explanations that describe them, the model below
/// the extension, and the Job's explanation apart from the JobSet's.
#[test]
fn the_core_has_no_import_circle() {
    let core = graph("crates/core/src");
    assert_eq!(core.circles(), Vec::<Vec<String>>::new());
    assert!(
        core.any_imports("explain", "extended"),
        "the graph reads submodules"
    );
    for (from, to) in [
        ("extended", "explain"),
        ("model", "extended"),
        ("explain", "jobset"),
    ] {
        assert!(!core.any_imports(from, to), "{from} imports {to}");
    }
    // Text and bounds are the floor: every module may use them, they use none.
    let text = core.edges.get("text").expect("the core has a text module");
    assert!(text.is_empty(), "text imports {text:?}");
}

#[test]
fn grouped_and_relative_imports_are_edges_too() {
    // Missed before: `use crate::{a, b}` and `super::` paths named no module.
    let text = "use crate::{x, y::{z, w as q}};\nuse super::c::d;\nuse self::e;\nuse super::super::h;\nlet v = crate::f::g(1);\nlet n = job_decider_core::crate_like;";
    assert_eq!(
        crate_paths("a::b", text),
        ["x", "y::z", "y::w", "a::c::d", "a::b::e", "h", "f::g"]
    );
}

/// Where a source file breaks the one test-file convention (ARCHITECTURE.md, `tests/`):
/// an inline `mod tests { … }` or a `#[path]` attribute, by line number.
fn test_convention_breaches(text: &str) -> Vec<(usize, String)> {
    text.lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let code = line.trim();
            let declaration = code
                .strip_prefix("pub(crate) ")
                .or_else(|| code.strip_prefix("pub "))
                .unwrap_or(code);
            let inline = declaration
                .strip_prefix("mod tests")
                .is_some_and(|rest| rest.trim_start().starts_with('{'));
            let path = code.starts_with("#[path");
            (inline || path).then(|| (i + 1, code.to_string()))
        })
        .collect()
}

/// A module's unit tests live in `<module>/tests.rs`, declared `#[cfg(test)] mod tests;`:
/// no inline test module, no `#[path]`, in any crate's sources or the binary's.
#[test]
fn unit_tests_live_in_their_modules_tests_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["crates", "src"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 100, "read {} files", files.len());
    let mut breaches = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for (line, code) in test_convention_breaches(&text) {
            let shown = file.strip_prefix(root).unwrap_or(file).display();
            breaches.push(format!("{shown}:{line}: {code}"));
        }
    }
    assert_eq!(breaches, Vec::<String>::new());
}

#[test]
fn inline_test_modules_and_path_attributes_are_breaches() {
    let text = "fn f() {}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n\
                #[cfg(test)]\n#[path = \"x_tests.rs\"]\nmod more;\npub mod tests{}\n";
    assert_eq!(
        test_convention_breaches(text),
        [
            (4, "mod tests {".to_string()),
            (8, "#[path = \"x_tests.rs\"]".to_string()),
            (10, "pub mod tests{}".to_string()),
        ]
    );
    // The convention's own form is not one.
    assert_eq!(
        test_convention_breaches("#[cfg(test)]\nmod tests;\n"),
        Vec::new()
    );
}
