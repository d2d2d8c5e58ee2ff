//! The library's layers (docs/architecture.md, "Allowed imports"): every `crate::…` path in the
//! code of a module of `cameleon/src` names a module the table allows it to import, and every
//! module is in the table.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Module name → the modules it may import, read from docs/architecture.md.
fn allowed() -> BTreeMap<String, BTreeSet<String>> {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/architecture.md");
    let text = fs::read_to_string(&doc).unwrap_or_else(|e| panic!("{}: {e}", doc.display()));
    let section = text
        .split("## Allowed imports")
        .nth(1)
        .expect("docs/architecture.md has an \"Allowed imports\" section");
    let mut table = BTreeMap::new();
    for line in section.lines().skip_while(|l| !l.starts_with('|')) {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // | `module` | layer | `a`, `b` |
        let Some(module) = cells
            .get(1)
            .and_then(|c| c.strip_prefix('`')?.strip_suffix('`'))
        else {
            continue; // the header and the separator
        };
        let imports = cells
            .get(3)
            .map(|c| {
                c.split(',')
                    .filter_map(|m| m.trim().strip_prefix('`')?.strip_suffix('`'))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        table.insert(module.to_owned(), imports);
    }
    assert!(table.len() > 5, "no table read from docs/architecture.md");
    table
}

/// Every `.rs` file of module `m` (its file, or its folder).
fn files_of(src: &Path, m: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let file = src.join(format!("{m}.rs"));
    if file.exists() {
        out.push(file);
    }
    let mut stack = vec![src.join(m)];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The files and folders of modules declared `#[cfg(test)] mod NAME;` inside module `m`.
fn test_only_files(src: &Path, m: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for file in files_of(src, m) {
        let text = fs::read_to_string(&file).expect("readable source");
        let dir = match file.file_stem().and_then(|s| s.to_str()) {
            Some("mod") => file.parent().map(Path::to_path_buf),
            Some(stem) => file.parent().map(|p| p.join(stem)),
            None => None,
        };
        let Some(dir) = dir else { continue };
        let mut lines = text.lines().map(str::trim);
        while let Some(line) = lines.next() {
            if line == "#[cfg(test)]"
                && let Some(decl) = lines.next()
                && let Some(name) = decl.strip_prefix("mod ").and_then(|d| d.strip_suffix(';'))
            {
                out.push(dir.join(format!("{name}.rs")));
                out.push(dir.join(name));
            }
        }
    }
    out
}

/// The top-level modules of `cameleon/src` (files and folders), `lib.rs` and `main.rs` aside.
fn modules(src: &Path) -> BTreeSet<String> {
    fs::read_dir(src)
        .expect("cameleon/src")
        .flatten()
        .filter_map(|e| {
            let p = e.path();
            let name = p.file_stem()?.to_str()?.to_owned();
            let is_module = p.is_dir() || p.extension().is_some_and(|x| x == "rs");
            (is_module && name != "lib" && name != "main").then_some(name)
        })
        .collect()
}

/// The `crate::NAME` paths in the code of `text`: comments and `#[cfg(test)]` modules skipped.
fn imports(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut skip_depth: Option<i32> = None; // brace depth of a test module being skipped
    let mut depth = 0i32;
    let mut pending_test = false;
    for (n, raw) in text.lines().enumerate() {
        let code = match raw.find("//") {
            Some(i) => &raw[..i],
            None => raw,
        };
        if code.trim_start().starts_with("#[cfg(test)]") {
            pending_test = true;
        }
        let opens = code.matches('{').count() as i32;
        let closes = code.matches('}').count() as i32;
        if pending_test && opens > 0 {
            pending_test = false;
            skip_depth.get_or_insert(depth);
        }
        if skip_depth.is_none() {
            let mut rest = code;
            while let Some(i) = rest.find("crate::") {
                let after = &rest[i + "crate::".len()..];
                let name: String = after
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                let preceded = rest[..i].chars().last();
                // `crate::x` alone, not `$crate::`, `::cameleon::crate` or a longer identifier.
                if !matches!(preceded, Some(c) if c.is_ascii_alphanumeric() || c == '_' || c == '$')
                    && !name.is_empty()
                {
                    out.push((n + 1, name));
                }
                rest = after;
            }
        }
        depth += opens - closes;
        if let Some(d) = skip_depth
            && depth <= d
        {
            skip_depth = None;
        }
    }
    out
}

#[test]
fn every_module_imports_only_what_docs_architecture_allows() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let table = allowed();
    let mut problems = Vec::new();
    for m in modules(&src) {
        let Some(ok) = table.get(&m) else {
            problems.push(format!(
                "module `{m}` is not in docs/architecture.md's table: add it, with its layer and what it may import"
            ));
            continue;
        };
        let test_only = test_only_files(&src, &m);
        for file in files_of(&src, &m) {
            if test_only.iter().any(|t| file.starts_with(t)) {
                continue;
            }
            let text = fs::read_to_string(&file).expect("readable source");
            for (line, target) in imports(&text) {
                // `__private` and the macros' helper paths live in the crate root.
                if target == m || target.starts_with("__") || !table.contains_key(&target) {
                    continue;
                }
                if !ok.contains(&target) {
                    problems.push(format!(
                        "{}:{line}: `{m}` imports `{target}`, which docs/architecture.md does not allow",
                        file.strip_prefix(&src).unwrap_or(&file).display()
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_import_scanner_skips_comments_and_test_modules() {
    let text = "\
use crate::net::Net; // uses crate::engine in a comment
/// [`Cvm`](crate::engine::Cvm)
fn f() { crate::types::x(); }
#[cfg(test)]
mod tests {
    use crate::ops::Sink;
    fn g() {}
}
fn h() { $crate::verify::x(); crate::policy::y(); }
";
    let found: Vec<String> = imports(text).into_iter().map(|(_, m)| m).collect();
    assert_eq!(found, ["net", "types", "policy"]);
}

#[test]
fn the_table_lists_no_module_that_does_not_exist() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let present = modules(&src);
    let stale: Vec<_> = allowed()
        .into_keys()
        .filter(|m| !present.contains(m))
        .collect();
    assert!(
        stale.is_empty(),
        "docs/architecture.md lists modules that do not exist: {stale:?}"
    );
}
