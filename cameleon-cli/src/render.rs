//! `.cm` problems drawn for a terminal: each with its source snippet, a label under the text at
//! fault, and its hint, by miette's graphical renderer.
//!
//! The library's [`CmError`] is a [`miette::Diagnostic`] that any miette handler can report;
//! this module is what the command line prints, with one more care: a problem on a very long
//! line is shown in a window cropped around it, not as the whole line (miette draws whole lines,
//! and cannot draw a label past column 65 535).

use std::borrow::Cow;
use std::fmt;

use cameleon::cm::{CmError, CmProblem};
use miette::{Diagnostic, LabeledSpan, SourceCode};

/// Renders every problem of `e` with its snippet and hint, as `cameleon check` prints them;
/// `color` adds ANSI colours.
///
/// ```
/// let e = cameleon::Net::from_cm("operators:\n  - id: s\n    type: sourc\n").unwrap_err();
/// let text = cameleon_cli::render::cm_error(&e, false);
/// assert!(text.starts_with("`<input>` is not a valid net: 1 problem\n"));
/// assert!(text.contains("type: sourc"));
/// assert!(text.contains("did you mean `source`?"));
/// ```
pub fn cm_error(e: &CmError, color: bool) -> String {
    let n = e.problems().len();
    let header = format!(
        "`{}` is not a valid {}: {n} problem{}\n\n",
        e.file_name(),
        e.document(),
        if n == 1 { "" } else { "s" }
    );
    problems(e, header, color)
}

/// Renders warnings (problems that leave the file valid, such as `check`'s `tools_denied`)
/// like [`cm_error`] renders errors, under a `` `FILE`: N warning(s) `` line.
///
/// ```
/// # use cameleon::capabilities::{CapabilityNames, check_names};
/// let text = "operators:\n  - {id: args, type: const, params: {value: {expr: \"1\"}}}\n  - {id: calc, type: tool, params: {name: calc}}\n  - {id: out, type: sink}\nconnections:\n  - {from: args.out_data, to: calc.in_args}\n  - {from: calc.out_result, to: out.in_data}\n";
/// let net = cameleon::Net::from_cm(text)?;
/// let found = check_names(&net, "calc.cm", text, &CapabilityNames::new());
/// let text = cameleon_cli::render::cm_warnings(&found.warnings.unwrap(), false);
/// assert!(text.starts_with("`calc.cm`: 1 warning\n"));
/// assert!(text.contains("no `tools:` key"));
/// # Ok::<(), cameleon::cm::CmError>(())
/// ```
pub fn cm_warnings(e: &CmError, color: bool) -> String {
    let n = e.problems().len();
    let header = format!(
        "`{}`: {n} warning{}\n\n",
        e.file_name(),
        if n == 1 { "" } else { "s" }
    );
    problems(e, header, color)
}

/// `header`, then each problem of `e` with its snippet and hint.
fn problems(e: &CmError, mut out: String, color: bool) -> String {
    let theme = if color {
        miette::GraphicalTheme::unicode()
    } else {
        miette::GraphicalTheme::unicode_nocolor()
    };
    let handler = miette::GraphicalReportHandler::new_themed(theme).with_width(100);
    for p in e.problems() {
        let d = match window(e.source_text(), e.file_name(), p) {
            Some((source, label)) => Sourced {
                problem: p,
                source,
                label,
            },
            None => Sourced {
                problem: p,
                source: Window {
                    name: e.file_name(),
                    text: Cow::Borrowed(e.source_text()),
                    first_line: 0,
                },
                label: (p.offset, p.len),
            },
        };
        let _ = handler.render_report(&mut out, &d);
        out.push('\n');
    }
    out
}

/// A problem with the source it points into, for rendering alone.
struct Sourced<'a> {
    problem: &'a CmProblem,
    source: Window<'a>,
    /// Where the label goes in `source` (offset, length).
    label: (usize, usize),
}

/// Lines longer than this are cropped around the problem when rendered.
const MAX_SHOWN_LINE: usize = 160;

/// Named source text for miette: the whole file, or the lines around a problem on a very long
/// line, cropped to a readable width (a 2 MB line helps nobody). Line numbers stay those of the
/// file.
struct Window<'a> {
    name: &'a str,
    text: Cow<'a, str>,
    /// The file's line index of the text's first line.
    first_line: usize,
}

impl SourceCode for Window<'_> {
    fn read_span<'a>(
        &'a self,
        span: &miette::SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn miette::SpanContents<'a> + 'a>, miette::MietteError> {
        let inner = self.text.as_ref().read_span(span, before, after)?;
        Ok(Box::new(miette::MietteSpanContents::new_named(
            self.name.to_owned(),
            inner.data(),
            *inner.span(),
            inner.line() + self.first_line,
            inner.column(),
            inner.line_count(),
        )))
    }
}

fn crop(line: &str) -> String {
    match line.char_indices().nth(MAX_SHOWN_LINE) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_owned(),
    }
}

