//! `cameleon fmt`: rewrite a file in canonical form.

use std::io::Read as _;
use std::path::Path;

use super::{FmtArgs, Io, exit, report_invalid};
use cameleon::cm::{Loader, leading_comments};

pub(super) fn fmt(a: &FmtArgs, io: &mut Io<'_>) -> std::io::Result<i32> {
    let stdin = a.file == Path::new("-");
    let (text, loaded) = if stdin {
        let mut text = String::new();
        let limit = cameleon::cm::limits::MAX_FILE_BYTES as u64 + 1;
        if let Err(e) = std::io::Read::take(&mut *io.stdin, limit).read_to_string(&mut text) {
            writeln!(io.stderr, "error: cannot read stdin: {e}")?;
            return Ok(exit::INVALID);
        }
        let loaded = Loader::new()
            .file_name("<stdin>")
            .known_tools(crate::net_tools::net_tool_names(
                Path::new("-"),
                a.capabilities.as_deref(),
            ))
            .load_str(&text);
        (text, loaded)
    } else {
        let loaded = Loader::new()
            .known_tools(crate::net_tools::net_tool_names(
                &a.file,
                a.capabilities.as_deref(),
            ))
            .load_file(&a.file);
        let text = match &loaded {
            Ok(_) => std::fs::read_to_string(&a.file).unwrap_or_default(),
            Err(e) => e.source_text().to_owned(),
        };
        (text, loaded)
    };
    let net = match loaded {
        Ok(net) => net,
        Err(e) => {
            report_invalid(&e, false, io)?;
            return Ok(exit::INVALID);
        }
    };
    // The leading comment block (what the file is) is kept; other comments are not part of
    // the canonical form.
    let header = leading_comments(&text);
    let canonical = format!("{header}{}", net.to_cm());
    let name = if stdin {
        "<stdin>".to_owned()
    } else {
        a.file.display().to_string()
    };
    if a.check {
        if canonical == text {
            return Ok(exit::OK);
        }
        writeln!(
            io.stderr,
            "{name} is not in canonical form{}; `cameleon fmt {name}` rewrites it",
            first_difference(&text, &canonical)
                .map(|l| format!(" (first difference on line {l})"))
                .unwrap_or_default()
        )?;
        return Ok(exit::DIFFERS);
    }
    if has_comment(&text[header.len()..]) && !(stdin || a.output.is_some()) {
        writeln!(
            io.stderr,
            "note: comments are not part of the canonical form; {name} no longer has them"
        )?;
    }
    if stdin || a.output.is_some() {
        io.stdout.write_all(canonical.as_bytes())?;
    } else if canonical != text {
        std::fs::write(&a.file, &canonical)?;
    }
    Ok(exit::OK)
}

/// The first line (1-based) where `a` and `b` differ.
fn first_difference(a: &str, b: &str) -> Option<usize> {
    let mut la = a.lines();
    let mut lb = b.lines();
    let mut n = 1;
    loop {
        match (la.next(), lb.next()) {
            (None, None) => return (a != b).then_some(n),
            (x, y) if x != y => return Some(n),
            _ => n += 1,
        }
    }
}

/// Whether the YAML text has a comment: a `#` at the start of a line or after a space,
/// outside quotes.
fn has_comment(text: &str) -> bool {
    text.lines().any(|line| {
        let (mut single, mut double, mut prev) = (false, false, ' ');
        for c in line.chars() {
            match c {
                '\'' if !double => single = !single,
                '"' if !single && prev != '\\' => double = !double,
                '#' if !single && !double && prev.is_whitespace() => return true,
                _ => {}
            }
            prev = c;
        }
        false
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_are_told_apart_from_hashes_in_values() {
        assert!(has_comment("# top\nname: x\n"));
        assert!(has_comment("name: x # trailing\n"));
        assert!(!has_comment(
            "name: \"a # b\"\nvalue: 'c # d'\ncolor: x#y\n"
        ));
    }

    #[test]
    fn first_difference_names_the_line() {
        assert_eq!(first_difference("a\nb\nc\n", "a\nb\nc\n"), None);
        assert_eq!(first_difference("a\nb\n", "a\nc\n"), Some(2));
        assert_eq!(first_difference("a\n", "a\nb\n"), Some(2));
    }
}
