//! `cameleon export`: diagrams (`--dot`, `--mermaid`, `--svg`) and the PNML net (`--pnml`).

use super::{ExportArgs, Io, exit, load};
use crate::export;
use crate::net::Net;

pub(super) fn export(a: &ExportArgs, io: &mut Io<'_>) -> std::io::Result<i32> {
    let net = match load(&a.file, false, false, io)? {
        Ok(net) => net,
        Err(code) => return Ok(code),
    };
    let text = if a.dot {
        export::dot(&net)
    } else if a.mermaid {
        export::mermaid(&net)
    } else if a.svg {
        export::svg(&net)
    } else {
        match pnml(&net) {
            Some(t) => t,
            None => {
                writeln!(
                    io.stderr,
                    "error: PNML export (`export --pnml`) is not available in this build yet"
                )?;
                return Ok(exit::ERROR);
            }
        }
    };
    io.stdout.write_all(text.as_bytes())?;
    Ok(exit::OK)
}

/// The PNML place/transition net of SPEC §8 (issue 6, `cameleon::verify`).
fn pnml(_net: &Net) -> Option<String> {
    None
}