/// A window on the lines around `p`, and where its label goes in it; `None` when the line is
/// short enough to show as it is.
fn window<'a>(src: &str, name: &'a str, p: &CmProblem) -> Option<(Window<'a>, (usize, usize))> {
    let offset = p.offset.min(src.len());
    // `CmProblem` offsets are on character boundaries; a stray one is shown unwindowed.
    if !src.is_char_boundary(offset) {
        return None;
    }
    let start = src[..offset].rfind('\n').map_or(0, |i| i + 1);
    let end = src[offset..].find('\n').map_or(src.len(), |i| offset + i);
    let line = &src[start..end];
    if line.chars().count() <= MAX_SHOWN_LINE {
        return None;
    }
    let line_index = src[..start].matches('\n').count();
    let mut text = String::new();
    let mut first_line = line_index;
    if start > 0 {
        let prev_start = src[..start - 1].rfind('\n').map_or(0, |i| i + 1);
        text.push_str(&crop(&src[prev_start..start - 1]));
        text.push('\n');
        first_line -= 1;
    }
    // Keep some context before the problem and a line's width after it.
    let col = line[..offset - start].chars().count();
    let from = col.saturating_sub(60);
    let from_byte = line.char_indices().nth(from).map_or(line.len(), |(i, _)| i);
    let to_byte = line[from_byte..]
        .char_indices()
        .nth(MAX_SHOWN_LINE)
        .map_or(line.len(), |(i, _)| from_byte + i);
    if from_byte > 0 {
        text.push('…');
    }
    let label_at = text.len() + (offset - start - from_byte);
    text.push_str(&line[from_byte..to_byte]);
    let label_len = p.len.min(to_byte - (offset - start));
    if to_byte < line.len() {
        text.push('…');
    }
    if end < src.len() {
        let next_end = src[end + 1..].find('\n').map_or(src.len(), |i| end + 1 + i);
        text.push('\n');
        text.push_str(&crop(&src[end + 1..next_end]));
    }
    Some((
        Window {
            name,
            text: Cow::Owned(text),
            first_line,
        },
        (label_at, label_len),
    ))
}

impl fmt::Debug for Sourced<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.problem, f)
    }
}

impl fmt::Display for Sourced<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.problem, f)
    }
}

impl std::error::Error for Sourced<'_> {}

impl Diagnostic for Sourced<'_> {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.problem.code()
    }
    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.problem.help()
    }
    fn severity(&self) -> Option<miette::Severity> {
        self.problem.severity()
    }
    /// The problem's own label, moved to where its text is in the window.
    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let text = self
            .problem
            .labels()
            .and_then(|mut labels| labels.next())
            .and_then(|l| l.label().map(str::to_owned));
        Some(Box::new(std::iter::once(LabeledSpan::new(
            text,
            self.label.0,
            self.label.1,
        ))))
    }
    fn source_code(&self) -> Option<&dyn SourceCode> {
        Some(&self.source)
    }
}

#[cfg(test)]
mod tests {
    use cameleon::Net;
    use cameleon::cm::{Loader, limits};
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn errors_render_with_the_file_name_and_snippet() {
        let e = Loader::new()
            .file_name("demo.cm")
            .load_str("operators:\n  - id: s\n    type: sourc\n")
            .unwrap_err();
        let r = cm_error(&e, false);
        assert!(r.contains("demo.cm:3:11"), "{r}");
        assert!(r.contains("type: sourc"), "{r}");
        assert!(r.contains("unknown operator type"), "the label: {r}");
        assert!(r.contains("did you mean `source`?"), "{r}");
        assert!(r.contains("cm::unknown_type"), "{r}");
    }

    #[test]
    fn problems_on_very_long_lines_render_cropped() {
        // miette cannot draw a label past column 65 535; the line is cropped instead.
        let text = format!(
            "x: [{}]\noperators: []\n",
            vec!["1"; limits::MAX_NODES + 10].join(",")
        );
        let e = Net::from_cm(&text).unwrap_err();
        assert!(e.problems()[0].snippet.chars().count() < 200);
        let r = cm_error(&e, false);
        assert!(r.contains("…1,1,1"), "{r}");
        assert!(r.lines().all(|l| l.chars().count() < 250), "{r}");
        // The miette report of the error itself leaves such snippets out instead of panicking.
        let mut out = String::new();
        miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
            .render_report(&mut out, &e)
            .unwrap();
        assert!(out.contains("50000"), "{out}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Whatever broken text is loaded, its problems render, with their snippets.
        #[test]
        fn every_error_of_arbitrary_yamlish_text_renders(
            parts in proptest::collection::vec(
                prop_oneof![
                    Just("operators:\n".to_owned()),
                    Just("connections:\n".to_owned()),
                    Just("  - id: a\n".to_owned()),
                    Just("    type: source\n".to_owned()),
                    Just("    params: {value: x}\n".to_owned()),
                    Just("  - from: a.out_data\n    to: b.in_data\n".to_owned()),
                    Just("&x ".to_owned()),
                    Just("*x".to_owned()),
                    Just("<<: *x\n".to_owned()),
                    Just("[{".to_owned()),
                    Just("}]".to_owned()),
                    Just("\t".to_owned()),
                    Just("---\n".to_owned()),
                    Just("!!binary aGk=\n".to_owned()),
                    Just("x: .nan\n".to_owned()),
                    "[ -~]{0,12}",
                    "\\PC{0,6}",
                ],
                0..24,
            )
        ) {
            let text: String = parts.concat();
            if let Err(e) = Net::from_cm(&text) {
                prop_assert!(!e.problems().is_empty());
                prop_assert!(cm_error(&e, false).contains("problem"));
            }
        }
    }
}
