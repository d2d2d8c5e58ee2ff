//! `run --stream`: the partial output of firings (a model's answer as it is written) printed
//! on stderr as it arrives, each line prefixed by the operator instance that writes it, so
//! stdout stays the result (docs/cli.md).

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};

use cameleon::engine::{Cvm, Event};

/// Where the pieces go and where the last one left off.
struct Printer<W> {
    out: W,
    /// The instance whose line is open (its last piece did not end the line).
    open: Option<String>,
}

impl<W: Write> Printer<W> {
    /// Prints `text`, a piece of `op`'s output: a new line with the `[op] ` prefix when
    /// another instance's line is open or a line ended.
    fn piece(&mut self, op: &str, text: &str) {
        let mut rest = text;
        while !rest.is_empty() {
            if self.open.as_deref() != Some(op) {
                self.close();
                let _ = write!(self.out, "[{op}] ");
                self.open = Some(op.to_owned());
            }
            match rest.find('\n') {
                Some(i) => {
                    let _ = writeln!(self.out, "{}", &rest[..i]);
                    self.open = None;
                    rest = &rest[i + 1..];
                }
                None => {
                    let _ = write!(self.out, "{rest}");
                    rest = "";
                }
            }
        }
        let _ = self.out.flush();
    }

    /// Ends the open line, if any.
    fn close(&mut self) {
        if self.open.take().is_some() {
            let _ = writeln!(self.out);
            let _ = self.out.flush();
        }
    }

    /// Ends `op`'s line if it is the open one (its firing finished).
    fn finished(&mut self, op: &str) {
        if self.open.as_deref() == Some(op) {
            self.close();
        }
    }
}

/// Prints `cvm`'s partial output to `out` (the process's stderr for `run --stream`) as it
/// arrives; a firing's line ends when it finishes. Replaces the engine's observer.
pub(crate) fn stream_to(cvm: &mut Cvm, out: impl Write + Send + 'static) {
    let printer = Arc::new(Mutex::new(Printer { out, open: None }));
    let p = Arc::clone(&printer);
    cvm.on_partial(move |e| {
        if let Event::Partial { op, text, .. } = e {
            p.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .piece(op, text);
        }
    });
    cvm.on_event(move |e| {
        let mut p = printer.lock().unwrap_or_else(PoisonError::into_inner);
        match e {
            Event::FiringFinished { op, .. } => p.finished(op),
            Event::StepDiscarded { .. } | Event::Ended { .. } => p.close(),
            _ => {}
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_prefixed_by_their_instance_and_lines_never_mix() {
        let mut p = Printer {
            out: Vec::new(),
            open: None,
        };
        p.piece("ask", "Chameleons");
        p.piece("ask", " are\nlizards");
        p.piece("other", "Hi");
        p.piece("ask", ".");
        p.finished("other");
        p.finished("ask");
        assert_eq!(
            String::from_utf8(p.out).unwrap(),
            "[ask] Chameleons are\n[ask] lizards\n[other] Hi\n[ask] .\n"
        );
    }
}
